import { Context, Effect, Exit, Runtime, type ManagedRuntime } from "effect"
import { AccessPolicy, accessOf, CALLERS, callerContext, loadVm, effectiveAccess, targetsOf, type Operation } from "@stoat/core"

const mcpCaller = callerContext(CALLERS.mcp)

/** Runs core work to its exit; `signal` interrupts it. */
export type RunAsAgent = <A, E>(effect: Effect.Effect<A, E, any>, options?: { readonly signal?: AbortSignal }) => Promise<Exit.Exit<A, E>>

/**
 * Runs core work as an agent's call: the MCP caller and its policy over whatever the runtime
 * holds (they win over a caller it already has). They join the runtime's context once, when it is
 * first built: providing them to every call cost more than a whole list_vms.
 */
export const agentRunner = <R, E>(managed: ManagedRuntime.ManagedRuntime<R, E>): RunAsAgent => {
  let agent: Promise<Runtime.Runtime<any>> | undefined
  const agentRuntime = () => (agent ??= managed.runtime().then((base) => Runtime.make({ ...base, context: Context.merge(base.context, mcpCaller) })))
  return async (effect, options) => Runtime.runPromiseExit(await agentRuntime())(effect, options)
}

/**
 * The MCP server's guest-access check: each target VM's agent_access, read from its vm.toml on
 * this very call, must be at least the level the operation needs for this input. A VM whose
 * vm.toml is missing or broken fails the check with that error (never open). It binds a caller
 * that enforces access levels (the MCP caller, under `agentRunner`).
 */
export const checkAccess = <I>(operation: Operation<I>, input: I) =>
  Effect.gen(function* () {
    const needed = accessOf(operation, input)
    if (needed === null || needed === "none") return
    const policy = yield* AccessPolicy
    for (const vm of targetsOf(operation, input)) {
      const level = effectiveAccess((yield* loadVm(vm)).config)
      yield* policy.requireGranted(vm, level, needed, `vm "${vm}" has agent_access = ${level}; needs ${needed}`)
    }
  })
