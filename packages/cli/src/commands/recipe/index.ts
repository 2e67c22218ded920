import { UsageCommand } from "../../usage.js"

/** `stoat recipe` alone: the topic's help, so that with --json it too ends in one result. */
export default class Recipe extends UsageCommand {
  static override summary = "Manage recipes"
  static override hidden = true
  static override examples = [
    "stoat recipe list",
    "stoat recipe show devtools",
    "stoat recipe new mytool",
    "stoat recipe refresh",
    "stoat recipe search caddy",
    "stoat recipe add caddy@v1"
  ]

  async run(): Promise<void> {
    await this.parse(Recipe)
    await this.explain(["recipe"])
  }
}
