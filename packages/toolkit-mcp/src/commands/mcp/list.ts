import { listProfiles, resolveProfile } from "../../mcp/profiles.js"
import { ToolkitCommand } from "../../runtime/base.js"

export default class McpList extends ToolkitCommand {
  static override summary = "List MCP profiles"
  static override description =
    "Lists the built-in default profile (unless a profile named default is saved) and every saved profile in name order, with entries, host and port. Entries that no longer resolve are marked (unresolved)."

  async run(): Promise<void> {
    await this.options(McpList)
    const blocks = (await listProfiles(this.io.configDb)).map(({ profile, builtIn }) => {
      const unresolved = new Set(resolveProfile(this.config, profile.include).unresolved)
      const entries = profile.include.map((entry) => (unresolved.has(entry) ? `${entry} (unresolved)` : entry))
      return [
        `${profile.name}${builtIn ? " (built-in)" : ""}`,
        `  include: ${entries.join(", ")}`,
        `  host: ${profile.host ?? "(default)"}`,
        `  port: ${profile.port ?? "(default)"}`
      ].join("\n")
    })
    this.line(blocks.join("\n\n"))
  }
}
