import { randomUUID } from "node:crypto"
import { Duration, Effect, Exit, Fiber, Option } from "effect"
import {
  auditCall,
  confirmationOf,
  ConfirmationRequired,
  HostJobs,
  runOperation,
  StillRunning,
  LoadedVms,
  targetsOf,
  Timeout,
  toErrorInfo,
  Usage,
  VmStore,
  type ExecutionContext,
  type Operation,
  type StoatError
} from "@stoat/core"
import type { RunAsAgent } from "../policy/access.js"
import { mcpWords } from "../hints.js"
import { progressReporter, type SendProgress } from "../progress.js"
import type { RateLimiter } from "../policy/rate-limit.js"
import type { ErrorInfo } from "@stoat/wire"
import { timeoutCapSeconds } from "./budget.js"
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
  /** Seconds the call must answer within (a request without a progress token); absent: its own cap. */
  readonly budgetSeconds?: number
}

export interface CallDependencies {
  readonly tools: ReadonlyMap<string, ToolEntry>
  readonly limiter: RateLimiter
  readonly run: RunAsAgent
  /** How often a long call reports that it is still working (ms). */
  readonly heartbeatMs?: number
  /** False (--no-confirm): deletions run without a confirmation, as in the original server. */
  readonly confirmDeletions: boolean
}

const numberField = (input: unknown, key: string): number | undefined => {
  const value = typeof input === "object" && input !== null ? (input as Record<string, unknown>)[key] : undefined
  return typeof value === "number" ? value : undefined
}

/** Lowers the decoded input's timeout_seconds (or its default) to the budget's cap. */
const capTimeout = (cap: number) => (input: unknown) => {
  const given = (input as { timeout_seconds?: unknown }).timeout_seconds
  return typeof given === "number" && given <= cap ? input : { ...(input as object), timeout_seconds: cap }
}

const confirmationGuard =
  <I>(operation: Operation<I>, given: string | undefined, channel: CallChannel, confirmDeletions: boolean) =>
  (input: I) =>
    Effect.gen(function* () {
      const word = confirmationOf(operation, input)
      if (word === undefined) {
        if (given !== undefined)
          return yield* new Usage({
            message: `invalid input for ${operation.tool}: confirm: this call deletes nothing, so there is nothing to confirm`
          })
        return
      }
      if (given !== undefined) {
        if (given === word) return
        return yield* new ConfirmationRequired({
          message: `${operation.tool}: confirm must be "${word}" to go ahead, got ${JSON.stringify(given)}`,
          subject: word
        })
      }
      // Started with --no-confirm: deletions run unconfirmed, as the original server's did.
      if (!confirmDeletions) return
      // Nobody is asked to confirm deleting a VM that does not exist: that is not_found at once
      // (a VM the access check loaded for this call exists).
      const store = yield* VmStore
      const loaded = yield* LoadedVms
      for (const vm of targetsOf(operation, input)) if (!loaded.has(vm)) yield* store.get(vm)
      if (!channel.elicit) {
        return yield* new ConfirmationRequired({
          message: `${operation.tool} deletes data and cannot be undone; this client cannot confirm through elicitation, so call it again with confirm="${word}" to go ahead`,
          subject: word
        })
      }
      const elicit = channel.elicit
      const answer = yield* Effect.promise(() =>
        elicit(
          `${operation.title}: this deletes data and cannot be undone. Type "${word}" to go ahead.`,
          "confirm"
        ).catch(() => undefined)
      )
      if (answer !== word) {
        return yield* new ConfirmationRequired({
          message: `${operation.tool} was not confirmed; type "${word}" when asked, or pass confirm="${word}"`,
          subject: word
        })
      }
    })

/**
 * The backstop for work no timeout_seconds bounds (copies, recipes, several VMs), so the client
 * gets an answer instead of -32001. A command still running at the budget goes on in the
 * background as a host job (job_status/job_wait/job_output/job_kill read it through its VM) and
 * the call answers still_running with the job id; a query is interrupted with code timeout, since
 * nothing would read its answer.
 */
