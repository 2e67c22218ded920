import { listVms } from "@stoat/core"
import { encodeLine, resultError, resultOk } from "@stoat/wire"
import { disposeRuntime, execute } from "./runtime.js"
import { renderVmList } from "./views/ls.js"

/**
 * `stoat ls` with no flags but `--json`, the command scripts and agents poll most, served without
 * loading oclif (a third of start-up). Same operation, same output as the oclif command.
 */
export const fastLs = async (json: boolean): Promise<void> => {
  const outcome = await execute(listVms, {})
  await disposeRuntime()
  if (!outcome.ok) {
    if (json) process.stdout.write(encodeLine(resultError("ls", outcome.error)))
    else process.stderr.write(`stoat: ls: ${outcome.error.message}\n`)
    process.exitCode = outcome.error.code === "usage" ? 2 : 1
    return
  }
  process.stdout.write(json ? encodeLine(resultOk("ls", outcome.value)) : `${renderVmList(outcome.value.vms)}\n`)
}
