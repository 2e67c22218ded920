import { fileURLToPath } from "node:url"
import type { TransferListItem } from "node:worker_threads"
import { Piscina } from "piscina"

/**
 * The toolkit's one pool of worker threads (piscina underneath). Work that may run long or
 * never end runs on a worker, never on the main thread, and is stopped, whatever it is doing,
 * through an AbortSignal: piscina terminates the worker that runs it and starts a replacement.
 * A fixed number of workers run one task each; further tasks wait in a bounded queue, where
 * their signal applies as well.
 *
 * A worker script exports its task handler as `default` and a no-op `warm`, which `prewarm`
 * runs once per worker so that the first real tasks do not wait for a thread to load.
 */

/** Every worker is busy and the queue is full. */
export class PoolBusy extends Error {
  override readonly name = "PoolBusy"
}

/** The worker died under the task (out of memory, a crash), could not start, or the pool is closing. */
export class WorkerFailed extends Error {
  override readonly name = "WorkerFailed"
}

export interface WorkerPoolOptions {
  readonly script: URL
  readonly workerData?: unknown
  /** Workers running tasks at the same time. */
  readonly size: number
  /** Tasks that may wait for a worker; more are refused with PoolBusy. */
  readonly maxQueued: number
  /** V8 heap per worker: a task that needs more fails alone instead of taking the process down. */
  readonly heapLimitMb?: number
  /** What a task is called in failure messages ("tool", "Brainfuck"). */
  readonly what: string
}

const SHUTTING_DOWN = "the server is shutting down"

export class WorkerPool<Task, Result> {
  private readonly piscina: Piscina<Task, Result>
  private ready: Promise<void> | undefined
  private closed = false

  constructor(private readonly options: WorkerPoolOptions) {
    this.piscina = new Piscina({
      filename: fileURLToPath(options.script),
      workerData: options.workerData,
      minThreads: options.size,
      maxThreads: options.size,
      concurrentTasksPerWorker: 1,
      // Workers run ordinary async code between tasks (oclif loads, file reads): no Atomics.wait loop.
      atomics: "disabled",
      ...(options.heapLimitMb !== undefined ? { resourceLimits: { maxOldGenerationSizeMb: options.heapLimitMb } } : {})
    })
    // A worker lost between tasks is replaced by piscina; its error has no task to fail.
    this.piscina.on("error", () => undefined)
  }

  /**
   * Resolves once every worker has loaded its script (running `warm` on each), so that first
   * tasks do not wait for a thread start. Rejects with WorkerFailed when a worker cannot start;
   * every later task then fails the same way instead of starting workers forever.
   */
  prewarm(): Promise<void> {
    this.ready ??= Promise.all(
      Array.from({ length: this.options.size }, () => this.piscina.run(undefined as Task, { name: "warm" }))
    ).then(
      () => undefined,
      (error: unknown) => {
        throw this.closed
          ? new WorkerFailed(SHUTTING_DOWN)
          : new WorkerFailed(`a ${this.options.what} worker did not start: ${messageOf(error)}`)
      }
    )
    return this.ready
  }

  /** Runs a task on a worker. When `signal` aborts, rejects with its reason and stops the task's worker. */
  async run(task: Task, signal: AbortSignal, transferList?: TransferListItem[]): Promise<Result> {
    if (this.closed) throw new WorkerFailed(SHUTTING_DOWN)
    await this.prewarm()
    if (signal.aborted) throw signal.reason
    if (this.piscina.queueSize >= this.options.maxQueued)
      throw new PoolBusy(`the server is busy: ${this.piscina.queueSize} calls are waiting`)
    try {
      return await this.piscina.run(task, { signal, ...(transferList ? { transferList } : {}) })
    } catch (error) {
      if (signal.aborted) throw signal.reason
      if (this.closed) throw new WorkerFailed(SHUTTING_DOWN)
      if ((error as NodeJS.ErrnoException).code === "ERR_WORKER_OUT_OF_MEMORY")
        throw new WorkerFailed(
          `the command ran out of memory${this.options.heapLimitMb !== undefined ? ` (a ${this.options.what} call may use ${this.options.heapLimitMb} MB)` : ""}`
        )
      throw new WorkerFailed(`the command's worker failed: ${messageOf(error)}`)
    }
  }

  /** Stops every worker; what is still running or waiting rejects with WorkerFailed. */
  async close(): Promise<void> {
    this.closed = true
    await this.piscina.destroy()
  }
}

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error))
