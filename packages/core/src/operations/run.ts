import { Clock, Context, Effect, Either, Exit, Option, ParseResult, Schema, SchemaAST } from "effect"
import { accessOf, targetsOf, type Operation, type ExecutionContext } from "./operation.js"
import { AuditLog, type AuditEntry } from "../context/audit-log.js"
import { Internal, toErrorInfo, Usage, type StoatError } from "../errors.js"
import { resolveVmArgument } from "../projects/service.js"
import { Caller } from "../context/caller.js"
import { isVmName } from "../platform/names.js"
import { AccessPolicy } from "../context/access-policy.js"
import { effectiveAccess } from "../vm/config.js"
import { type LoadedVm, LoadedVms, loadWholeVm } from "../vm/records.js"
import { VmStore } from "../vm/store.js"
import type { GuestDefinitions } from "../guest-definitions/definitions.js"
import { Progress } from "../context/progress.js"

/** Longer rejected values are named by their length: an error never echoes a payload. */
const ECHO_LIMIT = 60

/** A value as a message quotes it: JSON, or its length when longer than ECHO_LIMIT. */
const quoted = (text: string): string => (text.length > ECHO_LIMIT ? `a value of ${text.length} characters` : text)
const shown = (value: unknown): string =>
  quoted(value === undefined ? "nothing" : (JSON.stringify(value) ?? String(value)))

/** "a string" → "strings", for "an array of strings". */
const plural = (words: string): string => (/^an? /.test(words) ? `${words.replace(/^an? /, "")}s` : `values (${words})`)

/** What a schema takes, in a person's words rather than the schema's construction. */
const expectedOf = (ast: SchemaAST.AST): string => {
  switch (ast._tag) {
    case "Literal":
      return JSON.stringify(ast.literal)
    case "StringKeyword":
    case "TemplateLiteral":
      return "a string"
    case "NumberKeyword":
      return "a number"
    case "BooleanKeyword":
      return "true or false"
    case "TypeLiteral":
      return "an object"
    case "Union": {
      const members = ast.types.filter((member) => member._tag !== "UndefinedKeyword")
      if (members.length > 1 && members.every((member) => member._tag === "Literal"))
        return `one of ${members.map(expectedOf).join(", ")}`
      return members.map(expectedOf).join(" or ")
    }
    case "TupleType": {
      const item = ast.rest[0]
      if (item === undefined) return "an array"
      return `${ast.elements.length > 0 ? "a non-empty" : "an"} array of ${plural(expectedOf(item.type))}`
    }
    case "Refinement":
      return Option.getOrUndefined(SchemaAST.getIdentifierAnnotation(ast))?.endsWith("Int")
        ? "an integer"
        : expectedOf(ast.from)
    case "Transformation":
      return expectedOf(ast.from)
    case "Suspend":
      return expectedOf(ast.f())
    default:
      return "a valid value"
  }
}

/** Effect's wording of one issue, made a person's: "must be X, got Y", "is required", "unknown argument". */
const effectMessages = (
  issue: ParseResult.ParseIssue
): ReadonlyArray<{ readonly path: ReadonlyArray<PropertyKey>; readonly message: string }> =>
  ParseResult.ArrayFormatter.formatIssueSync(issue).map(({ path, message }) => {
    if (message.startsWith("is unexpected")) return { path, message: "unknown argument" }
    if (message.startsWith("is missing")) return { path, message: "is required" }
    const expected = /^Expected (.*), actual (.*)$/s.exec(message)
    const got = expected?.[2]
    return { path, message: expected && got !== undefined ? `must be ${expected[1]}, got ${quoted(got)}` : message }
  })

/** A union issue in which no member took the value's type: one message naming what it takes, not one per member. */
const noMemberMatched = (issue: ParseResult.ParseIssue): boolean =>
  issue._tag === "Type" ||
  (issue._tag === "Composite" &&
    !SchemaAST.isTypeLiteral(issue.ast) &&
    !SchemaAST.isTupleType(issue.ast) &&
    (Array.isArray(issue.issues) ? issue.issues : [issue.issues]).every(noMemberMatched))

