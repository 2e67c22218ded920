import { randomUUID } from "node:crypto"
import { Effect, Exit } from "effect"
import {
  auditCall,
  confirmationOf,
  ConfirmationRequired,
  runOperation,
  targetsOf,
  toErrorInfo,
  Usage,
  VmStore,
  type ExecutionContext,
  type Operation,
  type StoatError
} from "@stoat/core"
import { checkAccess, type RunAsAgent } from "../policy/access.js"
import { progressReporter, type SendProgress } from "../progress.js"
import type { RateLimiter } from "../policy/rate-limit.js"
import type { ErrorInfo } from "@stoat/wire"
import { errorResult, successResult, type ToolResult } from "./result.js"
import type { ToolEntry } from "./registry.js"

/** What one call can ask of its client: progress notifications and an elicitation round trip. */
export interface CallChannel {
  readonly signal: AbortSignal
  readonly requestId: string | number
  /** Present when the client sent a progress token. */
  readonly progress?: SendProgress
  /** Present when the client declared the elicitation capability; resolves the typed answer or undefined. */
  readonly elicit?: (message: string, field: string) => Promise<string | undefined>
}

export interface CallDependencies {
  readonly tools: ReadonlyMap<string, ToolEntry>
  readonly limiter: RateLimiter
  readonly run: RunAsAgent
  /** How often a long call reports that it is still working (ms). */
  readonly heartbeatMs?: number
}

const numberField = (input: unknown, key: string): number | undefined => {
  const value = typeof input === "object" && input !== null ? (input as Record<string, unknown>)[key] : undefined
  return typeof value === "number" ? value : undefined
}

const confirmationGuard = <I>(operation: Operation<I>, given: string | undefined, channel: CallChannel) => (input: I) =>
  Effect.gen(function* () {
    const word = confirmationOf(operation, input)
    if (word === undefined) {
      if (given !== undefined) return yield* new Usage({ message: `invalid input for ${operation.tool}: confirm: this call deletes nothing, so there is nothing to confirm` })
      return
    }
    if (given !== undefined) {
      if (given === word) return
      return yield* new ConfirmationRequired({ message: `${operation.tool}: confirm must be "${word}" to go ahead, got ${JSON.stringify(given)}`, subject: word })
    }
    if (!channel.elicit) return
    const elicit = channel.elicit
    // Nobody is asked to confirm deleting a VM that does not exist: that is not_found at once.
    const store = yield* VmStore
    for (const vm of targetsOf(operation, input)) yield* store.get(vm)
    const answer = yield* Effect.promise(() =>
      elicit(`${operation.title}: this deletes data and cannot be undone. Type "${word}" to go ahead.`, "confirm").catch(() => undefined)
    )
    if (answer !== word) {
      return yield* new ConfirmationRequired({
        message: `${operation.tool} was not confirmed; type "${word}" when asked, or pass confirm="${word}"`,
        subject: word
      })
    }
  })

/**
 * One tools/call: rate limits → host-only refusal → decode (runOperation) → access → confirmation
 * → the operation and its encoded output → redaction → the result envelope.
 */
export const callTool = async (deps: CallDependencies, name: string, args: Record<string, unknown> | undefined, channel: CallChannel): Promise<ToolResult> => {
  const entry = deps.tools.get(name)
  const verdict = deps.limiter.take(entry ? name : undefined)
  const requestId = `${String(channel.requestId)}-${randomUUID().slice(0, 8)}`
  const context: ExecutionContext = { requestId }
  // Refusals before the operation runs are audited too; the name is the caller's, so only a
  // plain one reaches the log line.
  const refuse = async (tool: Pick<Operation, "key" | "tool">, error: ErrorInfo): Promise<ToolResult> => {
    await deps.run(auditCall(context, tool, undefined, 0, `error:${error.code}`)).catch(() => undefined)
    return errorResult(error)
  }
  if (!entry) {
    const logged = /^[A-Za-z0-9_.-]{1,64}$/.test(name) ? name : "<invalid>"
    return refuse({ key: "-", tool: logged }, { code: "usage", message: `unknown tool "${name}"; tools/list names every tool` })
  }
  const { operation } = entry
  if (!verdict.ok) return refuse(operation, { code: "rate_limited", message: verdict.message, subject: verdict.bucket === "tool" ? name : "server" })
  const raw: Record<string, unknown> = { ...(args ?? {}) }
  let confirm: string | undefined
  if (entry.confirmable && "confirm" in raw) {
    const value = raw["confirm"]
    delete raw["confirm"]
    if (typeof value !== "string") return refuse(operation, { code: "usage", message: `invalid input for ${name}: confirm must be a string` })
    confirm = value
  }
  // Host-only fields exist in the operation's schema for the CLI; to an agent they are unknown.
  const hostOnly = entry.hostOnly.filter((key) => key in raw)
  if (hostOnly.length > 0) return refuse(operation, { code: "usage", message: `invalid input for ${name}: ${hostOnly.map((key) => `${key}: unknown argument`).join("; ")}` })

  const reporter = channel.progress ? progressReporter(channel.progress, numberField(raw, "timeout_seconds"), deps.heartbeatMs ?? 1000) : undefined
  const runContext: ExecutionContext = reporter ? { ...context, progress: reporter.onEvent } : context
  // A tool that needs no level and deletes nothing has nothing to check after decoding.
  const guarded = entry.confirmable || (operation.access !== null && operation.access !== "none")
  const program = runOperation(
    operation,
    raw,
    runContext,
    guarded ? { guard: (input) => Effect.zipRight(checkAccess(operation, input), confirmationGuard(operation, confirm, channel)(input)) } : {}
  ) as Effect.Effect<unknown, StoatError, any>
  try {
    const exit = await deps.run(program, { signal: channel.signal })
    if (Exit.isSuccess(exit)) return successResult(exit.value as Record<string, unknown>)
    return errorResult(toErrorInfo(exit.cause))
  } catch (error) {
    return errorResult(toErrorInfo(error))
  } finally {
    reporter?.stop()
  }
}
