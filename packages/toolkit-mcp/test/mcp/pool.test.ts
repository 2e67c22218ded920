import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { PoolBusy, ToolPool, WorkerFailed, type PoolOptions } from "../../src/mcp/pool.js"

/**
 * The pool (piscina underneath) with real worker threads running a small stand-in for the tool
 * worker: "echo" answers with its argv, "spin" never ends, "oom" allocates until V8 gives up,
 * "throw" fails.
 */
const WORKER = `
import { existsSync } from "node:fs"
// With a file "hang" next to it, a new worker never finishes starting.
if (existsSync(new URL("./hang", import.meta.url))) await new Promise(() => {})
export const warm = () => undefined
export default (job) => {
  if (job.id === "spin") for (;;) {}
  if (job.id === "oom") { const hoard = []; for (;;) hoard.push(new Array(1e6).fill(hoard.length)) }
  if (job.id === "throw") return { type: "failed", message: "it broke" }
  return { type: "done", outcome: { code: 0, stdout: job.argv.join(" "), stderr: "" } }
}
`

let dir: string
let pool: ToolPool | undefined
const never = new AbortController().signal

const makePool = (options: Partial<PoolOptions> = {}): ToolPool =>
  (pool = new ToolPool({
    script: pathToFileURL(join(dir, "worker.mjs")),
    workerData: null,
    size: 1,
    maxQueued: 2,
    heapLimitMb: 64,
    ...options
  }))

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "toolkit-pool-"))
  writeFileSync(join(dir, "worker.mjs"), WORKER)
})
afterEach(async () => {
  await pool?.close()
  pool = undefined
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe("ToolPool", () => {
  it("runs jobs on its workers, one at a time each, the rest in order as workers free up", async () => {
    const p = makePool({ size: 2, maxQueued: 10 })
    await p.prewarm()
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, (_, i) => p.run({ id: "echo", argv: [String(i)] }, never))
    )
    expect(outcomes.map((o) => o.stdout)).toEqual(["0", "1", "2", "3", "4", "5", "6", "7"])
  })

  it("aborting a running job terminates its worker and rejects with the signal's reason; the next job runs", async () => {
    const p = makePool()
    await p.prewarm()
    const controller = new AbortController()
    const spinning = p.run({ id: "spin", argv: [] }, controller.signal)
    const next = p.run({ id: "echo", argv: ["after"] }, never)
    controller.abort(new Error("stop it"))
    await expect(spinning).rejects.toThrow("stop it")
    expect((await next).stdout).toBe("after")
  })

  it("a job goes to a ready worker, not to the replacement of a terminated one that is still starting", async () => {
    const p = makePool({ size: 2 })
    await p.prewarm()
    writeFileSync(join(dir, "hang"), "")
    try {
      const controller = new AbortController()
      const spinning = p.run({ id: "spin", argv: [] }, controller.signal)
      controller.abort(new Error("stop"))
      await expect(spinning).rejects.toThrow("stop")
      expect((await p.run({ id: "echo", argv: ["served"] }, never)).stdout).toBe("served")
    } finally {
      rmSync(join(dir, "hang"))
    }
  })

  it("aborting a queued job removes it without touching the running one", async () => {
    const p = makePool({ maxQueued: 5 })
    const hold = new AbortController()
    const spinning = p.run({ id: "spin", argv: [] }, hold.signal)
    spinning.catch(() => undefined)
    const waiting = new AbortController()
    const queued = p.run({ id: "echo", argv: ["never"] }, waiting.signal)
    const later = p.run({ id: "echo", argv: ["later"] }, never)
    waiting.abort(new Error("not needed"))
    await expect(queued).rejects.toThrow("not needed")
    hold.abort(new Error("done"))
    expect((await later).stdout).toBe("later")
  })

  it("refuses a job with PoolBusy once the queue is full", async () => {
    const p = makePool({ maxQueued: 2 })
    const hold = new AbortController()
    const held = [0, 1, 2].map(() => p.run({ id: "spin", argv: [] }, hold.signal).catch(() => undefined))
    await expect(p.run({ id: "echo", argv: [] }, never)).rejects.toBeInstanceOf(PoolBusy)
    hold.abort(new Error("done"))
    await Promise.all(held)
  })

  it("a job that runs out of memory fails alone with WorkerFailed; a new worker takes the next job", async () => {
    const p = makePool()
    const failed = p.run({ id: "oom", argv: [] }, never)
    await expect(failed).rejects.toBeInstanceOf(WorkerFailed)
    await expect(failed).rejects.toThrow("the command ran out of memory (a tool call may use 64 MB)")
    expect((await p.run({ id: "echo", argv: ["alive"] }, never)).stdout).toBe("alive")
  })

  it("a job the worker reports as failed rejects with its message and leaves the worker in use", async () => {
    const p = makePool()
    await expect(p.run({ id: "throw", argv: [] }, never)).rejects.toThrow("it broke")
    expect((await p.run({ id: "echo", argv: ["same"] }, never)).stdout).toBe("same")
  })

  it("a worker that cannot start fails prewarm, and fails calls instead of being started again forever", async () => {
    await expect(makePool({ script: pathToFileURL(join(dir, "missing.mjs")) }).prewarm()).rejects.toBeInstanceOf(
      WorkerFailed
    )
    await pool!.close()
    const broken = makePool({ script: pathToFileURL(join(dir, "missing.mjs")), maxQueued: 5 })
    const calls = [1, 2, 3].map(() => broken.run({ id: "echo", argv: [] }, never))
    for (const call of calls) await expect(call).rejects.toThrow(/^a tool worker did not start: /)
  })

  it("close rejects what is still running or waiting", async () => {
    const p = makePool()
    const running = expect(p.run({ id: "spin", argv: [] }, never)).rejects.toThrow("the server is shutting down")
    const queued = expect(p.run({ id: "echo", argv: [] }, never)).rejects.toThrow("the server is shutting down")
    await p.close()
    await Promise.all([running, queued])
    await expect(p.run({ id: "echo", argv: [] }, never)).rejects.toThrow("the server is shutting down")
  })
})
