import { Flags } from "@oclif/core"
import { StoatCommand } from "../../base.js"

/** `stoat mcp up`: a detached HTTP server for this directory, answering before the prompt returns. */
export default class McpUp extends StoatCommand {
  static override summary = "Start a background MCP server over HTTP for this directory"
  static override description =
    "Starts a detached stoat mcp serve --http for the current directory (default 127.0.0.1:7777) and waits until the address answers. Records pid, address and directory under $STOAT_HOME/mcp/. One server per directory; nothing restarts it after a reboot."
  static override examples = ["stoat mcp up", "stoat mcp up --http 127.0.0.1:7801"]
  static override flags = {
    http: Flags.string({ description: "Loopback host:port to serve (default 127.0.0.1:7777)" })
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(McpUp)
    const admin = await import("@stoat/mcp/admin")
    try {
      const record = await admin.up(flags.http ?? admin.DEFAULT_ADDRESS)
      this.emit(record, () =>
        this.line(`stoat: serving ${record.dir} at http://${record.addr}/mcp (pid ${record.pid}, log ${record.log})`)
      )
    } catch (error) {
      if (error instanceof admin.AdminRefused) this.failWith({ code: error.code, message: error.message })
      throw error
    }
  }
}
