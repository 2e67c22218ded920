import { Schema } from "effect"
import { Json } from "./primitives.js"
import { Int } from "./primitives.js"
import { ErrorInfo } from "./errors.js"

/** Integer contract version of the `--json` lines and MCP payloads; independent of the build version. */
export const CONTRACT_VERSION = 3 as const

export const EventType = Schema.Literal("result", "progress", "stage", "log")
export type EventType = typeof EventType.Type

/** One line of `--json` output. Exactly one `result` line ends every run; errors are on stdout too. */
export const Envelope = Schema.Struct({
  v: Int,
  type: Schema.String,
  cmd: Schema.String,
  ok: Schema.optional(Schema.Boolean),
  data: Schema.optional(Json),
  error: Schema.optional(ErrorInfo)
})
export type Envelope = typeof Envelope.Type

export const ProgressData = Schema.Struct({
  id: Schema.String,
  done: Int,
  total: Int,
  percent: Int
})
export type ProgressData = typeof ProgressData.Type
export const StageData = Schema.Struct({ recipe: Schema.String })
export type StageData = typeof StageData.Type
export const LogData = Schema.Struct({ line: Schema.String })
export type LogData = typeof LogData.Type

/** One report of long work as its `--json` line carries it (less `v` and `cmd`): a download's bytes, a recipe reached, a line of log. */
export const ProgressEvent = Schema.Union(
  Schema.Struct({ type: Schema.Literal("progress"), data: ProgressData }),
  Schema.Struct({ type: Schema.Literal("stage"), data: StageData }),
  Schema.Struct({ type: Schema.Literal("log"), data: LogData })
)
export type ProgressEvent = typeof ProgressEvent.Type

/**
 * Serialises one envelope as a single line. JSON.stringify never HTML-escapes `<`, `>` or `&`,
 * and U+2028/U+2029 stay literal, which is what the contract asks for.
 */
export const encodeLine = (envelope: Envelope): string => `${JSON.stringify(envelope)}\n`

export const resultOk = (cmd: string, data: unknown): Envelope => ({
  v: CONTRACT_VERSION,
  type: "result",
  cmd,
  ok: true,
  data: data as Json
})
export const resultError = (cmd: string, error: ErrorInfo): Envelope => ({
  v: CONTRACT_VERSION,
  type: "result",
  cmd,
  ok: false,
  error
})
export const event = (cmd: string, progress: ProgressEvent): Envelope => ({
  v: CONTRACT_VERSION,
  type: progress.type,
  cmd,
  data: progress.data
})
