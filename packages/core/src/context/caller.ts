import { Context, Layer } from "effect"

/**
 * Who is calling, as policy data: each frontend provides one, and handlers ask `AccessPolicy`
 * rather than testing frontend names.
 */
export class Caller extends Context.Tag("stoat/Caller")<
  Caller,
  {
    /** The frontend, as stoat.log names it. */
    readonly kind: "cli" | "mcp" | "toolkit"
    /** A person may raise a VM's agent_access; an agent may only lower it. */
    readonly mayRaiseAccess: boolean
    /** A person may start a VM the host lacks free memory for (`up -y`); an agent never can. */
    readonly mayOverrideMemoryFloor: boolean
    /** Guest access levels (agent_access) bind this caller. */
    readonly enforcesAccess: boolean
    /** A person at a terminal, who can see a QEMU window. */
    readonly interactive: boolean
  }
>() {}

/** The callers as values, for `callerContext`; the layers below wrap the same values. */
export const CALLERS = {
  /** A person at the stoat CLI; `interactive` when stdin is a terminal and the output is not --json. */
  cli: (options: { readonly interactive: boolean }): Caller["Type"] => ({
    kind: "cli",
    mayRaiseAccess: true,
    mayOverrideMemoryFloor: true,
    enforcesAccess: false,
    interactive: options.interactive
  }),
  mcp: {
    kind: "mcp",
    mayRaiseAccess: false,
    mayOverrideMemoryFloor: false,
    enforcesAccess: true,
    interactive: false
  } satisfies Caller["Type"],
  toolkit: {
    kind: "toolkit",
    mayRaiseAccess: true,
    mayOverrideMemoryFloor: false,
    enforcesAccess: false,
    interactive: false
  } satisfies Caller["Type"]
} as const

export const cliCaller = (options: { readonly interactive: boolean }) => Layer.succeed(Caller, CALLERS.cli(options))

export const CliCaller = cliCaller({ interactive: false })

export const McpCaller = Layer.succeed(Caller, CALLERS.mcp)

export const ToolkitCaller = Layer.succeed(Caller, CALLERS.toolkit)
