import type { Effect, Schema } from "effect"
import type { AccessLevel } from "../vm/config.js"
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

/** One call's request: who asked is the `Caller` service, not part of it. */
export interface ExecutionContext {
  readonly requestId: string
  /** Progress/events for long work; the CLI prints them, MCP sends notifications when the client asked. */
  readonly progress?: (event: { readonly type: "progress" | "stage" | "log"; readonly data: unknown }) => void
}

/** The guest-access level an operation needs on its target VMs, or null for host-side work. */
export type RequiredAccess<I> = AccessLevel | null | ((input: I) => AccessLevel | null)

/**
 * One operation of the catalog: declared once, served by the CLI, the MCP server and the docs.
 * `input` is a closed object schema decoded before `run`; `access` is the level the MCP server
 * checks on every VM `target` names (by default the input's `vm`, else `source`), or null for
 * host-level work.
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
  /** May outlast a client's request timeout (boots, waits, copies): MCP offers it as a task. */
  readonly longRunning?: true
  readonly access: RequiredAccess<I>
  /** The VMs the operation touches (access, audit); default: the input's `vm`, else `source`. */
  readonly target?: (input: I) => ReadonlyArray<string>
  /**
   * The word a caller must confirm before a deletion runs (MCP asks through elicitation, or the
   * `confirm` argument answers in advance), or undefined when this input deletes nothing.
   * Default for the destructive class: the target VM's name.
   */
  readonly confirm?: (input: I) => string | undefined
  readonly run: (input: I, context: ExecutionContext) => Effect.Effect<O, StoatError, R>
}

export const defineOperation = <I, II, O, OI, R>(operation: Operation<I, O, R> & { input: Schema.Schema<I, II>; output: Schema.Schema<O, OI> }): Operation<I, O, R> =>
  operation

const field = (input: unknown, key: string): string | undefined => {
  const value = typeof input === "object" && input !== null ? (input as Record<string, unknown>)[key] : undefined
  return typeof value === "string" ? value : undefined
}

/** The VMs an operation touches for this (decoded) input. */
export const targetsOf = <I>(operation: Operation<I>, input: I): ReadonlyArray<string> => {
  if (operation.target) return operation.target(input)
  const vm = field(input, "vm") ?? field(input, "source")
  return vm === undefined ? [] : [vm]
}

/** The level this input needs on each target, or null when no guest access is involved. */
export const accessOf = <I>(operation: Operation<I>, input: I): AccessLevel | null =>
  typeof operation.access === "function" ? operation.access(input) : operation.access

/** Destructive (closed-world) operations delete something: the word that confirms this input, if any. */
export const confirmationOf = <I>(operation: Operation<I>, input: I): string | undefined => {
  if (operation.confirm) return operation.confirm(input)
  const { destructiveHint, openWorldHint } = operation.annotations
  return destructiveHint && !openWorldHint ? targetsOf(operation, input)[0] : undefined
}
