import { Context, Effect, Exit, Runtime, type ManagedRuntime } from "effect"
import { CALLERS, callerContext, HintWording } from "@stoat/core"
import { mcpWords } from "../hints.js"

/** The MCP caller, its policy, and its words for failures' hints (a project's per-VM results carry them). */
const mcpCaller = Context.add(callerContext(CALLERS.mcp), HintWording, { words: mcpWords })

/** Runs core work to its exit; `signal` interrupts it. */
export type RunAsAgent = <A, E>(
  effect: Effect.Effect<A, E, any>,
  options?: { readonly signal?: AbortSignal }
) => Promise<Exit.Exit<A, E>>

/**
 * Runs core work as an agent's call: the MCP caller and its policy over whatever the runtime
 * holds (they win over a caller it already has). They join the runtime's context once, when it is
 * first built: providing them to every call cost more than a whole list_vms.
 */
export const agentRunner = <R, E>(managed: ManagedRuntime.ManagedRuntime<R, E>): RunAsAgent => {
  let agent: Promise<Runtime.Runtime<any>> | undefined
  const agentRuntime = () =>
    (agent ??= managed
      .runtime()
      .then((base) => Runtime.make({ ...base, context: Context.merge(base.context, mcpCaller) })))
  return async (effect, options) => Runtime.runPromiseExit(await agentRuntime())(effect, options)
}
