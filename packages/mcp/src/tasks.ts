import { InMemoryTaskStore } from "@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js"
import type { Task } from "@modelcontextprotocol/sdk/types.js"

/** How long a finished task's result is kept when the client asks for no ttl (ms). */
export const DEFAULT_TASK_TTL_MS = 60 * 60_000
/** What the server suggests between two `tasks/get` polls (ms). */
export const TASK_POLL_INTERVAL_MS = 1_000

/**
 * The SDK's in-memory task store, plus what it lacks: `tasks/cancel` only records the status,
 * so this store also aborts the signal of the task's running call, which interrupts the
 * operation's fiber like a cancelled plain request.
 */
export class CancellableTaskStore extends InMemoryTaskStore {
  private readonly running = new Map<string, AbortController>()

  /** The signal a task's call runs under; dropped once the call has ended. */
  track(taskId: string): { readonly signal: AbortSignal; readonly done: () => void } {
    const controller = new AbortController()
    this.running.set(taskId, controller)
    return { signal: controller.signal, done: () => this.running.delete(taskId) }
  }

  override async updateTaskStatus(
    taskId: string,
    status: Task["status"],
    statusMessage?: string,
    sessionId?: string
  ): Promise<void> {
    await super.updateTaskStatus(taskId, status, statusMessage, sessionId)
    if (status === "cancelled") this.running.get(taskId)?.abort()
  }
}
