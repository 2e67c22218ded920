import McpServe from "./serve.js"

/** `stoat mcp`: the same server as `stoat mcp serve`. */
export default class Mcp extends McpServe {
  static override summary = "Serve the Stoat MCP server over stdio (same as stoat mcp serve)"
  static override examples = ["stoat mcp", "stoat mcp --http 127.0.0.1:7777"]
}
