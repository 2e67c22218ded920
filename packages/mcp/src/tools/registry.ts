import { SchemaAST } from "effect"
import { catalog as fullCatalog, hostOnlyFields, type Operation } from "@stoat/core"
import { budgetNote, DEFAULT_CALL_BUDGET_SECONDS } from "./budget.js"
import { compactInputSchema, compactOutputSchema } from "./json-schema.js"

/** A JSON Schema object as the MCP wire carries it. */
export type JsonSchemaObject = { readonly type: "object"; readonly [key: string]: unknown }

export interface ToolDefinition {
  readonly name: string
  readonly description: string
  readonly inputSchema: JsonSchemaObject
  readonly outputSchema?: JsonSchemaObject
  readonly annotations: {
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
  /**
   * May run past the call budget: a command, or a query that waits on a guest or the network. A
   * query of stoat's own records answers at once and runs without the budget's timer.
   */
  readonly mayOutrunBudget: boolean
  /** The argument the MCP layer adds for delete safety (not part of the operation's input). */
  readonly confirmable: boolean
  /** Input fields only the CLI may set; to an agent they are unknown arguments. */
  readonly hostOnly: ReadonlyArray<string>
}

/** Could this operation ever need a confirmation word? (Destructive closed-world class, or its own rule.) */
const confirmable = (operation: Operation): boolean =>
  operation.confirm !== undefined || (operation.annotations.destructiveHint && !operation.annotations.openWorldHint)

const LEVEL_NOTE = (operation: Operation): string => {
  if (typeof operation.access === "function") return " Needs agent_access as the arguments say."
  return operation.access ? ` Needs agent_access ${operation.access}.` : ""
}

/** The tool's input schema: the operation's closed object without its host-only fields, plus `confirm` for deletions. */
export const inputSchemaOf = (operation: Operation): JsonSchemaObject => {
  const schema = compactInputSchema(operation.input)
  const hostOnly = new Set(hostOnlyFields(operation.input))
  const properties = Object.fromEntries(
    Object.entries((schema["properties"] ?? {}) as Record<string, unknown>).filter(([key]) => !hostOnly.has(key))
  )
  const required = ((schema["required"] ?? []) as string[]).filter((key) => !hostOnly.has(key))
  if (schema["type"] !== "object" || schema["additionalProperties"] !== false) {
    throw new Error(`operation ${operation.key}: input schema is not a closed object`)
  }
  if (confirmable(operation)) {
    properties["confirm"] = {
      type: "string",
      description:
        'Confirms the deletion: the VM\'s name (delete_checkpoint: "<vm>@<checkpoint>"; prune: "prune"); else the server asks if it can'
    }
  }
  return {
    ...schema,
    type: "object",
    properties,
    ...(required.length > 0 ? { required } : {}),
    additionalProperties: false
  }
}

export const outputSchemaOf = (operation: Operation): JsonSchemaObject => {
  const schema = compactOutputSchema(operation.output)
  if (schema["type"] !== "object") throw new Error(`operation ${operation.key}: output schema is not an object`)
  return schema as JsonSchemaObject
}

/** Whether the operation's input has timeout_seconds, which the call budget caps. */
const hasTimeout = (operation: Operation): boolean =>
  SchemaAST.getPropertySignatures(operation.input.ast).some((signature) => signature.name === "timeout_seconds")

/** What a tool that may run long says about answering within the call budget. */
const BUDGET_NOTE = (operation: Operation, budgetSeconds: number): string => {
  const bounded = hasTimeout(operation)
  return operation.longRunning === true || bounded ? budgetNote(budgetSeconds, bounded) : ""
}

/**
 * A tool as tools/list shows it. Every byte is paid by every agent session (P12: ≤ 40 KB for the
 * whole list), so it carries what an agent acts on: name, description, argument schema, the
 * result's field names and the four hints. Titles and full result schemas are in the
 * operation-catalog resource.
 */
export const definitionOf = (
  operation: Operation,
  budgetSeconds: number = DEFAULT_CALL_BUDGET_SECONDS
): ToolDefinition => ({
  name: operation.tool,
  description: operation.description + LEVEL_NOTE(operation) + BUDGET_NOTE(operation, budgetSeconds),
  inputSchema: inputSchemaOf(operation),
  outputSchema: outputSchemaOf(operation),
  annotations: {
    readOnlyHint: operation.annotations.readOnlyHint,
    destructiveHint: operation.annotations.destructiveHint,
    idempotentHint: operation.annotations.idempotentHint,
    openWorldHint: operation.annotations.openWorldHint
  },
  ...(operation.longRunning ? { execution: { taskSupport: "optional" as const } } : {})
})

/** The groups `stoat mcp --toolsets` serves, each a set of tools an agent uses together. */
export const TOOLSETS = ["vm", "snapshots", "guest", "jobs", "host", "recipes", "project"] as const
export type Toolset = (typeof TOOLSETS)[number]

const JOB_TOOLS = new Set(["exec_bg", "job_status", "job_wait", "job_output", "job_kill", "list_jobs"])

/** The toolset of an operation, from its catalog domain (the key's first part). */
export const toolsetOf = (operation: Operation): Toolset => {
  const domain = operation.key.split(".")[0]
  if (JOB_TOOLS.has(operation.tool)) return "jobs"
  // Guest *definitions* (list_guests, guest_info) are host-side reading, not guest access.
  if (operation.key === "guest.list" || operation.key === "guest.get") return "host"
  switch (domain) {
    case "vm":
    case "guest":
    case "project":
      return domain
    case "snapshot":
    case "checkpoint":
      return "snapshots"
    case "recipe":
      return "recipes"
    default:
      return "host"
  }
}

export interface RegistryOptions {
  /** Serve only these toolsets (default: all). */
  readonly toolsets?: ReadonlyArray<Toolset>
  /** Serve only tools whose readOnlyHint is true. */
  readonly readOnly?: boolean
}

/** A command, or a query that waits on a guest (its toolset) or the network (see `ToolEntry.mayOutrunBudget`). */
const mayOutrunBudget = (operation: Operation): boolean =>
  operation.kind === "command" ||
  operation.longRunning === true ||
  (operation.touches?.length ?? 0) > 0 ||
  ["guest", "jobs"].includes(toolsetOf(operation))

/** One tool per catalog entry the MCP server exposes, in catalog order, limited to the options' subset. */
export const buildRegistry = (
  catalog: ReadonlyArray<Operation> = fullCatalog,
  options: RegistryOptions = {},
  budgetSeconds: number = DEFAULT_CALL_BUDGET_SECONDS
): ReadonlyMap<string, ToolEntry> => {
  const entries = new Map<string, ToolEntry>()
  const toolsets = options.toolsets ? new Set(options.toolsets) : undefined
  for (const operation of catalog) {
    if (!operation.expose.mcp) continue
    if (toolsets && !toolsets.has(toolsetOf(operation))) continue
    if (options.readOnly && !operation.annotations.readOnlyHint) continue
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
      mayOutrunBudget: mayOutrunBudget(operation),
      confirmable: confirmable(operation),
      get hostOnly() {
        return (hostOnly ??= hostOnlyFields(operation.input))
      }
    })
  }
  return entries
}
