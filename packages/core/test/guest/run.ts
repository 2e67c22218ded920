import { Cause, Effect, Exit, Option } from "effect"
import type { ErrorInfo } from "@stoat/wire"
import { toErrorInfo } from "../../src/errors.js"

export const ok = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect)

/** The ErrorInfo of an expected (typed) failure; a success or a defect fails the test. */
export const fails = async <A, E>(effect: Effect.Effect<A, E>): Promise<ErrorInfo> => {
  const exit = await Effect.runPromiseExit(effect)
  if (Exit.isSuccess(exit)) throw new Error(`expected a failure, got ${JSON.stringify(exit.value)}`)
  if (Option.isNone(Cause.failureOption(exit.cause)))
    throw new Error(`expected a typed failure, got ${Cause.pretty(exit.cause)}`)
  return toErrorInfo(exit.cause)
}
