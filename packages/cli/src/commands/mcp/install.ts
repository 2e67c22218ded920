import { Args, Flags } from "@oclif/core"
import { StoatCommand } from "../../base.js"

/** `stoat mcp install <client>`: writes the stdio entry into the client's JSON config, keeping the other entries. */
export default class McpInstall extends StoatCommand {
  static override summary = "Write the Stoat entry into an MCP client's config"
  static override description =
    "Writes {command: <absolute stoat>, args: [mcp], cwd: <this directory>} as the stoat entry of claude-code, claude-desktop, cursor or vscode, replacing only that entry, atomically. The working directory decides which stoat.toml the server reads."
  static override examples = [
    "stoat mcp install claude-code",
    "stoat mcp install vscode --project",
    "stoat mcp install cursor --print"
  ]
  static override args = {
    client: Args.string({
      required: true,
      options: ["claude-code", "claude-desktop", "cursor", "vscode"],
      description: "The MCP client"
    })
  }
  static override flags = {
    project: Flags.boolean({
      description: "Write this directory's project entry (claude-code: .mcp.json, vscode: .vscode/mcp.json)"
    }),
    print: Flags.boolean({ description: "Print the entry instead of writing a file" })
  }

  async run(): Promise<void> {
    const { args, flags } = await this.parse(McpInstall)
    const admin = await import("@stoat/mcp/admin")
    try {
      const result = await admin.install(args.client as (typeof admin.CLIENTS)[number], {
        project: flags.project,
        print: flags.print
      })
      this.emit(result, () => this.line(flags.print ? result.json : `stoat: wrote the stoat entry to ${result.path}`))
    } catch (error) {
      if (error instanceof admin.AdminRefused) this.failWith({ code: error.code, message: error.message })
      throw error
    }
  }
}
