import { ERROR_META_KEY, type ErrorInfo } from "@stoat/wire"
import { redact } from "../policy/redact.js"

export interface ToolResult {
  readonly [key: string]: unknown
  readonly content: ReadonlyArray<{ readonly type: "text"; readonly text: string }>
  readonly structuredContent?: Record<string, unknown>
  readonly isError?: true
  readonly _meta?: Record<string, unknown>
}

/** A success: the DTO as structuredContent and the same JSON as a text block for older clients. */
export const successResult = (data: Record<string, unknown>): ToolResult => {
  const safe = redact(data)
  return { content: [{ type: "text", text: JSON.stringify(safe) }], structuredContent: safe }
}

/**
 * A failure: isError, the CLI's human message first, then `{"error":{...}}` as a second text
 * block, and the complete ErrorInfo under `_meta[ERROR_META_KEY]`.
 */
export const errorResult = (error: ErrorInfo): ToolResult => {
  const safe = redact(error)
  return {
    isError: true,
    content: [
      { type: "text", text: safe.message },
      { type: "text", text: JSON.stringify({ error: safe }) }
    ],
    _meta: { [ERROR_META_KEY]: safe }
  }
}
