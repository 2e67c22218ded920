import { Schema } from "effect"
import { Int } from "./primitives.js"

export const McpInstall = Schema.Struct({
  client: Schema.String,
  path: Schema.optional(Schema.String),
  json: Schema.String
})
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
