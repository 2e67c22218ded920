import { Schema } from "effect"

/** Every error code of contract v3. Codes are only ever added; a consumer treats an unknown code as a generic failure. */
export const ERROR_CODES = [
  "not_found",
  "broken",
  "name_taken",
  "invalid_spec",
  "image_not_downloaded",
  "recipe_not_applicable",
  "in_use",
  "git_required",
  "not_running",
  "already_running",
  "no_disk",
  "immutable_field",
  "disk_shrink",
  "cannot_reach",
  "unknown_log",
  "timeout",
  "canceled",
  "usage",
  "confirmation_required",
  "access_denied",
  "rate_limited",
  "lock_out_of_date",
  "internal",
  "qemu_missing",
  "kvm_unusable",
  "qemu_start_failed",
  "monitor_unreachable",
  "monitor_rejected",
  "no_console_password",
  "share_invalid",
  "no_xattr",
  "screenshot_failed",
  "download_failed",
  "download_stalled",
  "checksum_mismatch",
  "no_such_image",
  "capability_unavailable",
  "limit_reached",
  "still_running"
] as const

export const ErrorCode = Schema.Literal(...ERROR_CODES)
export type ErrorCode = typeof ErrorCode.Type

/** Reserved: what kind of thing `subject` names. Not emitted by contract v3 producers. */
export const ErrorKind = Schema.Literal("vm", "field", "recipe", "image", "snapshot", "port", "path")

export const ErrorInfo = Schema.Struct({
  code: ErrorCode,
  /** For people; never parse it. */
  message: Schema.String,
  subject: Schema.optional(Schema.String),
  kind: Schema.optional(ErrorKind),
  /** Set with `capability_unavailable`. */
  reason: Schema.optional(Schema.String),
  /** Set with `limit_reached`. */
  needed_mb: Schema.optional(Schema.Int),
  available_mb: Schema.optional(Schema.Int),
  /** Set with `rate_limited`: milliseconds until a retry can succeed. */
  retry_after_ms: Schema.optional(Schema.Int)
})
export type ErrorInfo = typeof ErrorInfo.Type

/** The `_meta` key under which MCP error results carry the full ErrorInfo. */
export const ERROR_META_KEY = "io.github.novusedge.stoat/error"
