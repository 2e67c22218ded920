import { Context, Effect } from "effect"

/** One report of long work: a percentage, a stage reached, or a line of its log. */
export interface ProgressEvent {
  readonly type: "progress" | "stage" | "log"
  readonly data: unknown
}

/**
 * Where long work reports as it goes: the CLI prints it, the MCP server sends notifications when
 * the client asked for them. `runOperation` provides each call's; by default reports go nowhere.
 */
export class Progress extends Context.Reference<Progress>()("stoat/Progress", {
  defaultValue: () => ({ emit: (_event: ProgressEvent): void => undefined })
}) {}

/** A plain callback that reports each line it is given (for work that reports outside Effect, like an image build). */
export const stageReporter: Effect.Effect<(line: string) => void> = Effect.map(Progress, (progress) => (line: string) => progress.emit({ type: "log", data: { line } }))

/** Reports one line of the work's log. */
export const progressLine = (line: string): Effect.Effect<void> => Effect.map(stageReporter, (report) => report(line))

/** A plain callback that reports each value it is given as a `progress` event (a download's bytes so far). */
export const progressReporter: Effect.Effect<(data: unknown) => void> = Effect.map(Progress, (progress) => (data: unknown) => progress.emit({ type: "progress", data }))
