import { Args, Flags } from "@oclif/core"
import { Effect, Stream } from "effect"
import { followLog, stoatLog, vmLogs } from "@stoat/core"
import { StoatCommand } from "../base.js"
import { disposeRuntime, runLive } from "../runtime.js"

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
    if (args.vm === undefined && flags.which !== undefined)
      return this.failWith({ code: "usage", message: "--which needs a VM: stoat logs <vm> --which apply" })
    const n = flags.lines <= 0 ? 0 : Math.min(flags.lines, 2000)
    const which = (flags.which ?? "console") as "console" | "apply"
    const result =
      args.vm === undefined ? await this.call(stoatLog, { n }) : await this.call(vmLogs, { vm: args.vm, which, n })
    this.emit(result, () => {
      for (const line of result.lines) this.line(line)
    })
    if (!flags.follow) return
    // The tail named the VM (a project key resolved to its name); what is appended follows it until Ctrl-C.
    const followed = await runLive(
      Stream.runForEach(followLog({ vm: result.vm, which }), (bytes) => Effect.sync(() => process.stdout.write(bytes)))
    )
    await disposeRuntime()
    // Only Ctrl-C ends it: then the exit status a shell expects of an interrupted command.
    if (!followed.ok && followed.error.code !== "canceled") return this.failWith(followed.error)
    this.exit(130)
  }
}
