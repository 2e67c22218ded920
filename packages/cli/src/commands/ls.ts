import { Flags } from "@oclif/core"
import { listVms } from "@stoat/core"
import { StoatCommand } from "../base.js"
import { mib, stateCell, table } from "../render.js"

export default class Ls extends StoatCommand {
  static override summary = "List VMs"
  static override description = "List every VM with its mode, state, size and SSH port. Broken VMs are listed with the reason."
  static override aliases = ["list"]
  static override flags = {
    project: Flags.boolean({ description: "Only the VMs declared by ./stoat.toml." })
  }

  async run(): Promise<void> {
    await this.parse(Ls)
    const { vms } = await this.call(listVms, {})
    this.emit({ vms }, () => {
      if (vms.length === 0) {
        this.line("no VMs; create one with: stoat create <name> --image tiny")
        return
      }
      const rows = vms.map((vm) =>
        vm.state === "broken"
          ? [vm.name, "-", stateCell("broken"), "local", "-", "-", vm.ssh_port ? String(vm.ssh_port) : "-"]
          : [vm.name, vm.mode, stateCell(vm.state), "local", String(vm.cpus), mib(vm.ram_mb), String(vm.ssh_port)]
      )
      this.line(table(["NAME", "MODE", "STATE", "WHERE", "CPUS", "RAM", "SSH"], rows))
      for (const vm of vms) if (vm.state === "broken") this.line(`${vm.name}: broken: ${vm.error ?? "unknown reason"}`)
    })
  }
}
