import { Args, Flags } from "@oclif/core"
import { deleteSnapshot, listSnapshots, restoreSnapshot, saveSnapshot } from "@stoat/core"
import { StoatCommand } from "../base.js"
import { table } from "../render.js"

export default class Snapshot extends StoatCommand {
  static override summary = "List, save, restore or delete disk snapshots"
  static override description =
    "stoat snapshot <vm> lists; stoat snapshot <vm> <tag> saves (disk-only while running); --restore <tag> rolls a stopped VM back; --delete <tag> removes one."
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
    if ((flags.restore || flags.delete) && !args.tag) return this.failWith({ code: "usage", message: "--restore and --delete need a tag" })
    if (!args.tag) {
      await this.show(listSnapshots, { vm: args.vm }, ({ snapshots }) =>
        this.line(
          snapshots.length === 0
            ? `${args.vm}: no snapshots`
            : table(["TAG", "SIZE", "CREATED", "RAM"], snapshots.map((s) => [s.tag, s.size_display, s.created_display, s.vm_state === "running" ? "no (disk-only)" : "-"]))
        )
      )
      return
    }
    const action = flags.restore ? "restore" : flags.delete ? "delete" : "save"
    const operation = action === "restore" ? restoreSnapshot : action === "delete" ? deleteSnapshot : saveSnapshot
    await this.show(operation, { vm: args.vm, tag: args.tag }, () =>
      this.line(`${action === "save" ? "saved" : action === "restore" ? "restored" : "deleted"} snapshot ${args.tag} of ${args.vm}`)
    )
  }
}
