/**
 * Cancellable Brainfuck runs. A program first runs on the calling thread for a few
 * milliseconds (most runs, like hello world, finish there without any thread start); if it is
 * still running then, it restarts on the toolkit's worker pool, whose worker is terminated to
 * stop it, and the output bytes already delivered are skipped (programs are deterministic for
 * a given input).
 *
 * Worker script resolution (first hit wins):
 *   1. `setBrainfuckWorkerUrl(url)` or the environment variable STOAT_BF_WORKER (a path or file: URL);
 *   2. a file `engine/worker.js` found next to this module: `./worker.js`, `./engine/worker.js`,
 *      `../engine/worker.js`, `../../engine/worker.js`, `../../../engine/worker.js` relative to
 *      `import.meta.url`. After tsdown bundling this code sits in `dist/` (a shared chunk) or in
 *      an entry under `dist/commands/…`, and the worker entry is `dist/engine/worker.js`
 *      (tsdown entry `"engine/worker": "src/engine/worker.ts"`);
 *   3. otherwise (running from TypeScript sources, e.g. under vitest) the same code as source
 *      text (worker-body.ts), written to a private temporary module for the pool.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { MessageChannel } from "node:worker_threads"
import type { WorkerPool } from "../pool/worker-pool.js"
import {
  BrainfuckStoppedError,
  compileBrainfuck,
  RING_BYTES,
  RING_HEADER_BYTES,
  runProgram,
  type Program
} from "./brainfuck.js"
import { WORKER_MODULE_SOURCE, type RunTask } from "./worker-body.js"

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
    super(
      reason instanceof Error && reason.name === "TimeoutError"
        ? "Brainfuck program timed out"
        : "Brainfuck program was aborted",
      {
        cause: reason
      }
    )
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

const CANDIDATES = [
  "./worker.js",
  "./engine/worker.js",
  "../engine/worker.js",
  "../../engine/worker.js",
  "../../../engine/worker.js"
]

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
    target ??= { kind: "eval", source: WORKER_MODULE_SOURCE }
  }
  return target
}

/** The pool loads modules from files: source text gets a private temporary one, removed at exit. */
let sourceModule: URL | null = null
function sourceModuleUrl(source: string): URL {
  if (sourceModule !== null) return sourceModule
  const dir = mkdtempSync(join(tmpdir(), "toolkit-bf-worker-"))
  writeFileSync(join(dir, "worker.mjs"), source)
  process.once("exit", () => rmSync(dir, { recursive: true, force: true }))
  sourceModule = pathToFileURL(join(dir, "worker.mjs"))
  return sourceModule
}

let pool: WorkerPool<RunTask, void> | null = null

/**
 * One worker: the command line runs one program at a time; its idle thread does not keep the
 * process alive. The pool loads on first use, so runs that finish on the calling thread skip it.
 */
async function brainfuckPool(): Promise<WorkerPool<RunTask, void>> {
  if (pool !== null) return pool
  const { WorkerPool } = await import("../pool/worker-pool.js")
  if (pool !== null) return pool
  const t = resolveBrainfuckWorker()
  pool = new WorkerPool<RunTask, void>({
    script: t.kind === "file" ? t.url : sourceModuleUrl(t.source),
    size: 1,
    maxQueued: Number.MAX_SAFE_INTEGER,
    what: "Brainfuck"
  })
  return pool
}

/** Stop the pool's worker. */
export async function closeBrainfuckWorkers(): Promise<void> {
  const p = pool
  pool = null
  await p?.close()
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

async function runInWorker(
  program: Program,
  input: Uint8Array,
  skipBytes: number,
  opts: RunBrainfuckOptions
): Promise<void> {
  const { signal, onOutput } = opts
  if (signal?.aborted) throw new BrainfuckAbortError(signal.reason)
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

  // Stops the run (and so its worker) for the caller's signal or for an onOutput that threw.
  const stop = new AbortController()
  const onAbort = (): void => stop.abort(new BrainfuckAbortError(signal?.reason))
  signal?.addEventListener("abort", onAbort, { once: true })
  /** Run a step; if onOutput throws, the run fails with that error. */
  const step = (f: () => void): void => {
    if (stop.signal.aborted) return
    try {
      f()
    } catch (e) {
      stop.abort(e)
    }
  }
  const timer = setInterval(() => step(drain), DRAIN_INTERVAL_MS)
  const { port1, port2 } = new MessageChannel()
  port1.on("message", () => step(drain))
  try {
    await (await brainfuckPool()).run(
      { code: program.code({ output: "ring" }), input, ring, port: port2 },
      stop.signal,
      [port2]
    )
    step(drain)
  } catch (e) {
    if (stop.signal.aborted) throw stop.signal.reason
    throw new BrainfuckWorkerError(e instanceof Error ? e.message : String(e), { cause: e })
  } finally {
    clearInterval(timer)
    port1.close()
    signal?.removeEventListener("abort", onAbort)
  }
  if (stop.signal.aborted) throw stop.signal.reason
}
