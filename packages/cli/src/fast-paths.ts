import { cliDataOf, listVms, startVm, type Operation } from "@stoat/core"
import { executeShowingProgress, writeFailure, writeResult } from "./outcome.js"
import { renderVmList } from "./views/ls.js"
import { renderUp } from "./views/up.js"

/**
 * The commands scripts and agents run most, in their plain forms, served without loading oclif
 * (a third of start-up): same operation, same output and exit status as the oclif command.
 */
const runPlain = async <I, O>(operation: Operation<I, O, any>, input: I, cmd: string, json: boolean, showProgress: boolean, render: (output: O) => string) => {
  const outcome = await executeShowingProgress(operation, input, { json, cmd, showProgress })
  if (!outcome.ok) {
    process.exitCode = writeFailure(json, cmd, outcome.error)
    return
  }
  writeResult(json, cmd, cliDataOf(operation, outcome.value, input), () => process.stdout.write(`${render(outcome.value)}\n`))
}

/** `stoat ls` (`list`) with no flags but `--json`. */
export const fastLs = (cmd: string, json: boolean): Promise<void> => runPlain(listVms, {}, cmd, json, false, (output) => renderVmList(output.vms))

/**
 * `stoat up <vm>` (`start`) with at most `--wait`/`--no-wait` and `-q`: a VM's start is waited
 * on most (`up --wait`), and every millisecond before QEMU starts is the caller's.
 */
export const fastUp = (cmd: string, vm: string, options: { readonly wait: boolean | undefined; readonly quiet: boolean; readonly json: boolean }): Promise<void> => {
  const wait = options.wait ?? (options.json || process.stdout.isTTY !== true)
  return runPlain(startVm, { vm, wait, apply: true }, cmd, options.json, !options.quiet, (vm) => renderUp(vm, wait))
}
