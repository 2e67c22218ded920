import { SchemaAST, type Effect, Schema } from "effect"
import type { AccessLevel } from "../context/access-policy.js"
import type { StoatError } from "../errors.js"
import type { ExecutionContext } from "../context/execution.js"

export interface Annotations {
  readonly readOnlyHint: boolean
  readonly destructiveHint: boolean
  readonly idempotentHint: boolean
  readonly openWorldHint: boolean
}

/** The four annotation classes of the original's tool table. */
export const READ: Annotations = {
  readOnlyHint: true,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: false
}
export const MUTATE: Annotations = {
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: false,
  openWorldHint: false
}
export const DESTRUCTIVE: Annotations = {
  readOnlyHint: false,
  destructiveHint: true,
  idempotentHint: false,
  openWorldHint: false
}
export const EXEC: Annotations = {
  readOnlyHint: false,
  destructiveHint: true,
  idempotentHint: false,
  openWorldHint: true
}
/** The read and mutate classes of operations that reach the network (issue 26: open world). */
export const READ_NETWORK: Annotations = { ...READ, openWorldHint: true }
export const MUTATE_NETWORK: Annotations = { ...MUTATE, openWorldHint: true }

/**
 * What an operation reaches beyond stoat's own records, which decides its annotation class:
 * - `guest`: acts in a guest beyond reading it (runs commands or recipe scripts, changes files,
 *   services, users, or carries guest-made data onto the host): destructive, and open world,
 *   since what runs there is not stoat's to bound;
 * - `network`: fetches or resolves something over the network: open world;
 * - `deletes`: deletes data a person cannot get back: destructive.
 */
export type Touch = "guest" | "network" | "deletes"

export type { ExecutionContext }

/** The guest-access level an operation needs on its target VMs, or null for host-side work. */
export type RequiredAccess<I> = AccessLevel | null | ((input: I) => AccessLevel | null)

/** Where an operation is served: its CLI command id (space-separated topic path), and whether the MCP server lists it as a tool. */
export interface Exposure {
  readonly cli: string | false
  /** False for the few operations the MCP server deliberately leaves out (long, open-world downloads; stoat's own log). */
  readonly mcp: boolean
}

/**
 * Marks an input field only a person at the CLI may set (host paths, passwords, overrides):
 * the MCP server leaves it out of the tool's input schema and refuses it.
 */
export const HostOnlyId: unique symbol = Symbol.for("@stoat/core/HostOnly")

type Field = Schema.Schema.All | Schema.PropertySignature.All

/** The field, annotated as host-only (see `HostOnlyId`); a plain schema becomes a required property. */
export function hostOnly<F extends Schema.PropertySignature.All>(field: F): F
export function hostOnly<S extends Schema.Schema.All>(field: S): Schema.propertySignature<S>
export function hostOnly(field: Field): Schema.PropertySignature.All {
  const signature: Schema.PropertySignature.All = Schema.isPropertySignature(field)
    ? field
    : Schema.propertySignature(field as Schema.Schema.All)
  // A custom key: no field of the Annotations type, so it goes in untyped.
  return signature.annotations({ [HostOnlyId]: true } as never)
}

const objectsOf = (ast: SchemaAST.AST): ReadonlyArray<SchemaAST.TypeLiteral> =>
  SchemaAST.isTypeLiteral(ast)
    ? [ast]
    : SchemaAST.isTransformation(ast)
      ? [...objectsOf(ast.from), ...objectsOf(ast.to)]
      : []

/** The input fields of a schema marked `hostOnly`, in declaration order. */
export const hostOnlyFields = (schema: Schema.Schema.Any): ReadonlyArray<string> => {
  const names = objectsOf(schema.ast).flatMap((object) =>
    object.propertySignatures
      .filter((signature) => signature.annotations[HostOnlyId] === true)
      .map((signature) => String(signature.name))
  )
  return [...new Set(names)]
}

/**
 * One operation of the catalog: declared once, served by the CLI, the MCP server and the docs.
 * `input` is a closed object schema decoded before `run`; `access` is the level the MCP server
 * checks on every VM `target` names (by default the input's `vm`, else `source`), or null for
 * host-level work.
 */
export interface Operation<I = any, O = any, R = any> {
  readonly key: string
  readonly tool: string
  readonly expose: Exposure
  readonly title: string
  readonly description: string
  readonly kind: "query" | "command"
  readonly input: Schema.Schema<I, any>
  /** Plain data: its encoded form is the value itself, which every frontend renders. */
  readonly output: Schema.Schema<O>
  readonly annotations: Annotations
  /** What it reaches beyond stoat's records (see `Touch`); absent: nothing. Its annotations follow from it. */
  readonly touches?: ReadonlyArray<Touch>
  /**
   * The CLI's `--json` data for a result (reference §4 "Per-command `data`") where it differs
   * from the MCP result; without it the CLI shows the result itself.
   */
  readonly cliView?: (output: O, input: I) => unknown
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
  readonly run: (input: I) => Effect.Effect<O, StoatError, R>
}

export const defineOperation = <I, II, O, R>(
  operation: Operation<I, O, R> & { input: Schema.Schema<I, II> }
): Operation<I, O, R> => operation

/** What the CLI prints (and `--json` carries) for this result of the operation. */
export const cliDataOf = <I, O>(operation: Operation<I, O, any>, output: O, input: I): unknown =>
  operation.cliView ? operation.cliView(output, input) : output

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
