import { Help } from "@oclif/core"
import { StoatCommand } from "./base.js"

/** A command that answers with help text: printed, or with --json one `{usage}` result. */
export abstract class UsageCommand extends StoatCommand {
  /** Prints the help of the command or topic these words name (none: every command). */
  protected async explain(words: string[]): Promise<void> {
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

/** The command of a topic's bare name (`stoat file`): its help, so that with --json it too ends in one result. */
export const topicHelp = (topic: string, summary: string, examples: ReadonlyArray<string>) =>
  class TopicHelp extends UsageCommand {
    static override summary = summary
    static override hidden = true
    static override examples = [...examples]

    async run(): Promise<void> {
      await this.parse(TopicHelp)
      await this.explain([topic])
    }
  }
