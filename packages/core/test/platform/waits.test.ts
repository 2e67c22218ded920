import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Duration, Effect, Exit, Fiber, Option, Ref, Schedule, TestClock } from "effect"
import { Timeout } from "../../src/errors.js"
import { makeLocks } from "../../src/platform/locks.js"
import { pollUntil, pollWithin } from "../../src/platform/poll.js"
import { createVm, startVm, waitVm } from "../../src/operations/index.js"
import { runOperation } from "../../src/operations/run.js"
import { FakeGuestState, FakeHypervisorState, testLayer } from "../../src/testing/index.js"

/** Lets real I/O (fs, SQLite) of a forked fiber progress between TestClock steps. */
const settle = Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 1)))

/**
 * Advances the TestClock in `step`s until `fiber` is done; returns its exit and the test time at
 * which it was done. Nothing here waits in real time beyond letting I/O settle.
 */
const driveUntilDone = <A, E>(fiber: Fiber.RuntimeFiber<A, E>, step: Duration.DurationInput, maxSteps: number) =>
  Effect.gen(function* () {
    for (let i = 0; i < maxSteps; i++) {
      const done = yield* Fiber.poll(fiber)
      if (Option.isSome(done)) return { exit: done.value, at: yield* Clock.currentTimeMillis }
      yield* settle
      yield* TestClock.adjust(step)
    }
    return yield* Effect.die(new Error("the wait never ended"))
  })

const tempDir = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "stoat-waits-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

describe("pollWithin", () => {
  it.effect("answers the value that met the condition, or none at its bound and not before", () =>
    Effect.gen(function* () {
      const looks = yield* Ref.make(0)
      const look = Ref.updateAndGet(looks, (n) => n + 1)
      const met = yield* Effect.fork(
        pollWithin(look, { schedule: Schedule.spaced("1 second"), until: (n) => n === 2, within: "1 minute" })
      )
      yield* TestClock.adjust("1 second")
      expect(yield* Fiber.join(met)).toEqual(Option.some(2))
      const never = yield* Effect.fork(
        pollWithin(look, { schedule: Schedule.spaced("1 second"), until: () => false, within: "10 seconds" })
      )
      yield* TestClock.adjust("9 seconds")
      expect(Option.isNone(yield* Fiber.poll(never))).toBe(true)
      yield* TestClock.adjust("1 second")
      expect(yield* Fiber.join(never)).toEqual(Option.none())
    })
  )

  it.effect("a failure of the check is still a failure", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(
        pollWithin(Effect.fail("broken" as const), {
          schedule: Schedule.spaced("1 second"),
          until: () => true,
          within: "1 minute"
        })
      )
      expect(exit).toEqual(Exit.fail("broken"))
    })
  )
})

describe("pollUntil", () => {
  it.effect("looks on its schedule and stops at the first value that meets the condition", () =>
    Effect.gen(function* () {
      const looks = yield* Ref.make(0)
      const fiber = yield* Effect.fork(
        pollUntil(
          Ref.updateAndGet(looks, (n) => n + 1),
          {
            schedule: Schedule.spaced("1 second"),
            until: (n) => n === 3,
            within: "1 minute",
            onTimeout: () => "late" as const
          }
        )
      )
      yield* TestClock.adjust("1 second")
      yield* TestClock.adjust("1 second")
      expect(yield* Fiber.join(fiber)).toBe(3)
      expect(yield* Ref.get(looks)).toBe(3)
    })
  )

  it.effect("fails at its bound, and not before", () =>
    Effect.gen(function* () {
      const fiber = yield* Effect.fork(
        pollUntil(Effect.succeed(false), {
          schedule: Schedule.spaced("1 minute"),
          until: (v) => v,
          within: "10 minutes",
          onTimeout: () => "late" as const
        })
      )
      yield* TestClock.adjust(Duration.subtract(Duration.minutes(10), Duration.millis(1)))
      expect(Option.isNone(yield* Fiber.poll(fiber))).toBe(true)
      yield* TestClock.adjust("1 millis")
      expect(yield* Effect.flip(Fiber.join(fiber))).toBe("late")
    })
  )
})

describe("waits driven by the clock", () => {
  it.scoped(
    "wait until stopped on a VM that keeps running answers timeout at timeout_seconds, with no real waiting",
    () =>
      Effect.gen(function* () {
        const root = yield* tempDir
        const hypervisor = new FakeHypervisorState()
        const layer = testLayer({ root, hypervisor, guest: new FakeGuestState() })
        const call = <I, O, R>(operation: Parameters<typeof runOperation<I, O, R>>[0], input: unknown) =>
          Effect.provide(
            runOperation(operation, input, { requestId: "test" }) as Effect.Effect<O, unknown, never>,
            layer as never
          )
        yield* call(createVm, { name: "web", image: "tiny" })
        yield* call(startVm, { vm: "web" })
        const started = yield* Clock.currentTimeMillis
        const fiber = yield* Effect.fork(call(waitVm, { vm: "web", until: "stopped", timeout_seconds: 600 }))
        const { exit, at } = yield* driveUntilDone(fiber, "20 seconds", 200)
        expect(Exit.isFailure(exit)).toBe(true)
        expect(yield* Effect.flip(exit)).toMatchObject({ _tag: "Timeout", code: "timeout", subject: "web" })
        // Bounded by the requested 600 s of (test) time: not earlier, and not long after.
        expect(at - started).toBeGreaterThanOrEqual(600_000)
        expect(at - started).toBeLessThanOrEqual(640_000)
      })
  )

  it.scoped("a lock held elsewhere times out at the lock wait, retrying with backoff meanwhile", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const locks = makeLocks(join(dir, ".lock"), (vm) => join(dir, vm, ".vm.lock"), Duration.minutes(2))
      const holding = yield* Effect.makeLatch(false)
      const release = yield* Effect.makeLatch(false)
      const holder = yield* Effect.fork(locks.withRootLock(Effect.zipRight(holding.open, release.await)))
      yield* holding.await
      const started = yield* Clock.currentTimeMillis
      const waiter = yield* Effect.fork(locks.withRootLock(Effect.succeed("got it")))
      const { exit, at } = yield* driveUntilDone(waiter, "1 second", 500)
      expect(yield* Effect.flip(exit)).toBeInstanceOf(Timeout)
      expect(at - started).toBeGreaterThanOrEqual(120_000)
      expect(at - started).toBeLessThan(122_000)
      // Once the holder lets go, the lock is free again.
      yield* release.open
      yield* Fiber.join(holder)
      expect(yield* locks.withRootLock(Effect.succeed("free"))).toBe("free")
    })
  )
})
