import { Args } from "@oclif/core"
import { getVm } from "@stoat/core"
import { StoatCommand } from "../base.js"
import { mib } from "../render.js"

export default class Get extends StoatCommand {
  static override summary = "Show one VM"
  static override description = "Show a VM's configuration, state, recipes and forwards as key: value lines."
  static override args = { vm: Args.string({ description: "VM name", required: true }) }

  async run(): Promise<void> {
    const { args } = await this.parse(Get)
    await this.show(getVm, { vm: args.vm }, (vm) => {
      const lines: Array<[string, string]> = [
        ["name", vm.name],
        ["os", vm.os],
        ["mode", vm.mode],
        ["provider", vm.provider ?? "qemu"],
        ["backend", vm.backend],
        ["state", vm.state],
        ["cpus", String(vm.cpus)],
        ["ram", mib(vm.ram_mb)],
        ["disk", vm.disk],
        ["share", vm.share],
        ["ssh port", String(vm.ssh_port)],
        ["ssh user", vm.ssh_user],
        ["agent access", vm.agent_access],
        ["recipes", vm.recipes.join(", ")],
        ["forwards", vm.forwards.map((forward) => `${forward.host_port}:${forward.guest_port}`).join(", ")],
        ["display", vm.display],
        ["shared dir", vm.shared_dir],
        ["health", vm.health]
      ]
      if (vm.error) lines.push(["error", vm.error])
      for (const [key, value] of lines) this.line(`${key}: ${value}`)
    })
  }
}
