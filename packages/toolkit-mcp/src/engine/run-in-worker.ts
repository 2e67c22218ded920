/**
 * Cancellable Brainfuck runs. A program first runs on the calling thread for a few
 * milliseconds (most tool calls, like hello world, finish there without any thread start);
 * if it is still running then, it restarts in a worker thread that can be terminated, and the
 * output bytes already delivered are skipped (programs are deterministic for a given input).
 *
 * Worker script resolution (first hit wins):
 *   1. `setBrainfuckWorkerUrl(url)` or the environment variable STOAT_BF_WORKER (a path or file: URL);
 *   2. a file `engine/worker.js` found next to this module: `./worker.js`, `./engine/worker.js`,
 *      `../engine/worker.js`, `../../engine/worker.js`, `../../../engine/worker.js` relative to
 *      `import.meta.url`. After tsdown bundling this code sits in `dist/` (a shared chunk) or in
 *      an entry under `dist/commands/…`, and the worker entry is `dist/engine/worker.js`
 *      (tsdown entry `"engine/worker": "src/engine/worker.ts"`);
 *   3. otherwise (running from TypeScript sources, e.g. under vitest) an `eval` worker with the
 *      same code (worker-body.ts).
 */
import { existsSync } from "node:fs"
import { fileURLToPath, pathToFileURL } from "node:url"
import { Worker } from "node:worker_threads"
import { BrainfuckStoppedError, compileBrainfuck, RING_BYTES, RING_HEADER_BYTES, runProgram, type Program } from "./brainfuck.js"
import { EVAL_WORKER_SOURCE, type RunMessage, type WorkerReply } from "./worker-body.js"

export interface RunBrainfuckOptions {
  readonly input: Uint8Array
  readonly signal?: AbortSignal
  /** Output as it is produced. Chunks are fresh copies. Throwing here fails the run. */
  readonly onOutput: (chunk: Uint8Array) => void
  /**
   * How long the program may run on the calling thread before it moves to a worker, in ms
   * (default 10). 0 always uses a worker.
   */
  readonly inlineBudgetMs?: number
}

/** Rejection of an aborted run. `cause` is the signal's reason (e.g. a TimeoutError from AbortSignal.timeout). */
export class BrainfuckAbortError extends Error {
  override readonly name = "AbortError"
  readonly code = "ABORT_ERR"
  constructor(reason: unknown) {
    super(reason instanceof Error && reason.name === "TimeoutError" ? "Brainfuck program timed out" : "Brainfuck program was aborted", {
      cause: reason
    })
  }
}

/** The worker failed (crashed, ran out of memory, or threw). */
export class BrainfuckWorkerError extends Error {
  override readonly name = "BrainfuckWorkerError"
}

const RING_MASK = RING_BYTES - 1
/** How often a running worker's output is collected while it does not fill the ring. */
const DRAIN_INTERVAL_MS = 20

// ---------------------------------------------------------------------------------------------
// Worker script and pool.

type WorkerTarget = { readonly kind: "file"; readonly url: URL } | { readonly kind: "eval"; readonly source: string }

let configuredUrl: URL | null = null
let target: WorkerTarget | null = null

/** Point at the worker script explicitly (e.g. from a bundle layout the search does not cover). null restores the search. */
export function setBrainfuckWorkerUrl(url: URL | string | null): void {
  configuredUrl = url === null ? null : typeof url === "string" ? toUrl(url) : url
  target = null
}

function toUrl(pathOrUrl: string): URL {
  return pathOrUrl.startsWith("file:") ? new URL(pathOrUrl) : pathToFileURL(pathOrUrl)
}

const CANDIDATES = ["./worker.js", "./engine/worker.js", "../engine/worker.js", "../../engine/worker.js", "../../../engine/worker.js"]

/** Where the worker comes from; exported for diagnostics and tests. */
export function resolveBrainfuckWorker(): WorkerTarget {
  if (target !== null) return target
  const env = process.env["STOAT_BF_WORKER"]
  if (configuredUrl !== null) target = { kind: "file", url: configuredUrl }
  else if (env !== undefined && env !== "") target = { kind: "file", url: toUrl(env) }
  else {
    for (const rel of CANDIDATES) {
      const url = new URL(rel, import.meta.url)
      if (url.protocol === "file:" && existsSync(fileURLToPath(url))) {
        target = { kind: "file", url }
        break
      }
    }
    target ??= { kind: "eval", source: EVAL_WORKER_SOURCE }
  }
  return target
}

let idle: Worker | null = null

function spawn(): Worker {
  const t = resolveBrainfuckWorker()
  const options = { workerData: { stoatBrainfuck: 1 } }
  const w = t.kind === "file" ? new Worker(t.url, options) : new Worker(t.source, { ...options, eval: true })
  // Permanent handlers: an idle worker that dies must not crash the process with an
  // unhandled 'error' event, and must leave the pool.
  const forget = (): void => {
    if (idle === w) idle = null
  }
  w.on("error", forget)
  w.on("exit", forget)
  return w
}

function acquire(): Worker {
  const w = idle
  if (w !== null) {
    idle = null
    w.ref()
    return w
  }
  return spawn()
}

