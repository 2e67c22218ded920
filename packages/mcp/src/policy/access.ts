import { Context, Effect, Exit, Runtime, type Fiber, type ManagedRuntime } from "effect"
import { AccessPolicy, accessOf, CALLERS, callerContext, loadVm, effectiveAccess, targetsOf, type Operation } from "@stoat/core"

const mcpCaller = callerContext(CALLERS.mcp)

/** Runs core work to its exit; `signal` interrupts it. */
export type RunAsAgent = <A, E>(effect: Effect.Effect<A, E, any>, options?: { readonly signal?: AbortSignal }) => Promise<Exit.Exit<A, E>>

/**
 * Runs core work as an agent's call: the MCP caller and its policy over whatever the runtime
 * holds (they win over a caller it already has). They join the runtime's context once, when it is
 * first built: providing them to every call cost more than a whole list_vms.
 */
export const agentRunner = (managed: ManagedRuntime.ManagedRuntime<any, any>): RunAsAgent => {
  let built: Promise<Fork> | undefined
  let fork: Fork | undefined
  const build = () =>
    (built ??= managed.runtime().then((base) => (fork = Runtime.runFork(Runtime.make({ ...base, context: Context.merge(base.context, mcpCaller) })))))
  return (effect, options) => (fork ? runToExit(fork, effect, options?.signal) : build().then((ready) => runToExit(ready, effect, options?.signal)))
}

/** Starts a fiber on the agent's runtime. */
type Fork = <A, E>(effect: Effect.Effect<A, E, any>) => Fiber.RuntimeFiber<A, E>

/**
 * A fiber runs at once, as far as it can without waiting: most queries finish right there, and
 * their exit is answered without watching the signal. Only a call still running listens for the
 * abort: adding and removing that listener on every call cost more than a whole list_vms.
 */
const runToExit = <A, E>(fork: Fork, effect: Effect.Effect<A, E, any>, signal: AbortSignal | undefined): Promise<Exit.Exit<A, E>> => {
  const fiber = fork(effect)
  const finished = fiber.unsafePoll()
  if (finished !== null) return Promise.resolve(finished)
  return new Promise((resolve) => {
    fiber.addObserver(resolve)
    if (signal === undefined) return
    const interrupt = () => fiber.unsafeInterruptAsFork(fiber.id())
    if (signal.aborted) return interrupt()
    signal.addEventListener("abort", interrupt, { once: true })
    fiber.addObserver(() => signal.removeEventListener("abort", interrupt))
  })
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
