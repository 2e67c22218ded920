/** The build version, reported by `stoat version` and the MCP server's serverInfo. */
export const STOAT_VERSION = "0.1.0"
