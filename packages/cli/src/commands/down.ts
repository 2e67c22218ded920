import { Args } from "@oclif/core"
import { projectDown, stopVm } from "@stoat/core"
import { StoatCommand } from "../base.js"

export default class Down extends StoatCommand {
  static override summary = "Stop a VM, or this project's VMs"
  static override description =
    "Power a VM down gracefully; returns once QEMU has exited (SIGKILL after the grace period). A stopped VM is fine (exit 0)."
  static override aliases = ["stop"]
  static override args = {
    vm: Args.string({ description: "VM name or project key; none: every VM ./stoat.toml declares" })
  }

  async run(): Promise<void> {
    const { args } = await this.parse(Down)
    if (args.vm === undefined) return this.runProject(projectDown, {}, "stopped")
    await this.show(stopVm, { vm: args.vm }, (vm) => this.line(`${vm.name} is stopped`))
  }
}
