import { randomUUID } from "node:crypto"
import { Effect, Exit, Layer, ManagedRuntime } from "effect"
import { callerLayer, cliCaller, projectsAt, runOperation, toErrorInfo, type ExecutionContext, type Operation } from "@stoat/core"
import { StoatLive } from "@stoat/qemu"
import type { ErrorInfo } from "@stoat/wire"

let runtime: ManagedRuntime.ManagedRuntime<any, any> | undefined

/**
 * Runs one catalog operation through the live stack as a person's CLI call; `interactive` when
 * they sit at a terminal that can show a QEMU window.
 */
export const execute = async <I, O>(
  operation: Operation<I, O, any>,
  input: unknown,
  extra: Partial<ExecutionContext> & { readonly interactive?: boolean } = {}
): Promise<{ ok: true; value: O } | { ok: false; error: ErrorInfo }> => {
  // The working directory is the project: its stoat.toml, stoat.lock and .stoat/ (never a parent's).
  runtime ??= ManagedRuntime.make(StoatLive.pipe(Layer.provideMerge(projectsAt(process.cwd()))))
  const { interactive = false, ...rest } = extra
  const context: ExecutionContext = { requestId: randomUUID().slice(0, 8), ...rest }
  const caller = callerLayer(cliCaller({ interactive }))
  // Ctrl-C interrupts the operation so its finalizers run (a pull removes its partial file).
  const controller = new AbortController()
  const onInterrupt = () => controller.abort()
  process.once("SIGINT", onInterrupt)
  process.once("SIGTERM", onInterrupt)
  const exit = await runtime.runPromiseExit(Effect.provide(runOperation(operation, input, context), caller) as Effect.Effect<O, unknown, any>, {
    signal: controller.signal
  })
  process.off("SIGINT", onInterrupt)
  process.off("SIGTERM", onInterrupt)
  return Exit.isSuccess(exit) ? { ok: true, value: exit.value } : { ok: false, error: toErrorInfo(exit.cause) }
}

export const disposeRuntime = async (): Promise<void> => {
  await runtime?.dispose()
  runtime = undefined
}
