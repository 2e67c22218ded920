import { Context, Effect, Layer, Schema } from "effect"
import { AccessDenied } from "../errors.js"
import { Caller } from "./caller.js"

/** What MCP agents may do with a VM, each level including the ones before it. */
export const AccessLevel = Schema.Literal("none", "observe", "manage", "exec")
export type AccessLevel = typeof AccessLevel.Type
export const ACCESS_ORDER: ReadonlyArray<AccessLevel> = ["none", "observe", "manage", "exec"]

const below = (level: AccessLevel, needed: AccessLevel) => ACCESS_ORDER.indexOf(level) < ACCESS_ORDER.indexOf(needed)

/** The policy a caller implies. */
const policyFor = (caller: Caller["Type"]): AccessPolicy["Type"] => ({
  requireAccessChange: (vm, current, wanted) =>
    caller.mayRaiseAccess || !below(current, wanted)
      ? Effect.void
      : Effect.fail(
          new AccessDenied({
            message: `update may only lower agent_access (now ${current}); ask a person to raise it with stoat update`,
            subject: vm
          })
        ),
  requireGranted: (vm, granted, needed, message) =>
    caller.enforcesAccess && below(granted, needed)
      ? Effect.fail(new AccessDenied({ message, subject: vm }))
      : Effect.void,
  overridesMemoryFloor: (requested) => requested && caller.mayOverrideMemoryFloor,
  memoryFloorHint: (fix) =>
    caller.mayOverrideMemoryFloor ? `${fix} or pass -y` : `${fix}, or ask a person to run stoat up -y`
})

/** What the current `Caller` may do: the one place frontend policy is decided. */
export class AccessPolicy extends Context.Tag("stoat/AccessPolicy")<
  AccessPolicy,
  {
    /** access_denied when the caller may not raise `vm`'s agent_access from `current` to `wanted`. */
    readonly requireAccessChange: (
      vm: string,
      current: AccessLevel,
      wanted: AccessLevel
    ) => Effect.Effect<void, AccessDenied>
    /** access_denied (the message given) when the caller is bound by access levels and `granted` is below `needed`. */
    readonly requireGranted: (
      vm: string,
      granted: AccessLevel,
      needed: AccessLevel,
      message: string
    ) => Effect.Effect<void, AccessDenied>
    /** Whether a requested override of the host-memory floor (`force`) counts for this caller. */
    readonly overridesMemoryFloor: (requested: boolean) => boolean
    /** What to tell the caller when the host lacks memory, after `fix` (what they can change themselves). */
    readonly memoryFloorHint: (fix: string) => string
  }
>() {
  static readonly make = Effect.map(Caller, policyFor)

  static readonly layer = Layer.effect(AccessPolicy, AccessPolicy.make)
}

/** A caller together with the policy it implies, as a layer (tests and composed stacks). */
export const callerLayer = (caller: Layer.Layer<Caller>) => Layer.provideMerge(AccessPolicy.layer, caller)

/**
 * The same as a context, what a frontend provides for each call: providing a layer builds it
 * anew every time, which cost an MCP call about half a millisecond.
 */
export const callerContext = (caller: Caller["Type"]): Context.Context<Caller | AccessPolicy> =>
  Context.make(Caller, caller).pipe(Context.add(AccessPolicy, policyFor(caller)))
