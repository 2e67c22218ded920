import type { ServeOptions } from "@stoat/mcp/bundle"

/**
 * Serves until the transport ends; returns the refusal message when the server will not start.
 * The bundle is loaded only here, so `stoat --version` and `stoat ls` never pay for the MCP
 * stack; the specifier is computed so the CLI's build leaves the server's own bundle (with the
 * SDK in it) to Node.
 */
export const serveMcp = async (options: ServeOptions): Promise<string | undefined> => {
  const specifier = ["@stoat", "mcp", "bundle"].join("/")
  const { serve, ServeRefused } = (await import(/* @vite-ignore */ specifier)) as typeof import("@stoat/mcp/bundle")
  try {
    await serve(options)
    return undefined
  } catch (error) {
    if (error instanceof ServeRefused) return error.message
    throw error
  }
}
