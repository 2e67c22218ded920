import { cliDataOf, listVms, startVm, type Operation } from "@stoat/core"
import { executeShowingProgress, writeFailure, writeResult } from "./outcome.js"
import { renderVmList } from "./views/ls.js"
import { renderUp } from "./views/up.js"

/** Runs a fast path's operation (which forms take one: `fastPathOf`) as its oclif command would. */
const runPlain = async <I, O>(
  operation: Operation<I, O, any>,
  input: I,
  cmd: string,
  json: boolean,
  showProgress: boolean,
  render: (output: O) => string
) => {
  const outcome = await executeShowingProgress(operation, input, { json, cmd, showProgress })
  if (!outcome.ok) {
    process.exitCode = writeFailure(json, cmd, outcome.error)
    return
  }
  writeResult(json, cmd, cliDataOf(operation, outcome.value, input), () =>
    process.stdout.write(`${render(outcome.value)}\n`)
  )
}

/** `stoat ls` (`list`). */
export const fastLs = (cmd: string, json: boolean): Promise<void> =>
  runPlain(listVms, {}, cmd, json, false, (output) => renderVmList(output.vms))

/** `stoat up <vm>` (`start`): without `--wait`/`--no-wait` it waits when the output is not a terminal, or `--json`. */
export const fastUp = (
  cmd: string,
  vm: string,
  options: { readonly wait: boolean | undefined; readonly quiet: boolean; readonly json: boolean }
): Promise<void> => {
  const wait = options.wait ?? (options.json || process.stdout.isTTY !== true)
  return runPlain(startVm, { vm, wait, apply: true }, cmd, options.json, !options.quiet, (vm) => renderUp(vm, wait))
}
