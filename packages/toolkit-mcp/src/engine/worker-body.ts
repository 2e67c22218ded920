/**
 * What a Brainfuck worker does with one task, kept as JavaScript source text so that the same
 * code serves both the bundled worker file (`worker.ts` builds a function from it) and the
 * source-text worker used when that file cannot be found. Transpilers rewrite functions (e.g.
 * tsx injects `__name`), so taking `Function.prototype.toString()` of a compiled function would
 * not be safe.
 */
import type { MessagePort } from "node:worker_threads"

/** Main thread → worker: one program run (a task of the worker pool). */
export interface RunTask {
  /** Generated code from `program.code({ output: "ring" })`. */
  readonly code: string
  readonly input: Uint8Array
  /** Output ring (see RING_HEADER_BYTES / RING_BYTES in brainfuck.ts). */
  readonly ring: SharedArrayBuffer
  /** Gets "full" when the ring is full (once per stall, again every 250 ms while stalled); closed when the run ends. */
  readonly port: MessagePort
}

/** Body of a function of `(task, runNumber)`: runs one program, writing to the task's ring. */
export const RUN_BODY = `
try {
  // A unique trailer per run: V8 would otherwise reuse an earlier run's feedback for the same source.
  const run = new Function("input", "io", task.code + "\\n// run " + runNumber)
  run(task.input, { ring: task.ring, full: () => task.port.postMessage("full"), poll: () => {} })
} finally {
  task.port.close()
}
`

/** The worker module (the pool's form: a default task handler and a no-op `warm`) as source text. */
export const WORKER_MODULE_SOURCE = `let runs = 0
const runOne = new Function("task", "runNumber", ${JSON.stringify(RUN_BODY)})
export const warm = () => undefined
export default (task) => runOne(task, ++runs)
`
