import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { createServer, type StoatMcp } from "../server.js"

/**
 * Serves one client over stdin/stdout. stdout carries only the protocol: anything else that
 * would print there (console.log in a dependency) is sent to stderr instead. Resolves when the
 * client closes stdin.
 */
export const serveStdio = async (mcp: StoatMcp): Promise<void> => {
  console.log = console.error
  console.info = console.error
  const server = createServer(mcp)
  const transport = new StdioServerTransport()
  const closed = new Promise<void>((resolve) => {
    server.onclose = () => resolve()
    process.stdin.once("end", () => resolve())
  })
  // A malformed line is reported to stderr and skipped; the server keeps answering.
  server.onerror = (error) => process.stderr.write(`stoat mcp: ${error.message}\n`)
  await server.connect(transport)
  await closed
  // The client hung up after sending its last requests: let those answer before closing.
  while (mcp.pending.size > 0) await Promise.allSettled([...mcp.pending])
  await new Promise((resolve) => setImmediate(resolve))
  await server.close().catch(() => undefined)
}