const withinBudget = (
  operation: Operation,
  input: Record<string, unknown>,
  run: Effect.Effect<unknown, StoatError, any>,
  budget: number
) =>
  Effect.gen(function* () {
    const fiber = yield* Effect.forkDaemon(run)
    // Until the job is adopted, cancelling the call stops its work, as for any call.
    const ended = yield* Fiber.await(fiber).pipe(
      Effect.timeoutOption(Duration.seconds(budget)),
      Effect.onInterrupt(() => Fiber.interrupt(fiber))
    )
    if (Option.isSome(ended)) return yield* ended.value
    if (operation.kind !== "command") {
      yield* Fiber.interrupt(fiber)
      return yield* new Timeout({
        message: `${operation.tool} did not finish within ${budget} s and was stopped: a call without a progress token answers within ${budget} s so the client does not time out first. Send a progress token or run it as a task to let it run to its cap.`,
        subject: operation.tool
      })
    }
    const vms = targetsOf(operation, input as never)
    const id = yield* Effect.flatMap(HostJobs, (jobs) => jobs.adopt(fiber, operation.tool, vms))
    const poll =
      vms.length > 0
        ? `job_wait with vm="${vms[0]}" job_id="${id}" waits for its result (job_output has it as JSON), job_kill stops it`
        : "list_vms and project_wait show how far it got"
    return yield* new StillRunning({
      message: `${operation.tool} is still running after ${budget} s (the answer time of a call without a progress token) and goes on in the background as job ${id}: ${poll}`,
      subject: id
    })
  })

/**
 * One tools/call: rate limits → host-only refusal → decode and access (runOperation) → confirmation
 * → the operation and its encoded output → redaction → the result envelope.
 */
export const callTool = async (
  deps: CallDependencies,
  name: string,
  args: Record<string, unknown> | undefined,
  channel: CallChannel
): Promise<ToolResult> => {
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
    return refuse(
      { key: "-", tool: logged },
      { code: "usage", message: `unknown tool "${name}"; tools/list names every tool` }
    )
  }
  const { operation } = entry
  if (!verdict.ok) {
    return refuse(operation, {
      code: "rate_limited",
      message: verdict.message,
      subject: verdict.bucket === "tool" ? name : "server",
      // A bucket that never refills has no delay to give.
      ...(Number.isFinite(verdict.retryMs) ? { retry_after_ms: Math.ceil(verdict.retryMs) } : {})
    })
  }
  const raw: Record<string, unknown> = { ...(args ?? {}) }
  let confirm: string | undefined
  if (entry.confirmable && "confirm" in raw) {
    const value = raw["confirm"]
    delete raw["confirm"]
    if (typeof value !== "string")
      return refuse(operation, { code: "usage", message: `invalid input for ${name}: confirm must be a string` })
    confirm = value
  }
  // Host-only fields exist in the operation's schema for the CLI; to an agent they are unknown.
  const hostOnly = entry.hostOnly.filter((key) => key in raw)
  if (hostOnly.length > 0)
    return refuse(operation, {
      code: "usage",
      message: `invalid input for ${name}: ${hostOnly.map((key) => `${key}: unknown argument`).join("; ")}`
    })

  const reporter = channel.progress
    ? progressReporter(channel.progress, numberField(raw, "timeout_seconds"), deps.heartbeatMs ?? 1000)
    : undefined
  const runContext: ExecutionContext = reporter ? { ...context, progress: reporter.onEvent } : context
  const budget = channel.budgetSeconds
  const capped = budget !== undefined && entry.timeoutBounded ? { adjust: capTimeout(timeoutCapSeconds(budget)) } : {}
  const operationRun = runOperation(operation, raw, runContext, {
    ...capped,
    // Core checks access levels (runOperation); deletions are confirmed here.
    ...(entry.confirmable ? { guard: confirmationGuard(operation, confirm, channel, deps.confirmDeletions) } : {})
  }) as Effect.Effect<unknown, StoatError, any>
  const program =
    budget === undefined || !entry.mayOutrunBudget ? operationRun : withinBudget(operation, raw, operationRun, budget)
  try {
    const exit = await deps.run(program, { signal: channel.signal })
    if (Exit.isSuccess(exit)) return successResult(exit.value as Record<string, unknown>)
    return errorResult(toErrorInfo(exit.cause, mcpWords))
  } catch (error) {
    return errorResult(toErrorInfo(error, mcpWords))
  } finally {
    reporter?.stop()
  }
}