/** Keep a finished worker for the next run (one at most); it must not keep the process alive. */
function release(w: Worker): void {
  if (idle === null) {
    w.unref()
    idle = w
  } else {
    void w.terminate()
  }
}

/** Terminate the idle worker. */
export async function closeBrainfuckWorkers(): Promise<void> {
  const w = idle
  idle = null
  if (w !== null) await w.terminate()
}

// ---------------------------------------------------------------------------------------------
// Running.

/**
 * Run a Brainfuck program (source text or a compiled Program) so that it can be cancelled.
 * Rejects with BrainfuckSyntaxError for unmatched brackets, BrainfuckAbortError when `signal`
 * aborts, BrainfuckWorkerError if the worker fails, or whatever `onOutput` throws.
 */
export async function runBrainfuck(source: string | Program, opts: RunBrainfuckOptions): Promise<void> {
  const { signal, onOutput, input } = opts
  if (signal?.aborted) throw new BrainfuckAbortError(signal.reason)
  const program = typeof source === "string" ? compileBrainfuck(source) : source
  const budget = opts.inlineBudgetMs ?? 10
  let delivered = 0
  if (budget > 0) {
    const deadline = performance.now() + budget
    let outOfTime = false
    try {
      runProgram(program, {
        input,
        write: (chunk) => {
          delivered += chunk.length
          onOutput(chunk)
        },
        shouldStop: () => {
          if (signal?.aborted) return true
          outOfTime = performance.now() >= deadline
          return outOfTime
        },
        tick: 1024
      })
      // Aborted from inside onOutput just before the end: still an abort for the caller.
      if (signal?.aborted) throw new BrainfuckAbortError(signal.reason)
      return
    } catch (e) {
      if (!(e instanceof BrainfuckStoppedError)) throw e
      if (!outOfTime) throw new BrainfuckAbortError(signal?.reason)
    }
  }
  return runInWorker(program, input, delivered, opts)
}

function runInWorker(program: Program, input: Uint8Array, skipBytes: number, opts: RunBrainfuckOptions): Promise<void> {
  const { signal, onOutput } = opts
  if (signal?.aborted) return Promise.reject(new BrainfuckAbortError(signal.reason))
  const worker = acquire()
  const ring = new SharedArrayBuffer(RING_HEADER_BYTES + RING_BYTES)
  const header = new Int32Array(ring, 0, 4)
  const bytes = new Uint8Array(ring, RING_HEADER_BYTES, RING_BYTES)
  let read = 0
  let skip = skipBytes

  /** Copy out everything the worker has written and hand it to onOutput. */
  const drain = (): void => {
    const written = Atomics.load(header, 0)
    const n = (written - read) | 0
    if (n === 0) return
    const start = read & RING_MASK
    let chunk: Uint8Array
    if (start + n <= RING_BYTES) chunk = bytes.slice(start, start + n)
    else {
      chunk = new Uint8Array(n)
      chunk.set(bytes.subarray(start))
      chunk.set(bytes.subarray(0, n - (RING_BYTES - start)), RING_BYTES - start)
    }
    read = written
    Atomics.store(header, 1, read)
    Atomics.notify(header, 1)
    if (skip > 0) {
      if (skip >= chunk.length) {
        skip -= chunk.length
        return
      }
      chunk = chunk.subarray(skip)
      skip = 0
    }
    onOutput(chunk)
  }

  return new Promise<void>((resolve, reject) => {
    let settled = false
    const timer = setInterval(() => step(drain), DRAIN_INTERVAL_MS)
    const cleanup = (): void => {
      settled = true
      clearInterval(timer)
      worker.off("message", onMessage)
      worker.off("error", onError)
      worker.off("exit", onExit)
      signal?.removeEventListener("abort", onAbort)
    }
    const fail = (err: unknown): void => {
      if (settled) return
      cleanup()
      void worker.terminate()
      reject(err)
    }
    /** Run a step; if onOutput throws, the run fails with that error. */
    const step = (f: () => void): void => {
      if (settled) return
      try {
        f()
      } catch (e) {
        fail(e)
      }
    }
    const onMessage = (m: WorkerReply): void => {
      if (m.type === "full") step(drain)
      else if (m.type === "done") {
        step(drain)
        if (settled) return
        cleanup()
        release(worker)
        resolve()
      } else if (m.type === "error") {
        fail(new BrainfuckWorkerError(`${m.name}: ${m.message}`))
      }
    }
    const onError = (e: Error): void => fail(new BrainfuckWorkerError(e.message, { cause: e }))
    const onExit = (code: number): void => fail(new BrainfuckWorkerError(`Brainfuck worker exited unexpectedly (code ${code})`))
    const onAbort = (): void => fail(new BrainfuckAbortError(signal?.reason))
    worker.on("message", onMessage)
    worker.on("error", onError)
    worker.on("exit", onExit)
    signal?.addEventListener("abort", onAbort, { once: true })
    const msg: RunMessage = { type: "run", code: program.code({ output: "ring" }), input, ring }
    worker.postMessage(msg)
  })
}
