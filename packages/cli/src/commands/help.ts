import { Args } from "@oclif/core"
import { UsageCommand } from "../usage.js"

export default class HelpCommand extends UsageCommand {
  static override summary = "Show help for stoat or one command"
  static override description =
    "Without a command, list every command; with one (stoat help create, stoat help guest ls), show its usage and flags. -h and --help anywhere do the same."
  static override strict = false
  static override args = { command: Args.string({ description: "the command to explain" }) }
  static override examples = ["stoat help", "stoat help create", "stoat ls -h"]

  async run(): Promise<void> {
    const { argv } = await this.parse(HelpCommand)
    await this.explain(argv as string[])
  }
}
