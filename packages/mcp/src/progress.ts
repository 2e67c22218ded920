import type { ExecutionContext } from "@stoat/core"

/** Sends one progress notification: progress so far, the total when known, a line of text. */
export type SendProgress = (progress: number, total: number | undefined, message: string | undefined) => void

/**
 * Progress for one call: the seconds spent so far (of timeout_seconds when the input has one),
 * always increasing, sent at every stage or log event of the operation and once per interval.
 */
export const progressReporter = (send: SendProgress, totalSeconds: number | undefined, everyMs: number) => {
  const started = Date.now()
  let last = 0
  const report = (message: string | undefined) => {
    last = Math.max(last + 0.001, (Date.now() - started) / 1000)
    send(Math.round(last * 1000) / 1000, totalSeconds, message)
  }
  const timer = setInterval(() => report(`still working after ${Math.round((Date.now() - started) / 1000)} s`), everyMs)
  timer.unref()
  const onEvent: NonNullable<ExecutionContext["progress"]> = (event) => {
    switch (event.type) {
      case "log":
        return report(event.data.line)
      case "stage":
        return report(`recipe ${event.data.recipe}`)
      case "progress":
        return report(`${event.data.percent}%`)
    }
  }
  return { onEvent, stop: () => clearInterval(timer) }
}
