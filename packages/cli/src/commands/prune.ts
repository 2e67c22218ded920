import { Flags } from "@oclif/core"
import { prune } from "@stoat/core"
import { StoatCommand } from "../base.js"

export default class Prune extends StoatCommand {
  static override summary = "Find and remove stale files"
  static override description =
    "List partial downloads untouched for 2 minutes (always), broken VMs (--broken) and images no VM uses (--images). Nothing is removed without --apply."
  static override flags = {
    apply: Flags.boolean({ description: "remove what is listed" }),
    broken: Flags.boolean({ description: "include broken VMs (never running ones)" }),
    images: Flags.boolean({ description: "include images no VM uses" })
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(Prune)
    const result = await this.call(prune, { apply: flags.apply, broken: flags.broken, images: flags.images })
    this.emit(result, () => {
      if (result.items.length === 0) return this.line("nothing to prune")
      for (const item of result.items)
        this.line(`${result.dry_run ? "would remove" : "removed"} ${item.class}: ${item.path}`)
      if (result.dry_run) this.line("dry run; pass --apply to remove")
    })
  }
}
