import { Effect } from "effect"
import { AccessPolicy, accessOf, CALLERS, callerContext, loadVm, effectiveAccess, targetsOf, type Operation } from "@stoat/core"

const mcpCaller = callerContext(CALLERS.mcp)

/** Runs core work as an agent's call: the MCP caller and its policy, whatever the runtime holds. */
export const asAgent = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provide(effect, mcpCaller)

/**
 * The MCP server's guest-access check: each target VM's agent_access, read from its vm.toml on
 * this very call, must be at least the level the operation needs for this input. A VM whose
 * vm.toml is missing or broken fails the check with that error (never open). It binds a caller
 * that enforces access levels (the MCP caller, under `asAgent`).
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
