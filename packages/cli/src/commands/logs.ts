import { readFile, stat } from "node:fs/promises"
import { Args, Flags } from "@oclif/core"
import { layoutOf, logFile, resolveDataRoot, stoatLog, vmLogs } from "@stoat/core"
import { StoatCommand } from "../base.js"

export default class Logs extends StoatCommand {
  static override summary = "Show a VM's console or apply log, or stoat's own log"
  static override description =
    "Print the last lines of a VM's serial console (default) or last recipe apply log; with no VM, the tail of stoat's own log (logs/stoat.log). -f follows it."
  static override args = { vm: Args.string({ description: "VM name (none: stoat.log)" }) }
  static override flags = {
    lines: Flags.integer({ char: "n", aliases: ["n"], description: "lines to show (0 = all)", default: 50 }),
    follow: Flags.boolean({ char: "f", description: "keep printing new lines" }),
    which: Flags.string({ options: ["console", "apply"], description: "which log of the VM (default console)" })
  }
  static override examples = ["stoat logs", "stoat logs dev", "stoat logs dev --which apply -f"]

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Logs)
    if (flags.follow && this.json) return this.failWith({ code: "usage", message: "-f cannot be used with --json" })
    if (args.vm === undefined && flags.which !== undefined) return this.failWith({ code: "usage", message: "--which needs a VM: stoat logs <vm> --which apply" })
    const n = flags.lines <= 0 ? 0 : Math.min(flags.lines, 2000)
    const which = (flags.which ?? "console") as "console" | "apply"
    const result = args.vm === undefined ? await this.call(stoatLog, { n }) : await this.call(vmLogs, { vm: args.vm, which, n })
    this.emit(result, () => {
      for (const line of result.lines) this.line(line)
    })
    if (!flags.follow) return
    // Follow: print what is appended; a truncated file is re-read from the top.
    const file = logFile(layoutOf(resolveDataRoot()), args.vm, which)
    let offset = (await stat(file).catch(() => undefined))?.size ?? 0
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, 300))
      const size = (await stat(file).catch(() => undefined))?.size ?? 0
      if (size < offset) offset = 0
      if (size > offset) {
        const text = await readFile(file)
        process.stdout.write(text.subarray(offset, size))
        offset = size
      }
    }
  }
}
