import { Args } from "@oclif/core"
import { Effect } from "effect"
import { Profiles } from "../../store/index.js"
import { withStore } from "../../runtime/store.js"
import { DEFAULT_PROFILE } from "../../mcp/profiles.js"
import { ToolkitCommand } from "../../runtime/base.js"

export default class McpDelete extends ToolkitCommand {
  static override toolKind = "delete" as const
  static override summary = "Delete a saved MCP profile"
  static override description =
    "Deletes a saved profile. Deleting the saved 'default' profile brings back the built-in default."
  static override args = {
    name: Args.string({ description: "Profile name", required: true, ignoreStdin: true })
  }

  async run(): Promise<void> {
    const { args } = await this.options(McpDelete)
    const removed = await withStore(
      this.io.configDb,
      Effect.flatMap(Profiles, (profiles) => profiles.remove(args.name))
    )
    if (!removed)
      this.fail(
        args.name === DEFAULT_PROFILE
          ? `MCP profile '${DEFAULT_PROFILE}' is not saved; the built-in default is already in use`
          : `MCP profile '${args.name}' does not exist`
      )
    this.line(`Deleted MCP profile '${args.name}'`)
    if (args.name === DEFAULT_PROFILE) this.line("Built-in default profile restored.")
  }
}
