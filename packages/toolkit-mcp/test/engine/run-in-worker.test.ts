import { existsSync } from "node:fs"
import fc from "fast-check"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { BrainfuckSyntaxError, compileBrainfuck } from "../../src/engine/brainfuck.js"
import { referenceRun } from "./reference-interpreter.js"
import {
  BrainfuckAbortError,
  closeBrainfuckWorkers,
  resolveBrainfuckWorker,
  runBrainfuck,
  setBrainfuckWorkerUrl
} from "../../src/engine/run-in-worker.js"

const HELLO =
  "++++++++[>++++[>++>+++>+++>+<<<<-]>+>+>->>+[<]<-]>>.>---.+++++++..+++.>>.<-.<.+++.------.--------.>>+.>++."
const NO_INPUT = new Uint8Array(0)

/** Busy work that the optimizer cannot shortcut: three counting loops around a copy loop (~16M iterations). */
const BUSY = "-[>-[>-[>-[>+<-]<-]<-]<-]<<<<"

async function collect(
  source: string,
  opts: { input?: Uint8Array; inlineBudgetMs?: number; signal?: AbortSignal } = {}
): Promise<Buffer> {
  const chunks: Uint8Array[] = []
  await runBrainfuck(source, {
    input: opts.input ?? NO_INPUT,
    onOutput: (c) => chunks.push(c),
    ...(opts.inlineBudgetMs !== undefined ? { inlineBudgetMs: opts.inlineBudgetMs } : {}),
    ...(opts.signal ? { signal: opts.signal } : {})
  })
  return Buffer.concat(chunks)
}

afterAll(async () => {
  await closeBrainfuckWorkers()
})

