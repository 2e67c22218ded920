/**
 * What a Brainfuck worker thread does, kept as JavaScript source text so that the same code
 * serves both the bundled worker file (`worker.ts` evaluates it) and the `eval` worker used
 * when that file cannot be found. Transpilers rewrite functions (e.g. tsx injects `__name`),
 * so taking `Function.prototype.toString()` of a compiled function would not be safe.
 */

/** Main thread → worker. */
export interface RunMessage {
  readonly type: "run"
  /** Generated code from `program.code({ output: "ring" })`. */
  readonly code: string
  readonly input: Uint8Array
  /** Output ring (see RING_HEADER_BYTES / RING_BYTES in brainfuck.ts). */
  readonly ring: SharedArrayBuffer
}

/** Worker → main thread. */
export type WorkerReply =
  | { readonly type: "ready" }
  /** The ring is full; drain it. Sent once per stall, and again every 250 ms while stalled. */
  | { readonly type: "full" }
  | { readonly type: "done" }
  | { readonly type: "error"; readonly name: string; readonly message: string }

/** Body of a function of `port` (a worker MessagePort): serve "run" messages one at a time. */
export const WORKER_BODY = `
let runs = 0
port.on("message", (msg) => {
  if (msg.type !== "run") return
  try {
    // A unique trailer per run: V8 would otherwise reuse an earlier run's feedback for the same source.
    const run = new Function("input", "io", msg.code + "\\n// run " + ++runs)
    run(msg.input, { ring: msg.ring, full: () => port.postMessage({ type: "full" }), poll: () => {} })
    port.postMessage({ type: "done" })
  } catch (e) {
    const err = e instanceof Error ? e : new Error(String(e))
    port.postMessage({ type: "error", name: err.name, message: err.message })
  }
})
port.postMessage({ type: "ready" })
`

/** Source for `new Worker(source, { eval: true })`. */
export const EVAL_WORKER_SOURCE = `(function (port) {${WORKER_BODY}})(require("node:worker_threads").parentPort)`
