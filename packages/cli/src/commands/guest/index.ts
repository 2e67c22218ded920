import { UsageCommand } from "../../usage.js"

/** `stoat guest` alone: the topic's help, so that with --json it too ends in one result. */
export default class Guest extends UsageCommand {
  static override summary = "Inspect guest OS definitions"
  static override hidden = true
  static override examples = ["stoat guest ls", "stoat guest show debian"]

  async run(): Promise<void> {
    await this.parse(Guest)
    await this.explain(["guest"])
  }
}
