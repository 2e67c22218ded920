import { Args, Flags } from "@oclif/core"
import { StoatCommand } from "../../base.js"

/** `stoat mcp uninstall <client>`: removes the stoat entry from the client's config, keeping the rest of the file. */
export default class McpUninstall extends StoatCommand {
  static override summary = "Remove the Stoat entry from an MCP client's config"
  static override description =
    "Removes the stoat entry of claude-code, claude-desktop, cursor or vscode and nothing else: the other entries, keys and (in VS Code's JSONC) comments stay. No entry: nothing is written."
  static override examples = ["stoat mcp uninstall claude-code", "stoat mcp uninstall vscode --project"]
  static override args = {
    client: Args.string({
      required: true,
      options: ["claude-code", "claude-desktop", "cursor", "vscode"],
      description: "The MCP client"
    })
  }
  static override flags = {
    project: Flags.boolean({
      description: "Edit this directory's project entry (claude-code: .mcp.json, vscode: .vscode/mcp.json)"
    })
  }

  async run(): Promise<void> {
    const { args, flags } = await this.parse(McpUninstall)
    const admin = await import("@stoat/mcp/admin")
    try {
      const result = await admin.uninstall(args.client as (typeof admin.CLIENTS)[number], { project: flags.project })
      this.emit(result, () =>
        this.line(
          result.removed
            ? `stoat: removed the stoat entry from ${result.path}`
            : `stoat: ${result.path} has no stoat entry`
        )
      )
    } catch (error) {
      if (error instanceof admin.AdminRefused) this.failWith({ code: error.code, message: error.message })
      throw error
    }
  }
}
