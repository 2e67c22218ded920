import { Args } from "@oclif/core"
import { deleteSnapshot } from "@stoat/core"
import { StoatCommand } from "../../base.js"

export default class SnapshotRm extends StoatCommand {
  static override summary = "Delete a VM's disk snapshot"
  static override aliases = ["snapshot delete"]
  static override args = {
    vm: Args.string({ description: "VM name", required: true }),
    tag: Args.string({ description: "snapshot tag", required: true })
  }
  static override examples = ["stoat snapshot rm dev before-upgrade"]

  async run(): Promise<void> {
    const { args } = await this.parse(SnapshotRm)
    await this.show(deleteSnapshot, { vm: args.vm, tag: args.tag }, () =>
      this.line(`deleted snapshot ${args.tag} of ${args.vm}`)
    )
  }
}
