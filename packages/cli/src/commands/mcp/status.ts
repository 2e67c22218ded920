import { StoatCommand } from "../../base.js"

/** `stoat mcp status`: every project's background server that still answers. */
export default class McpStatus extends StoatCommand {
  static override summary = "List background MCP servers"
  static override description =
    "Lists every project's background server. A record whose pid is gone or whose address no longer answers is dropped."

  async run(): Promise<void> {
    await this.parse(McpStatus)
    const { status } = await import("@stoat/mcp/admin")
    const list = await status()
    this.emit(list, () => {
      if (list.servers.length === 0) this.line("no MCP servers running")
      for (const server of list.servers)
        this.line(`${server.addr.padEnd(22)} pid ${String(server.pid).padEnd(8)} ${server.dir}`)
    })
  }
}