describe("runBrainfuck", () => {
  it("runs hello world on the calling thread", async () => {
    expect((await collect(HELLO)).toString()).toBe("Hello World!\n")
  })

  it("runs hello world in a worker", async () => {
    expect((await collect(HELLO, { inlineBudgetMs: 0 })).toString()).toBe("Hello World!\n")
    // and again on the pooled worker
    expect((await collect(HELLO, { inlineBudgetMs: 0 })).toString()).toBe("Hello World!\n")
  })

  it("accepts a compiled program and passes input", async () => {
    const chunks: Uint8Array[] = []
    await runBrainfuck(compileBrainfuck(",[.,]"), {
      input: Buffer.from("echo"),
      onOutput: (c) => chunks.push(c),
      inlineBudgetMs: 0
    })
    expect(Buffer.concat(chunks).toString()).toBe("echo")
  })

  it("rejects unmatched brackets with BrainfuckSyntaxError", async () => {
    await expect(runBrainfuck("+[", { input: NO_INPUT, onOutput: () => {} })).rejects.toBeInstanceOf(
      BrainfuckSyntaxError
    )
  })

  it("moves a long program to a worker without repeating or losing output", async () => {
    // 9000 bytes (more than one 8 KiB chunk, so some are delivered before the move), busy work, more output.
    const nines = "+++++++++[>++++++++++[>++++++++++[>>+++++++[<.>-]<<-]<-]<-]" // 9*10*10*7 = 6300 prints
    const src = "++++++[>>>>>++++++++++<<<<<-]>>>>>+++++<<<<<" + nines + ">>>>>+" + nines + BUSY + ">>>>>>>>>+.-"
    const direct = await collect(src, { inlineBudgetMs: 100_000 })
    const moved = await collect(src, { inlineBudgetMs: 1 })
    expect(direct.length).toBeGreaterThan(8192)
    expect(moved.length).toBe(direct.length)
    expect(moved.equals(direct)).toBe(true)
  })

  it("streams output from a worker before the program ends", async () => {
    const times: number[] = []
    const start = Date.now()
    const src = "+++++++[>++++++++++<-]>-." + BUSY + BUSY + BUSY + "."
    await runBrainfuck(src, {
      input: NO_INPUT,
      inlineBudgetMs: 0,
      onOutput: (c) => times.push(Date.now() - start, c.length)
    })
    const finished = Date.now() - start
    expect(times.length).toBeGreaterThanOrEqual(4)
    // The first byte arrived well before the end (the drain runs every 20 ms).
    expect(times[0]).toBeLessThan(finished)
  })

  it("cancels an endless loop in a worker with an AbortSignal", async () => {
    const ac = new AbortController()
    const run = collect("+[]", { signal: ac.signal, inlineBudgetMs: 0 })
    setTimeout(() => ac.abort(), 50)
    const err = await run.catch((e: unknown) => e)
    expect(err).toBeInstanceOf(BrainfuckAbortError)
    expect((err as Error).name).toBe("AbortError")
  })

  it("cancels an endless loop after the in-thread budget ran out", async () => {
    const err = await collect("+[]", { signal: AbortSignal.timeout(150) }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(BrainfuckAbortError)
    expect((err as Error).message).toBe("Brainfuck program timed out")
    expect(((err as Error).cause as Error).name).toBe("TimeoutError")
  })

  it("rejects at once when the signal is already aborted", async () => {
    const ac = new AbortController()
    ac.abort()
    await expect(collect(HELLO, { signal: ac.signal })).rejects.toBeInstanceOf(BrainfuckAbortError)
  })

  it("stops an endless printer from the output callback (backpressure keeps memory bounded)", async () => {
    const ac = new AbortController()
    let total = 0
    const err = await runBrainfuck("+[.]", {
      input: NO_INPUT,
      signal: ac.signal,
      onOutput: (c) => {
        total += c.length
        if (total > 2_000_000) ac.abort()
      }
    }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(BrainfuckAbortError)
    expect(total).toBeGreaterThan(2_000_000)
  })

  it("fails the run when the output callback throws", async () => {
    const boom = new Error("sink closed")
    await expect(
      runBrainfuck("+[.]", {
        input: NO_INPUT,
        inlineBudgetMs: 0,
        onOutput: () => {
          throw boom
        }
      })
    ).rejects.toBe(boom)
  })

  it("agrees with the reference interpreter when run in a worker (ring output)", async () => {
    const body = fc.array(fc.constantFrom("+", "-", ">", "<", ".", ",", "[-]", "[->+<]", "[>]", "[-.>+<]", "+[-.]"), {
      maxLength: 30
    })
    await fc.assert(
      fc.asyncProperty(body, fc.uint8Array({ maxLength: 4 }), async (parts, input) => {
        const src = parts.join("")
        const ref = referenceRun(src, input, 1_000_000)
        if (!ref.finished) return
        const out = await collect(src, { input, inlineBudgetMs: 0 })
        expect([...out]).toEqual([...ref.output])
      }),
      { numRuns: 60 }
    )
  })

  it("runs again after a cancellation terminated the worker", async () => {
    const ac = new AbortController()
    const run = collect("+[]", { signal: ac.signal, inlineBudgetMs: 0 })
    setTimeout(() => ac.abort(), 20)
    await expect(run).rejects.toBeInstanceOf(BrainfuckAbortError)
    expect((await collect(HELLO, { inlineBudgetMs: 0 })).toString()).toBe("Hello World!\n")
    await closeBrainfuckWorkers()
  })
})

describe("worker script resolution", () => {
  it("falls back to an eval worker when running from sources", () => {
    // From src/engine there is no worker.js next to this module.
    expect(resolveBrainfuckWorker().kind).toBe("eval")
  })

  const built = fileURLToPath(new URL("../../dist/engine/worker.js", import.meta.url))
  it.skipIf(!existsSync(built))(`uses the bundled worker file when told where it is (${built})`, async () => {
    setBrainfuckWorkerUrl(built)
    try {
      await closeBrainfuckWorkers()
      expect(resolveBrainfuckWorker()).toEqual({ kind: "file", url: new URL(`file://${built}`) })
      expect((await collect(HELLO, { inlineBudgetMs: 0 })).toString()).toBe("Hello World!\n")
    } finally {
      await closeBrainfuckWorkers()
      setBrainfuckWorkerUrl(null)
    }
  })
})