/** The (path, message) of each mistake an issue holds. */
const mistakes = (
  issue: ParseResult.ParseIssue,
  path: ReadonlyArray<PropertyKey>
): ReadonlyArray<{ readonly path: ReadonlyArray<PropertyKey>; readonly message: string }> => {
  switch (issue._tag) {
    case "Pointer":
      return mistakes(issue.issue, [...path, ...(Array.isArray(issue.path) ? issue.path : [issue.path])])
    case "Composite": {
      if (SchemaAST.isUnion(issue.ast) && noMemberMatched(issue))
        return [{ path, message: `must be ${expectedOf(issue.ast)}, got ${shown(issue.actual)}` }]
      const inner = Array.isArray(issue.issues) ? issue.issues : [issue.issues]
      // An optional field fails as "X or undefined"; the undefined half says nothing a person needs.
      const useful = inner.filter((member) => !(member._tag === "Type" && member.ast._tag === "UndefinedKeyword"))
      return (useful.length > 0 ? useful : inner).flatMap((member) => mistakes(member, path))
    }
    case "Missing": {
      const last = path.at(-1)
      // A non-empty array given empty: Effect points at its first, missing, item.
      if (typeof last === "number")
        return [
          {
            path: path.slice(0, -1),
            message: last === 0 ? "must not be empty" : `must have at least ${last + 1} items`
          }
        ]
      return [{ path, message: "is required" }]
    }
    case "Type": {
      const [own] = effectMessages(issue)
      // A message a schema declares is kept; Effect's own names the schema ("readonly [maxLength(…)…]").
      if (own !== undefined && !own.message.startsWith("must be ")) return [{ path, message: own.message }]
      return [{ path, message: `must be ${expectedOf(issue.ast)}, got ${shown(issue.actual)}` }]
    }
    case "Refinement":
      // The value's type was wrong before any rule was checked: say which type it takes.
      return issue.kind === "From"
        ? mistakes(issue.issue, path)
        : effectMessages(issue).map((found) => ({ path: [...path, ...found.path], message: found.message }))
    case "Transformation":
      return mistakes(issue.issue, path)
    default:
      return effectMessages(issue).map((found) => ({ path: [...path, ...found.path], message: found.message }))
  }
}

/**
 * "field must be …, got …" for each rejected field, so a caller sees every mistake at once, in
 * words about the field (never the schema's construction), one message per mistake.
 */
export const describeInputError = (error: ParseResult.ParseError): string => {
  const lines = mistakes(error.issue, []).map(({ path, message }) => {
    const at = path.map(String).join(".")
    return at === "" ? message : /^(must|is) /.test(message) ? `${at} ${message}` : `${at}: ${message}`
  })
  return [...new Set(lines)].join("; ")
}

/**
 * One decoder (or encoder) per schema, made on first use: synchronous, since no input or output
 * schema has an asynchronous step, and an Either is already an Effect.
 */
const memoized = <F>(make: (schema: Schema.Schema.Any) => F) => {
  const made = new WeakMap<Schema.Schema.Any, F>()
  return (schema: Schema.Schema.Any): F => {
    let found = made.get(schema)
    if (found === undefined) made.set(schema, (found = make(schema)))
    return found
  }
}
const inputDecoder = memoized((schema) =>
  Schema.decodeUnknownEither(schema as Schema.Schema<unknown, unknown>, { onExcessProperty: "error", errors: "all" })
)
const outputEncoder = memoized((schema) => Schema.encodeEither(schema as Schema.Schema<unknown, unknown>))

/** Input its operation's schema refused (unknown keys included), every mistake named. */
const invalidInput = (operation: Pick<Operation, "tool">, error: ParseResult.ParseError): Usage =>
  new Usage({ message: `invalid input for ${operation.tool}: ${describeInputError(error)}` })

const subjectOf = (raw: unknown): string | undefined => {
  if (typeof raw !== "object" || raw === null) return undefined
  const record = raw as Record<string, unknown>
  const value = record["vm"] ?? record["source"] ?? record["name"]
  return typeof value === "string" && isVmName(value) ? value : undefined
}

/** The stoat.log entry of one call by `caller`, ended at `at` after `ms`. */
const auditEntry = (
  at: number,
  caller: Caller["Type"],
  context: ExecutionContext,
  operation: Pick<Operation, "key" | "tool">,
  vm: string | undefined,
  ms: number,
  outcome: string
): AuditEntry => ({
  at,
  operation: operation.key,
  tool: operation.tool,
  entrypoint: caller.kind,
  requestId: context.requestId,
  vm,
  ms,
  outcome
})

