import { StoatCommand } from "../../base.js"

/** `stoat mcp doctor`: contract, transport, executable, and each client's stoat entry (stale when it launches another stoat). */
export default class McpDoctor extends StoatCommand {
  static override summary = "Check the MCP contract, transport, executable and client entries"
  static override description =
    "Reports the contract version, the transport, this Stoat executable and the stoat entry of the four clients Stoat writes. An entry whose command is a different executable is stale: run stoat mcp install again. Exits 1 when an entry is stale."

  async run(): Promise<void> {
    await this.parse(McpDoctor)
    const { doctor } = await import("@stoat/mcp/admin")
    const report = await doctor()
    this.emit(report, () => {
      this.line(`contract  v${report.contract} (stoat ${report.version}), transport ${report.transport}`)
      this.line(`binary    ${report.binary}`)
      for (const client of report.clients) {
        const state = !client.installed
          ? "not installed"
          : client.current
            ? "ok"
            : `stale: launches ${client.command ?? "(no command)"}`
        this.line(`${client.client.padEnd(15)} ${state}${client.path ? `  (${client.path})` : ""}`)
      }
    })
    // Scripts and CI check the exit status: a stale entry launches a Stoat that is not this one.
    if (report.clients.some((client) => client.installed && !client.current)) this.exit(1)
  }
}
