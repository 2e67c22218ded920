import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { WorkerPool } from "../../src/pool/worker-pool.js"

/** A worker whose "count" task counts in shared memory until it is stopped. */
const WORKER = `
export const warm = () => undefined
export default (task) => {
  const counter = new Int32Array(task.counter)
  if (task.forever) for (;;) Atomics.add(counter, 0, 1)
  return Atomics.add(counter, 0, 1) + 1
}
`

interface CountTask {
  readonly counter: SharedArrayBuffer
  readonly forever: boolean
}

let dir: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "toolkit-worker-pool-"))
  writeFileSync(join(dir, "count.mjs"), WORKER)
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Resolves once `read()` has stayed the same across a few event-loop turns spaced by `ms`, or gives up. */
const settles = async (read: () => number, ms = 100, tries = 100): Promise<boolean> => {
  let last = read()
  for (let i = 0; i < tries; i++) {
    await new Promise((resolve) => setTimeout(resolve, ms))
    const now = read()
    if (now === last) return true
    last = now
  }
  return false
}

describe("WorkerPool", () => {
  it("cancelling a running task through its AbortSignal stops the work itself and frees the worker for the next task", async () => {
    const pool = new WorkerPool<CountTask, number>({
      script: pathToFileURL(join(dir, "count.mjs")),
      size: 1,
      maxQueued: 4,
      what: "test"
    })
    try {
      await pool.prewarm()
      const counter = new SharedArrayBuffer(4)
      const count = new Int32Array(counter)
      const controller = new AbortController()
      const running = pool.run({ counter, forever: true }, controller.signal)
      running.catch(() => undefined)
      // The task is running: the counter moves.
      while (Atomics.load(count, 0) === 0) await new Promise((resolve) => setTimeout(resolve, 10))
      controller.abort(new Error("no longer wanted"))
      await expect(running).rejects.toThrow("no longer wanted")
      // Terminated, not abandoned: the counter stops for good.
      expect(await settles(() => Atomics.load(count, 0))).toBe(true)
      const stoppedAt = Atomics.load(count, 0)
      const fresh = new SharedArrayBuffer(4)
      expect(await pool.run({ counter: fresh, forever: false }, new AbortController().signal)).toBe(1)
      expect(Atomics.load(count, 0)).toBe(stoppedAt)
    } finally {
      await pool.close()
    }
  })
})
