/**
 * The provider's waits run on Effect's Clock, so a TestClock decides when they give up: a process
 * whose command line carries the VM's `-pidfile` stands in for a QEMU that never finishes.
 */
import { spawn, type ChildProcess } from "node:child_process"
import { mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Fiber, Option, TestClock, TestContext } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { VmRef } from "@stoat/core"
import { vmFiles } from "../src/argv.js"
import { awaitSshd, waitForExit } from "../src/lifecycle.js"

let root: string
let vm: VmRef
let child: ChildProcess

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "stoat-waits-"))
  vm = { name: "stuck", dir: root }
  const files = vmFiles(vm.dir)
  child = spawn(
    process.execPath,
    ["-e", "setInterval(() => {}, 1000); console.log('up')", "--", "-pidfile", files.pidfile],
    { stdio: ["ignore", "pipe", "ignore"] }
  )
  await new Promise((resolve) => child.stdout!.once("data", resolve))
  await writeFile(files.pidfile, `${child.pid}\n`)
  // A guest that says it will print the sshd line, and never does.
  await writeFile(files.boot, JSON.stringify({ console_offset: 0, sshd_marker: "stoat: sshd listening" }))
  await writeFile(files.console, "booting...\n")
})

afterAll(async () => {
  child.kill("SIGKILL")
  await rm(root, { recursive: true, force: true })
})

/**
 * Moves the TestClock a second at a time until the wait ends. The ticks take far less real time
 * than the waits' timeouts, so a wait on the wall clock fails here rather than ending on its own.
 */
const underTestClock = <A>(wait: Effect.Effect<A>) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const fiber = yield* Effect.fork(wait)
      for (let second = 0; second < 600; second++) {
        const done = yield* Fiber.poll(fiber)
        if (Option.isSome(done)) return yield* Fiber.join(fiber)
        yield* TestClock.adjust("1 second")
        // Let the wait's real file and /proc reads finish between ticks.
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 2)))
      }
      return yield* Effect.dieMessage("the wait did not end when the TestClock passed its deadline")
    }).pipe(Effect.provide(TestContext.TestContext))
  )

describe("waits on Effect's Clock", () => {
  it("awaitSshd gives up at its timeout while the VM runs and its console stays silent", async () => {
    expect(await underTestClock(awaitSshd(vm, 30_000))).toBe(false)
  }, 120_000)

  it("waitForExit gives up at its timeout while the process still runs the VM", async () => {
    expect(await underTestClock(waitForExit(child.pid!, vm, 60_000))).toBe(false)
  }, 120_000)
})
