/** The toolkit's per-user config.db: configured defaults, OAuth profiles and MCP profiles. */
export * from "./db.js"
export * from "./config-store.js"
export * from "./mcp-profiles.js"
export * from "./oauth-profiles.js"
export * from "./layer.js"
