import { StoatCommand } from "../../base.js"

/** `stoat mcp down`: stops this directory's background server. */
export default class McpDown extends StoatCommand {
  static override summary = "Stop this directory's background MCP server"

  async run(): Promise<void> {
    await this.parse(McpDown)
    const admin = await import("@stoat/mcp/admin")
    try {
      const record = await admin.down()
      this.emit(record, () => this.line(`stoat: stopped the server for ${record.dir} (pid ${record.pid})`))
    } catch (error) {
      if (error instanceof admin.AdminRefused) this.failWith({ code: error.code, message: error.message })
      throw error
    }
  }
}
