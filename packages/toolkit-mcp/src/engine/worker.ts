/**
 * The Brainfuck worker module, bundled on its own as `dist/engine/worker.js` (tsdown entry
 * "engine/worker"); run-in-worker.ts runs it on the toolkit's worker pool.
 */
import { RUN_BODY, type RunTask } from "./worker-body.js"

const runOne = new Function("task", "runNumber", RUN_BODY) as (task: RunTask, runNumber: number) => void
let runs = 0

/** The pool's prewarm task. */
export const warm = (): void => undefined

export default (task: RunTask): void => runOne(task, ++runs)
