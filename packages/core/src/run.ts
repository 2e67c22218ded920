import { appendFile } from "node:fs/promises"
import { join } from "node:path"
import { Effect, Exit, ParseResult, Schema } from "effect"
import type { Operation, ExecutionContext } from "./catalog/operation.js"
import { DataRoot } from "./data-root.js"
import { toErrorInfo, Usage, type StoatError } from "./errors.js"

/** "field: problem" lines for a rejected input, so a caller sees every mistake at once. */
export const describeInputError = (error: ParseResult.ParseError): string =>
  ParseResult.ArrayFormatter.formatErrorSync(error)
    .map((issue) => {
      const path = issue.path.map(String).join(".")
      const message = issue.message.startsWith("is unexpected") ? `unknown argument` : issue.message
      return path === "" ? message : `${path}: ${message}`
    })
    .join("; ")

/** Decodes input with the operation's own schema; unknown keys are refused. */
export const decodeInput = <I>(operation: Operation<I>, raw: unknown): Effect.Effect<I, Usage> =>
  Schema.decodeUnknown(operation.input, { onExcessProperty: "error", errors: "all" })(raw).pipe(
    Effect.mapError((error) => new Usage({ message: `invalid input for ${operation.tool}: ${describeInputError(error)}` }))
  )

const subjectOf = (raw: unknown): string | undefined => {
  if (typeof raw !== "object" || raw === null) return undefined
  const record = raw as Record<string, unknown>
  const value = record["vm"] ?? record["source"] ?? record["name"]
  return typeof value === "string" && /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(value) ? value : undefined
}

/** One line in stoat.log per operation: who, what, which VM, how long, outcome. Never argument values. */
const audit = (root: string, context: ExecutionContext, operation: Operation, raw: unknown, ms: number, outcome: string) => {
  const vm = subjectOf(raw)
  const line = `${new Date().toISOString()} INFO op=${operation.key} entrypoint=${context.entrypoint} request=${context.requestId}${vm ? ` vm=${vm}` : ""} ms=${ms} outcome=${outcome}\n`
  // The log is best effort: a missing logs/ folder (a data root never written to) is not created by a read.
  return Effect.promise(() => appendFile(join(root, "logs", "stoat.log"), line).catch(() => undefined))
}

/** Validates, runs and audits one operation. Every entrypoint goes through here. */
export const runOperation = <I, O, R>(
  operation: Operation<I, O, R>,
  raw: unknown,
  context: ExecutionContext
): Effect.Effect<O, StoatError, R | DataRoot> =>
  Effect.gen(function* () {
    const root = yield* DataRoot
    const started = Date.now()
    const exit = yield* Effect.exit(Effect.flatMap(decodeInput(operation, raw), (input) => operation.run(input, context)))
    const outcome = Exit.isSuccess(exit) ? "ok" : `error:${toErrorInfo(exit.cause).code}`
    yield* audit(root.root, context, operation, raw, Date.now() - started, outcome)
    return yield* exit
  })
