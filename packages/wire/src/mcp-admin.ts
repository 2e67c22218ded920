import { Schema } from "effect"
import { Int } from "./primitives.js"

export const McpClientName = Schema.Literal("claude-code", "claude-desktop", "cursor", "vscode")
export const McpInstall = Schema.Struct({ client: Schema.String, path: Schema.optional(Schema.String), json: Schema.String })
export const McpClient = Schema.Struct({
  client: Schema.String,
  path: Schema.optional(Schema.String),
  installed: Schema.Boolean,
  command: Schema.optional(Schema.String),
  current: Schema.Boolean
})
export const McpDoctor = Schema.Struct({
  contract: Int,
  version: Schema.String,
  transport: Schema.String,
  binary: Schema.String,
  clients: Schema.Array(McpClient)
})
export const McpDaemon = Schema.Struct({
  dir: Schema.String,
  addr: Schema.String,
  pid: Int,
  started: Schema.String,
  log: Schema.optional(Schema.String)
})
export const McpDaemonList = Schema.Struct({ servers: Schema.Array(McpDaemon) })
