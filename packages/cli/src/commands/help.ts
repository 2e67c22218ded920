import { Args, Help } from "@oclif/core"
import { StoatCommand } from "../base.js"

export default class HelpCommand extends StoatCommand {
  static override summary = "Show help for stoat or one command"
  static override description = "Without a command, list every command; with one (stoat help create, stoat help guest ls), show its usage and flags. -h and --help anywhere do the same."
  static override strict = false
  static override args = { command: Args.string({ description: "the command to explain" }) }
  static override examples = ["stoat help", "stoat help create", "stoat ls -h"]

  async run(): Promise<void> {
    const { argv } = await this.parse(HelpCommand)
    const words = argv as string[]
    const out: string[] = []
    // oclif's help, written to a buffer so that --json can carry it as one `{usage}` result.
    class Captured extends Help {
      protected override log(...lines: string[]): void {
        out.push(...lines)
      }
    }
    try {
      await new Captured(this.config, { hideAliasesFromRoot: true, stripAnsi: this.json }).showHelp(words)
    } catch {
      return this.failWith({ code: "usage", message: `unknown command "${words.join(" ")}"; see stoat help` })
    }
    const usage = `${out.join("\n").trimEnd()}\n`
    this.emit({ usage }, () => process.stdout.write(usage))
  }
}
