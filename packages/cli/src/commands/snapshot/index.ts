import { Args, Flags } from "@oclif/core"
import { deleteSnapshot, listSnapshots, restoreSnapshot, saveSnapshot } from "@stoat/core"
import { StoatCommand } from "../../base.js"
import { renderSnapshots } from "./ls.js"

export default class Snapshot extends StoatCommand {
  static override summary = "List, save, restore or delete disk snapshots"
  static override description =
    "stoat snapshot <vm> <tag> saves (disk-only while running); --restore <tag> rolls a stopped VM back; --delete <tag> removes one. stoat snapshot ls <vm> and stoat snapshot rm <vm> <tag> list and delete, as stoat checkpoint ls/rm do (stoat snapshot <vm> alone lists too)."
  static override args = {
    vm: Args.string({ description: "VM name", required: true }),
    tag: Args.string({ description: "snapshot tag" })
  }
  static override flags = {
    restore: Flags.boolean({ description: "restore the tag (VM must be stopped)", exclusive: ["delete"] }),
    delete: Flags.boolean({ description: "delete the tag", exclusive: ["restore"] })
  }

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Snapshot)
    if ((flags.restore || flags.delete) && !args.tag)
      return this.failWith({ code: "usage", message: "--restore and --delete need a tag" })
    if (!args.tag) {
      await this.show(listSnapshots, { vm: args.vm }, ({ snapshots }) => this.line(renderSnapshots(args.vm, snapshots)))
      return
    }
    const action = flags.restore ? "restore" : flags.delete ? "delete" : "save"
    const operation = action === "restore" ? restoreSnapshot : action === "delete" ? deleteSnapshot : saveSnapshot
    await this.show(operation, { vm: args.vm, tag: args.tag }, () =>
      this.line(
        `${action === "save" ? "saved" : action === "restore" ? "restored" : "deleted"} snapshot ${args.tag} of ${args.vm}`
      )
    )
  }
}
