/**
 * Worker thread entry. Bundled on its own as `dist/engine/worker.js` (tsdown entry
 * "engine/worker"); run-in-worker.ts starts it with workerData `{ stoatBrainfuck: 1 }`.
 */
import { parentPort, workerData } from "node:worker_threads"
import { WORKER_BODY } from "./worker-body.js"

const marked = typeof workerData === "object" && workerData !== null && (workerData as { stoatBrainfuck?: unknown }).stoatBrainfuck === 1
// Only serve when started as our worker, so importing this module elsewhere is harmless.
if (parentPort !== null && marked) new Function("port", WORKER_BODY)(parentPort)
