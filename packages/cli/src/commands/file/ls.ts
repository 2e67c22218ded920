import { Args } from "@oclif/core"
import { listDirOp } from "@stoat/core"
import { StoatCommand } from "../../base.js"
import { humanSize } from "../../render.js"
import { table } from "../../render.js"

export default class FileLs extends StoatCommand {
  static override summary = "List a folder of a VM"
  static override description =
    "List a folder of a running VM (hidden entries included, symlinks not followed), at most 2000 entries."
  static override args = {
    vm: Args.string({ description: "VM name", required: true }),
    path: Args.string({ description: "absolute folder path in the guest", required: true })
  }
  static override examples = ["stoat file ls dev /etc", "stoat file ls --json dev /var/log"]

  async run(): Promise<void> {
    const { args } = await this.parse(FileLs)
    const listing = await this.call(listDirOp, { vm: args.vm, path: args.path })
    this.emit(listing, () => {
      const rows = listing.entries.map((entry) => [
        entry.type,
        entry.mode,
        entry.owner,
        humanSize(entry.size),
        entry.mtime,
        JSON.stringify(entry.name).slice(1, -1)
      ])
      this.line(
        rows.length === 0 ? `${args.path}: empty` : table(["TYPE", "MODE", "OWNER", "SIZE", "MODIFIED", "NAME"], rows)
      )
      if (listing.truncated)
        process.stderr.write(
          `stoat: file: only the first ${listing.entries.length} entries of ${args.path} are listed\n`
        )
    })
  }
}
