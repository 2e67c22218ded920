import type { Effect, Schema } from "effect"
import type { AccessLevel } from "../vm-config.js"
import type { StoatError } from "../errors.js"

export interface Annotations {
  readonly readOnlyHint: boolean
  readonly destructiveHint: boolean
  readonly idempotentHint: boolean
  readonly openWorldHint: boolean
}

/** The four annotation classes of the original's tool table. */
export const READ: Annotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false }
export const MUTATE: Annotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false }
export const DESTRUCTIVE: Annotations = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false }
export const EXEC: Annotations = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true }

/** Who asked: every operation runs tagged so stoat.log can tell a person's CLI call from an agent's tool call. */
export interface ExecutionContext {
  readonly entrypoint: "cli" | "mcp" | "toolkit"
  readonly requestId: string
  /** Progress/events for long work; the CLI prints them, MCP sends notifications when the client asked. */
  readonly progress?: (event: { readonly type: "progress" | "stage" | "log"; readonly data: unknown }) => void
  /** A person at a terminal may override the host-memory floor (`up -y`); an agent never can. */
  readonly interactive?: boolean
}

/**
 * One operation of the catalog: declared once, served by the CLI, the MCP server and the docs.
 * `input` is a closed object schema decoded before `run`; `access` is the level the MCP server
 * checks on the VM named by the input's `vm` (or `source`) field, or null for host-level work.
 */
export interface Operation<I = any, O = any, R = any> {
  readonly key: string
  readonly tool: string
  /** The CLI command id (space-separated topic path) that serves this operation. */
  readonly cli: string
  readonly title: string
  readonly description: string
  readonly kind: "query" | "command"
  readonly input: Schema.Schema<I, any>
  readonly output: Schema.Schema<O, any>
  readonly annotations: Annotations
  /**
   * Input fields only a person at the CLI may set (host paths, passwords, overrides). The MCP
   * server leaves them out of the tool schema and refuses them.
   */
  readonly hostOnly?: ReadonlyArray<string>
  /** False for the few CLI operations the MCP server deliberately leaves out (long, open-world downloads). */
  readonly mcp?: false
  readonly access: AccessLevel | null
  readonly run: (input: I, context: ExecutionContext) => Effect.Effect<O, StoatError, R>
}

export const defineOperation = <I, II, O, OI, R>(operation: Operation<I, O, R> & { input: Schema.Schema<I, II>; output: Schema.Schema<O, OI> }): Operation<I, O, R> =>
  operation
