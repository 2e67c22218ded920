import { WorkerFailed, WorkerPool } from "../pool/worker-pool.js"

export { PoolBusy, WorkerFailed } from "../pool/worker-pool.js"

/**
 * The workers that run tool calls, on the toolkit's worker pool. A call's command runs on a
 * worker, never on the server's main thread, so `tools/list` and new calls are answered while
 * any command runs, and a call is stopped by aborting its signal, which terminates its worker.
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

/** A worker's answer to one job: the command ran to an exit code, or failed outside its own error handling. */
export type ToolReply =
  | { readonly type: "done"; readonly outcome: ToolOutcome }
  | { readonly type: "failed"; readonly message: string }

export interface PoolOptions {
  /** The worker script (tool-worker.ts, or a stand-in in tests). */
  readonly script: URL
  readonly workerData: unknown
  /** Workers running calls at the same time. */
  readonly size: number
  /** Calls that may wait for a worker; more are refused with PoolBusy. */
  readonly maxQueued: number
  /** V8 heap per worker: a call that needs more fails alone instead of taking the server down. */
  readonly heapLimitMb: number
}

export class ToolPool {
  private readonly pool: WorkerPool<ToolJob, ToolReply>

  constructor(options: PoolOptions) {
    this.pool = new WorkerPool({ ...options, what: "tool" })
  }

  /** Starts every worker and resolves once all have loaded the commands; rejects with WorkerFailed when one cannot start. */
  prewarm(): Promise<void> {
    return this.pool.prewarm()
  }

  /** Runs a job on a worker. When `signal` aborts, rejects with its reason and stops the job's worker. */
  async run(job: ToolJob, signal: AbortSignal): Promise<ToolOutcome> {
    const reply = await this.pool.run(job, signal)
    if (reply.type === "failed") throw new WorkerFailed(reply.message)
    return reply.outcome
  }

  close(): Promise<void> {
    return this.pool.close()
  }
}
