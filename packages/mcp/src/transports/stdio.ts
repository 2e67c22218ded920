import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { createServer, type StoatMcp } from "../server.js"

/** The first line of an SDK error, capped: a rejected message's full schema report helps no one. */
const oneLine = (message: string): string => {
  const first = message.split("\n")[0] ?? ""
  return first.length > 200 ? `${first.slice(0, 200)}…` : first
}

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
  // Told to stop: closing the server aborts the calls in flight, whose operations are
  // interrupted and release what they hold before the process ends.
  const stop = () => void server.close().catch(() => undefined)
  process.once("SIGTERM", stop)
  process.once("SIGINT", stop)
  // A malformed line is reported to stderr and skipped; the server keeps answering.
  server.onerror = (error) => process.stderr.write(`stoat mcp: ${oneLine(error.message)}\n`)
  await server.connect(transport)
  await closed
  // The client hung up after sending its last requests: let those answer before closing.
  while (mcp.pending.size > 0) await Promise.allSettled([...mcp.pending])
  await new Promise((resolve) => setImmediate(resolve))
  await server.close().catch(() => undefined)
}
