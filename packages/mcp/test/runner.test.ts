import { getEventListeners } from "node:events"
import { Deferred, Effect, Exit, Layer, ManagedRuntime } from "effect"
import { describe, expect, it } from "vitest"
import { Caller, CALLERS } from "@stoat/core"
import { agentRunner } from "../src/policy/access.js"

const runner = () => {
  const runtime = ManagedRuntime.make(Layer.empty)
  return { run: agentRunner(runtime), dispose: () => runtime.dispose() }
}

describe("agentRunner: how one call's work runs", () => {
  it("runs as the MCP caller, whatever the runtime holds", async () => {
    const { run, dispose } = runner()
    try {
      const exit = await run(Effect.map(Caller, (caller) => caller.kind))
      expect(exit).toStrictEqual(Exit.succeed(CALLERS.mcp.kind))
    } finally {
      await dispose()
    }
  })

  it("answers work that finishes without waiting, and leaves no listener on the call's signal", async () => {
    const { run, dispose } = runner()
    try {
      const controller = new AbortController()
      const exit = await run(Effect.succeed(7).pipe(Effect.map((n) => n * 6)), { signal: controller.signal })
      expect(exit).toStrictEqual(Exit.succeed(42))
      expect(getEventListeners(controller.signal, "abort")).toHaveLength(0)
    } finally {
      await dispose()
    }
  })

  it("interrupts work still running when the signal aborts, runs its finalizers, and lets go of the signal", async () => {
    const { run, dispose } = runner()
    try {
      const controller = new AbortController()
      const released: string[] = []
      const started = await Effect.runPromise(Deferred.make<void>())
      const pending = run(
        Effect.acquireUseRelease(
          Effect.succeed("held"),
          () => Effect.zipRight(Deferred.succeed(started, undefined), Effect.never),
          (what) => Effect.sync(() => released.push(what))
        ),
        { signal: controller.signal }
      )
      await Effect.runPromise(Deferred.await(started))
      expect(getEventListeners(controller.signal, "abort")).toHaveLength(1)
      controller.abort()
      const exit = await pending
      expect(Exit.isInterrupted(exit)).toBe(true)
      expect(released).toEqual(["held"])
      expect(getEventListeners(controller.signal, "abort")).toHaveLength(0)
    } finally {
      await dispose()
    }
  })

  it("interrupts waiting work at once when the signal had already aborted", async () => {
    const { run, dispose } = runner()
    try {
      const controller = new AbortController()
      controller.abort()
      const exit = await run(Effect.never, { signal: controller.signal })
      expect(Exit.isInterrupted(exit)).toBe(true)
    } finally {
      await dispose()
    }
  })
})
