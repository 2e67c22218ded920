import type { Operation, ProgressEvent } from "@stoat/core"
import { encodeLine, event, resultError, resultOk, type ErrorInfo } from "@stoat/wire"
import { disposeRuntime, execute } from "./runtime.js"
import { progressBar } from "./render.js"

/**
 * How a command shows its operation's progress: `--json` gets every event as an envelope line on
 * stdout; people get stderr lines, a percentage on a terminal, unless they asked for quiet.
 */
const progressPrinter = (json: boolean, cmd: string, showProgress: boolean) => {
  let lastPercent = -1
  return {
    onEvent: (progressEvent: ProgressEvent): void => {
      if (json) {
        process.stdout.write(encodeLine(event(cmd, progressEvent)))
        return
      }
      if (!showProgress) return
      switch (progressEvent.type) {
        case "progress": {
          const { id, done, total, percent } = progressEvent.data
          if (percent === lastPercent) return
          lastPercent = percent
          // A terminal gets one redrawn bar with bytes; a log gets a line per percent.
          process.stderr.write(
            process.stderr.isTTY ? `\r${id}: ${progressBar(done, total, percent)}\u001b[K` : `${id}: ${percent}%\n`
          )
          return
        }
        case "log":
          process.stderr.write(`${progressEvent.data.line}\n`)
          return
        case "stage":
          // The apply log's own "=== recipe … ===" line already says it to people.
          return
      }
    },
    /** Ends a terminal's percentage line. */
    done: (): void => {
      if (lastPercent >= 0 && process.stderr.isTTY) process.stderr.write("\n")
    }
  }
}

/** Runs a command's operation with its progress shown, then releases the live runtime. */
export const executeShowingProgress = async <I, O>(
  operation: Operation<I, O, any>,
  input: unknown,
  show: { readonly json: boolean; readonly cmd: string; readonly showProgress: boolean; readonly interactive?: boolean }
) => {
  const printer = progressPrinter(show.json, show.cmd, show.showProgress)
  const outcome = await execute(operation, input, {
    ...(show.interactive !== undefined ? { interactive: show.interactive } : {}),
    progress: printer.onEvent
  })
  printer.done()
  await disposeRuntime()
  return outcome
}

/** A failed command: its envelope with `--json`, else one `stoat: <cmd>: …` line on stderr. Answers the exit status. */
export const writeFailure = (json: boolean, cmd: string, error: ErrorInfo): number => {
  if (json) process.stdout.write(encodeLine(resultError(cmd, error)))
  else process.stderr.write(`stoat: ${cmd}: ${error.message}\n`)
  return error.code === "usage" ? 2 : 1
}

/** A command's result: the envelope of its CLI view with `--json`, else whatever `render` writes. */
export const writeResult = (json: boolean, cmd: string, data: unknown, render: () => void): void => {
  if (json) process.stdout.write(encodeLine(resultOk(cmd, data)))
  else render()
}