/** Records one call in stoat.log (also used by the MCP server for calls refused before they run). */
export const auditCall = (
  context: ExecutionContext,
  operation: Pick<Operation, "key" | "tool">,
  vm: string | undefined,
  ms: number,
  outcome: string
) =>
  Effect.flatMap(Caller, (caller) =>
    Effect.flatMap(AuditLog, (log) =>
      Effect.clockWith((clock) =>
        log.record(auditEntry(clock.unsafeCurrentTimeMillis(), caller, context, operation, vm, ms, outcome))
      )
    )
  )

/** The input fields that name an existing VM; a project declaration key given there names its VM. */
const VM_FIELDS = ["vm", "source"] as const

const namedVmFields = (input: unknown): ReadonlyArray<(typeof VM_FIELDS)[number]> =>
  typeof input === "object" && input !== null
    ? VM_FIELDS.filter((field) => typeof (input as Record<string, unknown>)[field] === "string")
    : []

/**
 * Bare VM arguments resolve to a declaration key of the frontend's project first, then to a VM
 * name as given: `stoat get dev` for `[vms.dev]`. Done here once, so every command, tool, access
 * check and audit line sees the VM's real name.
 */
const resolveDeclarationKeys = <I>(
  input: I,
  named: ReadonlyArray<(typeof VM_FIELDS)[number]>
): Effect.Effect<I, StoatError, VmStore> =>
  Effect.gen(function* () {
    const record = input as Record<string, unknown>
    const resolved: Record<string, unknown> = { ...record }
    for (const field of named)
      resolved[field] = yield* resolveVmArgument(record[field] as string).pipe(
        Effect.catchAll((error) => existingVmOr(record[field] as string, error))
      )
    return resolved as I
  })

/**
 * A stoat.toml that does not load is needed only to resolve a declaration key: an argument that
 * names an existing VM acts on it (a broken stoat.toml in the working directory must not stop
 * `exec` on any VM); anything else answers the file's error.
 */
const existingVmOr = (name: string, error: StoatError): Effect.Effect<string, StoatError, VmStore> =>
  Effect.flatMap(VmStore, (store) => store.get(name)).pipe(
    Effect.as(name),
    Effect.catchAll(() => Effect.fail(error))
  )

/**
 * Each target VM's agent_access, read from its vm.toml on this very call, must reach the level
 * this input needs, for a caller bound by access levels (the MCP caller; the CLI's policy is not
 * bound, so it reads nothing here). A VM whose vm.toml is missing or broken fails the check with
 * that error, never open. Answers the VMs it loaded, for the handler (`LoadedVms`).
 */
const requireAccess = <I>(
  operation: Operation<I, any, any>,
  input: I,
  caller: Caller["Type"]
): Effect.Effect<ReadonlyMap<string, LoadedVm>, StoatError, AccessPolicy | VmStore | GuestDefinitions> | undefined => {
  const needed = accessOf(operation, input)
  if (!caller.enforcesAccess || needed === null || needed === "none") return undefined
  return Effect.gen(function* () {
    const policy = yield* AccessPolicy
    const loaded = new Map<string, LoadedVm>()
    for (const vm of targetsOf(operation, input)) {
      const whole = yield* loadWholeVm(vm)
      const level = effectiveAccess(whole.record.config)
      yield* policy.requireGranted(vm, level, needed, `vm "${vm}" has agent_access = ${level}; needs ${needed}`)
      loaded.set(vm, whole)
    }
    return loaded
  })
}

/**
 * The result as its schema encodes it: known fields only, each checked. `Operation.output` is a
 * `Schema<O>` (encoded type = type: plain data), so the encoding is still an `O`.
 */
const encodeOutput = <O>(
  operation: Pick<Operation<any, O>, "tool" | "output">,
  output: O
): Effect.Effect<O, Internal> =>
  Either.mapBoth(outputEncoder(operation.output)(output), {
    onLeft: (error) =>
      new Internal({ message: `${operation.tool} produced a result that does not match its schema: ${error.message}` }),
    onRight: (encoded) => encoded as O
  })

