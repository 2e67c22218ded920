/** The QMP client against a real, machine-less QEMU (`-M none`): cheap to start, speaks full QMP. */
import { spawn, type ChildProcess } from "node:child_process"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Either } from "effect"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { qmpConnect, qmpExecute, withQmp } from "../src/qmp.js"
import { requireQemu } from "./support.js"

const bareQemu = (socket: string): ChildProcess =>
  spawn(
    "qemu-system-x86_64",
    ["-M", "none", "-display", "none", "-nodefaults", "-qmp", `unix:${socket},server=on,wait=off`],
    { stdio: "ignore" }
  )

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) =>
    child.exitCode !== null ? resolve(child.exitCode) : child.once("exit", (code) => resolve(code))
  )

describe("QMP client", () => {
  let dir: string
  let socket: string
  let qemu: ChildProcess | undefined

  beforeAll(async () => {
    requireQemu()
    dir = await mkdtemp(join(tmpdir(), "stoat-qmp-"))
  })
  afterEach(async () => {
    if (qemu && qemu.exitCode === null) {
      qemu.kill("SIGKILL")
      await exited(qemu)
    }
    qemu = undefined
  })
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  it("waits for the socket to appear, negotiates and runs commands", async () => {
    socket = join(dir, "a.sock")
    // Connect first: the client retries while QEMU is still creating the socket.
    const pending = Effect.runPromise(
      withQmp(socket, (qmp) =>
        Effect.all({
          version: Effect.succeed(qmp.version),
          status: qmp.execute<{ status: string; running: boolean }>("query-status"),
          name: qmp.execute<Record<string, unknown>>("query-name")
        })
      )
    )
    await new Promise((resolve) => setTimeout(resolve, 200))
    qemu = bareQemu(socket)
    const result = await pending
    expect(result.version.major).toBeGreaterThanOrEqual(7)
    expect(typeof result.status.status).toBe("string")
    expect(result.name).toEqual({})
  })

  it("reports a QMP error reply as monitor_rejected and keeps the connection usable", async () => {
    socket = join(dir, "b.sock")
    qemu = bareQemu(socket)
    const result = await Effect.runPromise(
      withQmp(socket, (qmp) =>
        Effect.all([
          Effect.either(qmp.execute("no-such-command")),
          Effect.either(qmp.execute("device_del", { id: "nothing" })),
          qmp.execute("query-version")
        ])
      )
    )
    const [unknown, bad, version] = result
    expect(Either.isLeft(unknown) && unknown.left.code).toBe("monitor_rejected")
    expect(Either.isLeft(unknown) && unknown.left.message).toMatch(/no-such-command/)
    expect(Either.isLeft(bad) && bad.left.code).toBe("monitor_rejected")
    expect(version).toHaveProperty("qemu")
  })

  it("collects events and sees QEMU close the connection when it quits", async () => {
    socket = join(dir, "c.sock")
    qemu = bareQemu(socket)
    const events = await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const qmp = yield* qmpConnect(socket)
          yield* qmp.execute("stop")
          const stop = yield* qmp.waitForEvent("STOP", 5_000)
          yield* qmp.execute("cont")
          yield* qmp.waitForEvent((event) => event.event === "RESUME", 5_000)
          yield* qmp.execute("quit")
          yield* qmp.closed
          return { stop, all: yield* qmp.events }
        })
      )
    )
    expect(events.stop.timestamp?.seconds).toBeGreaterThan(0)
    expect(events.all.map((event) => event.event)).toEqual(expect.arrayContaining(["STOP", "RESUME", "SHUTDOWN"]))
    expect(await exited(qemu)).toBe(0)
  })

  it("fails monitor_unreachable when nothing listens, or another client holds the monitor", async () => {
    const none = await Effect.runPromise(
      Effect.either(
        qmpExecute(join(dir, "missing.sock"), "query-status", undefined, { connectTimeoutMs: 300, subject: "vm1" })
      )
    )
    expect(Either.isLeft(none) && none.left.code).toBe("monitor_unreachable")
    expect(Either.isLeft(none) && none.left.subject).toBe("vm1")

    socket = join(dir, "d.sock")
    qemu = bareQemu(socket)
    const started = performance.now()
    const second = await Effect.runPromise(
      withQmp(socket, () => Effect.either(qmpExecute(socket, "query-status", undefined, { connectTimeoutMs: 1_000 })))
    )
    expect(Either.isLeft(second) && second.left.code).toBe("monitor_unreachable")
    expect(Either.isLeft(second) && second.left.message).toMatch(/greeting/)
    expect(performance.now() - started).toBeLessThan(5_000)
    // Once the first client is gone the monitor serves the next one.
    expect(await Effect.runPromise(qmpExecute(socket, "query-status"))).toHaveProperty("status")
  })

  it("times a command out as monitor_unreachable", async () => {
    socket = join(dir, "e.sock")
    qemu = bareQemu(socket)
    const frozen = qemu
    const result = await Effect.runPromise(
      withQmp(socket, (qmp) =>
        // A stopped process never answers.
        Effect.zipRight(
          Effect.sync(() => frozen.kill("SIGSTOP")),
          Effect.either(qmp.execute("query-status", undefined, { timeoutMs: 300 }))
        ).pipe(Effect.ensuring(Effect.sync(() => frozen.kill("SIGCONT"))))
      )
    )
    expect(Either.isLeft(result) && result.left.code).toBe("monitor_unreachable")
    expect(Either.isLeft(result) && result.left.message).toMatch(/no answer to query-status/)
  })
})
