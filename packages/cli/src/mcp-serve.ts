import { createRequire } from "node:module"
import type { ServeOptions } from "@stoat/mcp/bundle"

/** The one way `stoat mcp` declines to start: its reason on stderr (stdout is the protocol's), exit 2. */
export const refuseMcp = (message: string): never => {
  process.stderr.write(`stoat: mcp: ${message}\n`)
  process.exit(2)
}

/**
 * Serves until the transport ends, or refuses to start (see `refuseMcp`). The bundle is loaded
 * only here, so `stoat --version` and `stoat ls` never pay for the MCP stack; the specifier is
 * computed so the CLI's build leaves the server's own bundle (with the SDK in it) to Node.
 */
export const serveMcp = async (options: ServeOptions): Promise<void> => {
  const specifier = ["@stoat", "mcp", "bundle"].join("/")
  const { serve, ServeRefused } = createRequire(import.meta.url)(specifier) as typeof import("@stoat/mcp/bundle")
  try {
    await serve(options)
  } catch (error) {
    if (error instanceof ServeRefused) refuseMcp(error.message)
    throw error
  }
}
