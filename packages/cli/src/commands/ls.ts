import { Flags } from "@oclif/core"
import { listVms, projectVms } from "@stoat/core"
import { StoatCommand } from "../base.js"
import { renderVmList } from "../views/ls.js"

export default class Ls extends StoatCommand {
  static override summary = "List VMs"
  static override description =
    "List every VM with its mode, state, size and SSH port. Broken VMs are listed with the reason."
  static override aliases = ["list"]
  static override flags = {
    project: Flags.boolean({ description: "Only the VMs declared by ./stoat.toml." })
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(Ls)
    const { vms } = await this.call(flags.project ? projectVms : listVms, {})
    this.emit({ vms }, () => this.line(renderVmList(vms)))
  }
}
