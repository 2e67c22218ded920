import { randomUUID } from "node:crypto"
import { Effect, Exit, Layer, ManagedRuntime } from "effect"
import {
  CALLERS,
  callerContext,
  HintWording,
  projectScopeLayer,
  runOperation,
  toErrorInfo,
  type ExecutionContext,
  type Operation
} from "@stoat/core"
import { StoatLive } from "@stoat/libvirt"
import type { ErrorInfo } from "@stoat/wire"
import { cliWords } from "./hints.js"

let runtime: ManagedRuntime.ManagedRuntime<any, any> | undefined

/**
 * Runs an effect of core on the live stack. Ctrl-C interrupts it so its finalizers run (a pull
 * removes its partial file).
 */
export const runLive = async <A>(
  effect: Effect.Effect<A, unknown, any>
): Promise<{ ok: true; value: A } | { ok: false; error: ErrorInfo }> => {
  // The working directory is the project: its stoat.toml, stoat.lock and .stoat/ (never a parent's).
  // Failures' hints name this CLI's commands, in its own messages and in a project's per-VM results.
  runtime ??= ManagedRuntime.make(
    StoatLive.pipe(
      Layer.provideMerge(projectScopeLayer(process.cwd())),
      Layer.merge(Layer.succeed(HintWording, { words: cliWords }))
    )
  )
  const controller = new AbortController()
  const onInterrupt = () => controller.abort()
  process.once("SIGINT", onInterrupt)
  process.once("SIGTERM", onInterrupt)
  const exit = await runtime.runPromiseExit(effect, { signal: controller.signal })
  process.off("SIGINT", onInterrupt)
  process.off("SIGTERM", onInterrupt)
  return Exit.isSuccess(exit)
    ? { ok: true, value: exit.value }
    : { ok: false, error: toErrorInfo(exit.cause, cliWords) }
}

/**
 * Runs one catalog operation through the live stack as a person's CLI call; `interactive` when
 * they sit at a terminal that can show a QEMU window.
 */
export const execute = <I, O>(
  operation: Operation<I, O, any>,
  input: unknown,
  extra: Partial<ExecutionContext> & { readonly interactive?: boolean } = {}
) => {
  const { interactive = false, ...rest } = extra
  const context: ExecutionContext = { requestId: randomUUID().slice(0, 8), ...rest }
  return runLive(
    Effect.provide(
      runOperation(operation, input, context),
      callerContext(CALLERS.cli({ interactive }))
    ) as Effect.Effect<O, unknown, any>
  )
}

export const disposeRuntime = async (): Promise<void> => {
  await runtime?.dispose()
  runtime = undefined
}
