/** runChild, the one way @stoat/qemu runs programs: results, watchers, limits and interruption, with real processes. */
import { PassThrough } from "node:stream"
import { Effect, Either, Fiber, Schedule } from "effect"
import { describe, expect, it } from "vitest"
import { isProcessAlive, pollUntil } from "@stoat/core"
import { runChild } from "../src/child.js"

const node = (code: string) => [process.execPath, ["-e", code]] as const

describe("runChild", () => {
  it("collects both streams and the exit status, and feeds stdin", async () => {
    const [file, args] = node(
      "process.stdin.pipe(process.stdout); process.stderr.write('warn'); process.stdin.on('end', () => process.exit(3))"
    )
    const exit = await Effect.runPromise(runChild(file, args, { input: "hello" }))
    expect(exit).toMatchObject({ code: 3, stderr: "warn", timedOut: false, stopped: false, overflowed: false })
    expect(exit.stdout.toString()).toBe("hello")
  })

  it("pipes one program's output into another's input", async () => {
    const pipe = new PassThrough()
    const [producer, produce] = node("process.stdout.write('x'.repeat(1 << 20))")
    const [consumer, count] = node(
      "let n = 0; process.stdin.on('data', (c) => (n += c.length)); process.stdin.on('end', () => console.log(n))"
    )
    const [, counted] = await Effect.runPromise(
      Effect.all([runChild(producer, produce, { stdout: pipe }), runChild(consumer, count, { input: pipe })], {
        concurrency: 2
      })
    )
    expect(counted.stdout.toString().trim()).toBe(String(1 << 20))
  })

  it("a watcher's stop, the deadline and the output limit each kill it and say which", async () => {
    const [file, args] = node("console.log('MARK'); setInterval(() => process.stdout.write('.'.repeat(4096)), 5)")
    const stopped = await Effect.runPromise(
      runChild(file, args, { onStdout: (chunk) => (chunk.includes("MARK") ? "stop" : undefined) })
    )
    expect(stopped).toMatchObject({ stopped: true, signal: "SIGKILL" })
    const late = await Effect.runPromise(runChild(file, args, { stdout: "ignore", timeoutMs: 300 }))
    expect(late).toMatchObject({ timedOut: true, signal: "SIGKILL" })
    const flood = await Effect.runPromise(runChild(file, args, { maxBytes: 64 * 1024 }))
    expect(flood).toMatchObject({ overflowed: true, signal: "SIGKILL" })
  })

  it("fails only when the program cannot run, saying whether it is missing", async () => {
    const missing = await Effect.runPromise(Effect.either(runChild("/nonexistent/program", [])))
    expect(Either.isLeft(missing) && missing.left.missing).toBe(true)
  })

  it("kills the program when interrupted", async () => {
    let pid = 0
    const [file, args] = node("console.log(process.pid); setInterval(() => {}, 1000)")
    await Effect.runPromise(
      Effect.gen(function* () {
        const started = yield* Effect.makeLatch(false)
        const fiber = yield* Effect.fork(
          runChild(file, args, {
            onStdout: (chunk) => void ((pid = Number(chunk.toString())), Effect.runSync(started.open))
          })
        )
        yield* started.await
        yield* Fiber.interrupt(fiber)
      })
    )
    expect(pid).toBeGreaterThan(0)
    // Killed, it is gone once Node reaps it: looked at until then, for at most 30 s.
    const gone = await Effect.runPromise(
      pollUntil(
        Effect.sync(() => !isProcessAlive(pid)),
        { schedule: Schedule.spaced("20 millis"), until: (dead) => dead, within: "30 seconds", onTimeout: () => false }
      ).pipe(Effect.merge)
    )
    expect(gone).toBe(true)
  })
})