export interface RunOptions<I, R> {
  /** Runs after the input is decoded and access is checked, before the handler (the MCP server's confirmation). */
  readonly guard?: (input: I) => Effect.Effect<void, StoatError, R>
  /** Rewrites the decoded input before the handler (the MCP server caps timeout_seconds of a call without a progress token). */
  readonly adjust?: (input: I) => I
}

/**
 * Effect's own tracer, which keeps spans nowhere: a span per call costs a copy of the call's
 * context, a fifth of an MCP list_vms, so calls make spans only for a tracer someone provided.
 */
const defaultTracer = Effect.runSync(Effect.tracer)

/**
 * Validates, checks access, runs and audits one operation, inside a span named by its key when a tracer is
 * provided (it sees every call; the name and attributes locate it, so no stack trace is taken).
 * Every entrypoint goes through here, and renders the one encoded output it yields.
 *
 * An MCP list_vms is this pipeline and a directory listing, so it is written for few steps: the
 * caller, the log, the clock and the tracer are read from the fiber at once (the signature still
 * requires Caller and AuditLog), and a step that has nothing to do is left out. The plain form
 * (an Effect.gen yielding each) measured 0.05-0.1 ms more per call, which takes stoat's own work
 * over HTTP past P1's 0.3 ms (bench/mcp.mjs).
 */
export const runOperation = <I, O, R, R2 = never>(
  operation: Operation<I, O, R>,
  raw: unknown,
  context: ExecutionContext,
  options: RunOptions<I, R2> = {}
): Effect.Effect<O, StoatError, R | R2 | AuditLog | Caller | AccessPolicy | VmStore | GuestDefinitions> =>
  Effect.withFiberRuntime<O, StoatError, R | R2 | AccessPolicy | VmStore | GuestDefinitions>((fiber) => {
    // The signature requires both, so they are there: read without a step each (see above).
    const caller = Context.unsafeGet(fiber.currentContext, Caller)
    const log = Context.unsafeGet(fiber.currentContext, AuditLog)
    const clock = Context.get(fiber.currentDefaultServices, Clock.Clock)
    const started = clock.unsafeCurrentTimeMillis()
    let vm = subjectOf(raw)
    const body = (
      decodedInput: I
    ): Effect.Effect<O, StoatError, R | R2 | AccessPolicy | VmStore | GuestDefinitions> => {
      const input = options.adjust ? options.adjust(decodedInput) : decodedInput
      vm = targetsOf(operation, input)[0] ?? vm
      const work = operation.run(input)
      // Progress is a reference whose default reports nowhere: provided only to a call that listens.
      const reported = context.progress ? Effect.provideService(work, Progress, { emit: context.progress }) : work
      const run = Effect.flatMap(reported, (output) => encodeOutput(operation, output))
      const guarded = options.guard ? Effect.zipRight(options.guard(input), run) : run
      const access = requireAccess(operation, input, caller)
      // The VMs the check loaded are the handler's too: one vm.toml read per target and call.
      return access ? Effect.flatMap(access, (loaded) => Effect.provideService(guarded, LoadedVms, loaded)) : guarded
    }
    const decoded = inputDecoder(operation.input)(raw)
    let program: Effect.Effect<O, StoatError, R | R2 | AccessPolicy | VmStore | GuestDefinitions>
    if (Either.isLeft(decoded)) program = Effect.fail(invalidInput(operation, decoded.left))
    else {
      const input = decoded.right as I
      const named = namedVmFields(input)
      program = named.length === 0 ? body(input) : Effect.flatMap(resolveDeclarationKeys(input, named), body)
    }
    // Audited on every exit, an interrupted (canceled) call included.
    const audited = Effect.onExit(program, (exit) => {
      const ended = clock.unsafeCurrentTimeMillis()
      const outcome = Exit.isSuccess(exit) ? "ok" : `error:${toErrorInfo(exit.cause).code}`
      return log.record(auditEntry(ended, caller, context, operation, vm, ended - started, outcome))
    })
    return fiber.currentTracer === defaultTracer
      ? audited
      : Effect.withSpan(audited, operation.key, {
          attributes: { tool: operation.tool, request: context.requestId, entrypoint: caller.kind },
          captureStackTrace: false
        })
  })
