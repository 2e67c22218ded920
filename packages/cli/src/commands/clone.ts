import { Args } from "@oclif/core"
import { cloneVm } from "@stoat/core"
import { StoatCommand } from "../base.js"

export default class Clone extends StoatCommand {
  static override summary = "Clone a stopped VM"
  static override description =
    "Make a new VM from a stopped one with a copy-on-write disk overlay, a fresh SSH port and no port forwards."
  static override args = {
    source: Args.string({ description: "VM to copy", required: true }),
    name: Args.string({ description: "new VM name", required: true })
  }

  async run(): Promise<void> {
    const { args } = await this.parse(Clone)
    const result = await this.call(cloneVm, { source: args.source, name: args.name })
    this.emit(result, () => {
      this.line(`cloned ${result.source} to ${result.vm.name} (ssh port ${result.vm.ssh_port})`)
      this.line("note: port forwards were not copied")
    })
  }
}
