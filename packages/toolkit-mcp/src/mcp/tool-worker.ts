/**
 * A tool-call worker thread (bundled as dist/mcp/tool-worker.js; the pool starts it). It loads
 * the command tree once, then runs one job at a time with captured output and answers with the
 * exit code and output. Stopping a call means terminating this thread.
 */
import { readlinkSync } from "node:fs"
import { setPriority } from "node:os"
import { workerData } from "node:worker_threads"
import { Config } from "@oclif/core"
import { errorMessage } from "../runtime/errors.js"
import { captureIO } from "../runtime/io.js"
import { runCommand } from "../runtime/run.js"
import { loadCommand } from "../runtime/tree.js"
import type { ToolJob, ToolOutcome, ToolReply } from "./pool.js"

export interface ToolWorkerData {
  /** The package root, for oclif's Config.load. */
  readonly root: string
  /** Ids of the served commands, loaded before the worker says it is ready. */
  readonly commands: readonly string[]
}

/** What one call may print (stdout and stderr together); the command is stopped past it. */
const MAX_OUTPUT_BYTES = 4 * 1024 * 1024
const OUTPUT_LIMIT_NOTE = `Error: the command printed more than ${MAX_OUTPUT_BYTES / (1024 * 1024)} MiB, the most a tool call returns; it was stopped\n`

/** Nice value of a worker thread: calls are batch work, the main thread answers requests. */
const WORKER_NICE = 10

/** Linux gives each thread its own nice value, set through the thread's id. */
const lowerThreadPriority = (): void => {
  try {
    setPriority(Number(readlinkSync("/proc/thread-self").split("/").pop()), WORKER_NICE)
  } catch {
    // Not Linux, or not allowed: the thread keeps the process's priority.
  }
}

const run = async (config: Config, job: ToolJob): Promise<ToolOutcome> => {
  const captured = captureIO(MAX_OUTPUT_BYTES)
  const code = await runCommand(await loadCommand(config, job.id), job.id, job.argv, captured.io, config)
  if (!captured.exceeded()) return { code, stdout: captured.stdout(), stderr: captured.stderr() }
  const stdout = captured.stdout()
  return {
    code: 1,
    stdout: `${stdout}${stdout === "" || stdout.endsWith("\n") ? "" : "\n"}${OUTPUT_LIMIT_NOTE}`,
    stderr: captured.stderr()
  }
}

const data = workerData as ToolWorkerData
lowerThreadPriority()
// Loaded once, before the pool counts this worker as started (piscina awaits the module).
const config = await Config.load(data.root)
for (const id of data.commands) await loadCommand(config, id)

/** Runs one job; a failure outside the command's own error handling is a "failed" reply. */
export default async (job: ToolJob): Promise<ToolReply> => {
  try {
    return { type: "done", outcome: await run(config, job) }
  } catch (error) {
    return { type: "failed", message: errorMessage(error) }
  }
}

/** The pool's prewarm task: answering it means the commands are loaded. */
export const warm = (): void => undefined
