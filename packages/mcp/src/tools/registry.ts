import { JSONSchema, type Schema, SchemaAST } from "effect"
import { catalog as fullCatalog, hostOnlyFields, type Operation } from "@stoat/core"
import { budgetNote, DEFAULT_CALL_BUDGET_SECONDS } from "./budget.js"

/** A JSON Schema object as the MCP wire carries it. */
export type JsonSchemaObject = { readonly type: "object"; readonly [key: string]: unknown }

export interface ToolDefinition {
  readonly name: string
  readonly title: string
  readonly description: string
  readonly inputSchema: JsonSchemaObject
  readonly outputSchema?: JsonSchemaObject
  readonly annotations: {
    readonly title: string
    readonly readOnlyHint: boolean
    readonly destructiveHint: boolean
    readonly idempotentHint: boolean
    readonly openWorldHint: boolean
  }
  /** Set on the tools a task-capable client may run as MCP tasks. */
  readonly execution?: { readonly taskSupport: "optional" }
}

export interface ToolEntry {
  readonly operation: Operation
  readonly definition: ToolDefinition
  /** Has timeout_seconds, which the call budget caps. */
  readonly timeoutBounded: boolean
  /** The argument the MCP layer adds for delete safety (not part of the operation's input). */
  readonly confirmable: boolean
  /** Input fields only the CLI may set; to an agent they are unknown arguments. */
  readonly hostOnly: ReadonlyArray<string>
}

/** Effect titles ("maxLength(64)", "int") describe the schema's construction, not the field; the wire drops them. */
const clean = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(clean)
  if (typeof value !== "object" || value === null) return value
  const out: Record<string, unknown> = {}
  for (const [key, inner] of Object.entries(value)) {
    if (key === "title" || key === "$schema" || key === "$id") continue
    out[key] = key === "properties" || key === "$defs" ? Object.fromEntries(Object.entries(inner as object).map(([k, v]) => [k, clean(v)])) : clean(inner)
  }
  return out
}

const toJsonSchema = (schema: Schema.Schema<any, any>): Record<string, unknown> => clean(JSONSchema.make(schema)) as Record<string, unknown>

/** Could this operation ever need a confirmation word? (Destructive closed-world class, or its own rule.) */
const confirmable = (operation: Operation): boolean =>
  operation.confirm !== undefined || (operation.annotations.destructiveHint && !operation.annotations.openWorldHint)

const LEVEL_NOTE = (operation: Operation): string => {
  if (typeof operation.access === "function") return " Needs the VM's agent_access level for the given input (see the argument descriptions)."
  return operation.access ? ` Needs agent_access = ${operation.access} (or higher) on the VM.` : ""
}

/** The tool's input schema: the operation's closed object without its host-only fields, plus `confirm` for deletions. */
export const inputSchemaOf = (operation: Operation): JsonSchemaObject => {
  const schema = toJsonSchema(operation.input)
  const hostOnly = new Set(hostOnlyFields(operation.input))
  const properties = Object.fromEntries(Object.entries((schema["properties"] ?? {}) as Record<string, unknown>).filter(([key]) => !hostOnly.has(key)))
  const required = ((schema["required"] ?? []) as string[]).filter((key) => !hostOnly.has(key))
  if (schema["type"] !== "object" || schema["additionalProperties"] !== false) {
    throw new Error(`operation ${operation.key}: input schema is not a closed object`)
  }
  if (confirmable(operation)) {
    properties["confirm"] = {
      type: "string",
      description:
        'Confirms a deletion: the VM\'s name (delete_checkpoint: "<vm>@<checkpoint>"; prune with apply=true: "prune"). Without it a client with elicitation is asked; any other gets confirmation_required.'
    }
  }
  return { ...schema, type: "object", properties, required, additionalProperties: false }
}

export const outputSchemaOf = (operation: Operation): JsonSchemaObject => {
  const schema = toJsonSchema(operation.output)
  if (schema["type"] !== "object") throw new Error(`operation ${operation.key}: output schema is not an object`)
  return schema as JsonSchemaObject
}

/** Whether the operation's input has timeout_seconds, which the call budget caps. */
const hasTimeout = (operation: Operation): boolean =>
  SchemaAST.getPropertySignatures(operation.input.ast).some((signature) => signature.name === "timeout_seconds")

/** What a tool that may run long says about answering within the call budget. */
const BUDGET_NOTE = (operation: Operation, budgetSeconds: number): string =>
  operation.longRunning === true || hasTimeout(operation) ? budgetNote(budgetSeconds, hasTimeout(operation)) : ""

export const definitionOf = (operation: Operation, budgetSeconds: number = DEFAULT_CALL_BUDGET_SECONDS): ToolDefinition => ({
  name: operation.tool,
  title: operation.title,
  description: operation.description + LEVEL_NOTE(operation) + BUDGET_NOTE(operation, budgetSeconds),
  inputSchema: inputSchemaOf(operation),
  outputSchema: outputSchemaOf(operation),
  annotations: {
    title: operation.title,
    readOnlyHint: operation.annotations.readOnlyHint,
    destructiveHint: operation.annotations.destructiveHint,
    idempotentHint: operation.annotations.idempotentHint,
    openWorldHint: operation.annotations.openWorldHint
  },
  ...(operation.longRunning ? { execution: { taskSupport: "optional" as const } } : {})
})

/** One tool per catalog entry the MCP server exposes, in catalog order. */
export const buildRegistry = (catalog: ReadonlyArray<Operation> = fullCatalog, budgetSeconds: number = DEFAULT_CALL_BUDGET_SECONDS): ReadonlyMap<string, ToolEntry> => {
  const entries = new Map<string, ToolEntry>()
  for (const operation of catalog) {
    if (!operation.expose.mcp) continue
    if (entries.has(operation.tool)) throw new Error(`two operations claim the tool name ${operation.tool}`)
    // JSON Schema generation for every tool is most of a server's start: done on first use, so
    // `initialize` is answered before it (the server warms them up right after).
    let definition: ToolDefinition | undefined
    let hostOnly: ReadonlyArray<string> | undefined
    let timeoutBounded: boolean | undefined
    entries.set(operation.tool, {
      operation,
      get definition() {
        return (definition ??= definitionOf(operation, budgetSeconds))
      },
      get timeoutBounded() {
        return (timeoutBounded ??= hasTimeout(operation))
      },
      confirmable: confirmable(operation),
      get hostOnly() {
        return (hostOnly ??= hostOnlyFields(operation.input))
      }
    })
  }
  return entries
}
