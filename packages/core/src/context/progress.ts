import { Context, Effect } from "effect"
import type { ProgressData, ProgressEvent } from "@stoat/wire"

/** One report of long work: a download's bytes, a recipe reached, or a line of its log (the wire's own union). */
export type { ProgressEvent }

/**
 * Where long work reports as it goes: the CLI prints it, the MCP server sends notifications when
 * the client asked for them. `runOperation` provides each call's; by default reports go nowhere.
 */
export class Progress extends Context.Reference<Progress>()("stoat/Progress", {
  defaultValue: () => ({ emit: (_event: ProgressEvent): void => undefined })
}) {}

/** A plain callback that reports each line it is given (for work that reports outside Effect, like an image build). */
export const stageReporter: Effect.Effect<(line: string) => void> = Effect.map(
  Progress,
  (progress) => (line: string) => progress.emit({ type: "log", data: { line } })
)

/** Reports one line of the work's log. */
export const progressLine = (line: string): Effect.Effect<void> => Effect.map(stageReporter, (report) => report(line))

/** A plain callback that reports a download's bytes so far as a `progress` event. */
export const progressReporter: Effect.Effect<(data: ProgressData) => void> = Effect.map(
  Progress,
  (progress) => (data: ProgressData) => progress.emit({ type: "progress", data })
)
