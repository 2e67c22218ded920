import { Worker } from "node:worker_threads"

/**
 * The worker threads that run tool calls. A call's command runs on a worker, never on the
 * server's main thread, so `tools/list` and new calls are answered while any command runs, and
 * a call is stopped, whatever its command is doing, by terminating the worker that runs it.
 * A fixed number of workers run one call each; further calls wait in a bounded queue, where
 * their timeout and cancellation apply as well.
 */

/** What a worker runs: one command (by id) with its argv. */
export interface ToolJob {
  readonly id: string
  readonly argv: readonly string[]
}

export interface ToolOutcome {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** Worker → pool: "ready" once when it has loaded the commands, then one reply per job. */
export type ToolReply =
  | { readonly type: "ready" }
  | { readonly type: "done"; readonly outcome: ToolOutcome }
  | { readonly type: "failed"; readonly message: string }

/** Every worker is busy and the queue is full. */
export class PoolBusy extends Error {
  override readonly name = "PoolBusy"
}

/** The worker died under the call (out of memory, a crash) or the command failed outside its own error handling. */
export class WorkerFailed extends Error {
  override readonly name = "WorkerFailed"
}

export interface PoolOptions {
  readonly script: URL
  readonly workerData: unknown
  /** Workers running calls at the same time. */
  readonly size: number
  /** Calls that may wait for a worker; more are refused with PoolBusy. */
  readonly maxQueued: number
  /** V8 heap per worker: a call that needs more fails alone instead of taking the server down. */
  readonly heapLimitMb: number
}

interface Pending {
  readonly job: ToolJob
  readonly signal: AbortSignal
  readonly resolve: (outcome: ToolOutcome) => void
  readonly reject: (error: unknown) => void
  readonly onAbort: () => void
}

const describeFailure = (error: Error, heapLimitMb: number): string =>
  (error as NodeJS.ErrnoException).code === "ERR_WORKER_OUT_OF_MEMORY" ? `the command ran out of memory (a tool call may use ${heapLimitMb} MB)` : `the command's worker failed: ${error.message}`

export class ToolPool {
  /** Spawned, still loading the commands: they take jobs only once ready, so a call never waits behind a start-up while another worker is free. */
  private readonly starting = new Set<Worker>()
  private readonly idle: Worker[] = []
  private readonly running = new Map<Worker, Pending>()
  private readonly queue: Pending[] = []
  private live = 0
  private closed = false

  constructor(private readonly options: PoolOptions) {}

  /**
   * Starts every worker and resolves once all have loaded the commands, so that first calls do
   * not wait for a thread and its command tree. Rejects when a worker fails to start.
   */
  async prewarm(): Promise<void> {
    const started: Array<Promise<void>> = []
    while (this.live < this.options.size) {
      const worker = this.spawn()
      started.push(
        new Promise<void>((resolve, reject) => {
          const onMessage = (reply: ToolReply): void => {
            if (reply.type === "ready") done(resolve)
          }
          const onError = (error: Error): void => done(() => reject(new WorkerFailed(`a tool worker did not start: ${error.message}`)))
          const onExit = (code: number): void => done(() => reject(new WorkerFailed(`a tool worker did not start: it exited with code ${code}`)))
          const done = (settle: () => void): void => {
            worker.off("message", onMessage).off("error", onError).off("exit", onExit)
            settle()
          }
          worker.on("message", onMessage).on("error", onError).on("exit", onExit)
        })
      )
    }
    await Promise.all(started)
  }

  /** Runs a job on a worker. When `signal` aborts, rejects with its reason and stops the job's worker. */
  run(job: ToolJob, signal: AbortSignal): Promise<ToolOutcome> {
    if (this.closed) return Promise.reject(new WorkerFailed("the server is shutting down"))
    if (signal.aborted) return Promise.reject(signal.reason)
    const waitsForWorker = this.idle.length === 0
    if (waitsForWorker && this.queue.length >= this.options.maxQueued) return Promise.reject(new PoolBusy(`the server is busy: ${this.queue.length} calls are waiting`))
    return new Promise<ToolOutcome>((resolve, reject) => {
      const pending: Pending = { job, signal, resolve, reject, onAbort: () => this.abort(pending) }
      signal.addEventListener("abort", pending.onAbort, { once: true })
      this.queue.push(pending)
      this.dispatch()
    })
  }

  async close(): Promise<void> {
    this.closed = true
    for (const pending of [...this.queue.splice(0), ...this.running.values()]) this.finish(pending, () => pending.reject(new WorkerFailed("the server is shutting down")))
    const workers = [...this.starting, ...this.idle.splice(0), ...this.running.keys()]
    this.starting.clear()
    this.running.clear()
    this.live = 0
    await Promise.all(workers.map((worker) => worker.terminate()))
  }

  private dispatch(): void {
    // A worker lost to a crash is replaced only when a call needs one.
    if (this.queue.length > 0 && this.idle.length === 0 && this.live < this.options.size) this.spawn()
    while (this.queue.length > 0) {
      const worker = this.idle.pop()
      if (!worker) return
      const pending = this.queue.shift()!
      this.running.set(worker, pending)
      worker.postMessage(pending.job)
    }
  }

  private spawn(): Worker {
    const worker = new Worker(this.options.script, { workerData: this.options.workerData, resourceLimits: { maxOldGenerationSizeMb: this.options.heapLimitMb } })
    this.live++
    this.starting.add(worker)
    worker.on("message", (reply: ToolReply) => this.settle(worker, reply))
    worker.on("error", (error: Error) => this.lost(worker, error))
    worker.on("exit", (code: number) => this.lost(worker, new Error(`exited with code ${code}`)))
    return worker
  }

  private finish(pending: Pending, settle: () => void): void {
    pending.signal.removeEventListener("abort", pending.onAbort)
    settle()
  }

  private settle(worker: Worker, reply: ToolReply): void {
    if (reply.type === "ready") {
      if (this.starting.delete(worker)) this.idle.push(worker)
      return this.dispatch()
    }
    const pending = this.running.get(worker)
    if (!pending) return
    this.running.delete(worker)
    this.idle.push(worker)
    this.finish(pending, () => (reply.type === "done" ? pending.resolve(reply.outcome) : pending.reject(new WorkerFailed(reply.message))))
    this.dispatch()
  }

  /**
   * A worker ended on its own. Its call fails; a replacement starts only when a call needs one.
   * A worker that never became ready fails the oldest waiting call, so a worker script that
   * cannot start makes calls fail instead of starting workers forever.
   */
  private lost(worker: Worker, error: Error): void {
    const starting = this.starting.delete(worker)
    const index = this.idle.indexOf(worker)
    const pending = starting ? this.queue.shift() : this.running.get(worker)
    if (!starting && pending === undefined && index === -1) return
    this.running.delete(worker)
    if (index !== -1) this.idle.splice(index, 1)
    this.live--
    const failure = starting ? `a tool worker did not start: ${error.message}` : describeFailure(error, this.options.heapLimitMb)
    if (pending) this.finish(pending, () => pending.reject(new WorkerFailed(failure)))
    this.dispatch()
  }

  private abort(pending: Pending): void {
    const queued = this.queue.indexOf(pending)
    if (queued !== -1) this.queue.splice(queued, 1)
    for (const [worker, running] of this.running) {
      if (running !== pending) continue
      // Terminating is the only way to stop synchronous work; a fresh worker takes its place.
      this.running.delete(worker)
      this.live--
      void worker.terminate()
      if (!this.closed) this.spawn()
    }
    pending.reject(pending.signal.reason)
    this.dispatch()
  }
}
