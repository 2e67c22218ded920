import { Cause, Data, Option } from "effect"
import type { ErrorCode, ErrorInfo } from "@stoat/wire"

/** Fields every expected failure carries: a human message and the thing it is about. */
interface Subject {
  readonly message: string
  readonly subject?: string
}

// One class per wire code. Frontends branch on `code`, never on `message`.
export class NotFound extends Data.TaggedError("NotFound")<Subject> { readonly code = "not_found" as const }
export class Broken extends Data.TaggedError("Broken")<Subject> { readonly code = "broken" as const }
export class NameTaken extends Data.TaggedError("NameTaken")<Subject> { readonly code = "name_taken" as const }
export class InvalidSpec extends Data.TaggedError("InvalidSpec")<Subject> { readonly code = "invalid_spec" as const }
export class ImageNotDownloaded extends Data.TaggedError("ImageNotDownloaded")<Subject> { readonly code = "image_not_downloaded" as const }
export class RecipeNotApplicable extends Data.TaggedError("RecipeNotApplicable")<Subject> { readonly code = "recipe_not_applicable" as const }
export class InUse extends Data.TaggedError("InUse")<Subject> { readonly code = "in_use" as const }
export class GitRequired extends Data.TaggedError("GitRequired")<Subject> { readonly code = "git_required" as const }
export class NotRunning extends Data.TaggedError("NotRunning")<Subject> { readonly code = "not_running" as const }
export class AlreadyRunning extends Data.TaggedError("AlreadyRunning")<Subject> { readonly code = "already_running" as const }
export class NoDisk extends Data.TaggedError("NoDisk")<Subject> { readonly code = "no_disk" as const }
export class ImmutableField extends Data.TaggedError("ImmutableField")<Subject> { readonly code = "immutable_field" as const }
export class DiskShrink extends Data.TaggedError("DiskShrink")<Subject> { readonly code = "disk_shrink" as const }
export class CannotReach extends Data.TaggedError("CannotReach")<Subject> { readonly code = "cannot_reach" as const }
export class UnknownLog extends Data.TaggedError("UnknownLog")<Subject> { readonly code = "unknown_log" as const }
export class Timeout extends Data.TaggedError("Timeout")<Subject> { readonly code = "timeout" as const }
export class Canceled extends Data.TaggedError("Canceled")<Subject> { readonly code = "canceled" as const }
export class Usage extends Data.TaggedError("Usage")<Subject> { readonly code = "usage" as const }
export class ConfirmationRequired extends Data.TaggedError("ConfirmationRequired")<Subject> { readonly code = "confirmation_required" as const }
export class AccessDenied extends Data.TaggedError("AccessDenied")<Subject> { readonly code = "access_denied" as const }
export class RateLimited extends Data.TaggedError("RateLimited")<Subject> { readonly code = "rate_limited" as const }
export class LockOutOfDate extends Data.TaggedError("LockOutOfDate")<Subject> { readonly code = "lock_out_of_date" as const }
export class Internal extends Data.TaggedError("Internal")<Subject> { readonly code = "internal" as const }
export class QemuMissing extends Data.TaggedError("QemuMissing")<Subject> { readonly code = "qemu_missing" as const }
export class KvmUnusable extends Data.TaggedError("KvmUnusable")<Subject> { readonly code = "kvm_unusable" as const }
export class QemuStartFailed extends Data.TaggedError("QemuStartFailed")<Subject> { readonly code = "qemu_start_failed" as const }
export class MonitorUnreachable extends Data.TaggedError("MonitorUnreachable")<Subject> { readonly code = "monitor_unreachable" as const }
export class MonitorRejected extends Data.TaggedError("MonitorRejected")<Subject> { readonly code = "monitor_rejected" as const }
export class NoConsolePassword extends Data.TaggedError("NoConsolePassword")<Subject> { readonly code = "no_console_password" as const }
export class ShareInvalid extends Data.TaggedError("ShareInvalid")<Subject> { readonly code = "share_invalid" as const }
export class NoXattr extends Data.TaggedError("NoXattr")<Subject> { readonly code = "no_xattr" as const }
export class ScreenshotFailed extends Data.TaggedError("ScreenshotFailed")<Subject> { readonly code = "screenshot_failed" as const }
export class DownloadFailed extends Data.TaggedError("DownloadFailed")<Subject> { readonly code = "download_failed" as const }
export class DownloadStalled extends Data.TaggedError("DownloadStalled")<Subject> { readonly code = "download_stalled" as const }
export class ChecksumMismatch extends Data.TaggedError("ChecksumMismatch")<Subject> { readonly code = "checksum_mismatch" as const }
export class NoSuchImage extends Data.TaggedError("NoSuchImage")<Subject> { readonly code = "no_such_image" as const }
export class CapabilityUnavailable extends Data.TaggedError("CapabilityUnavailable")<Subject & { readonly reason: string }> {
  readonly code = "capability_unavailable" as const
}
export class LimitReached extends Data.TaggedError("LimitReached")<Subject & { readonly needed_mb: number; readonly available_mb: number }> {
  readonly code = "limit_reached" as const
}

/** For `catch:` of I/O that should not fail: "<what>: <cause>" as an `internal` error. */
export const internalError = (what: string) => (cause: unknown) =>
  new Internal({ message: `${what}: ${cause instanceof Error ? cause.message : String(cause)}` })

export type StoatError =
  | NotFound | Broken | NameTaken | InvalidSpec | ImageNotDownloaded | RecipeNotApplicable | InUse | GitRequired
  | NotRunning | AlreadyRunning | NoDisk | ImmutableField | DiskShrink | CannotReach | UnknownLog | Timeout | Canceled
  | Usage | ConfirmationRequired | AccessDenied | RateLimited | LockOutOfDate | Internal | QemuMissing | KvmUnusable
  | QemuStartFailed | MonitorUnreachable | MonitorRejected | NoConsolePassword | ShareInvalid | NoXattr
  | ScreenshotFailed | DownloadFailed | DownloadStalled | ChecksumMismatch | NoSuchImage | CapabilityUnavailable
  | LimitReached

const isStoatError = (value: unknown): value is StoatError =>
  typeof value === "object" && value !== null && "_tag" in value && "code" in value && typeof (value as { code: unknown }).code === "string"

/** The one mapping from any failure to the wire ErrorInfo. A defect (a bug) becomes `internal`. */
export const toErrorInfo = (failure: unknown): ErrorInfo => {
  if (isStoatError(failure)) {
    const info: { -readonly [K in keyof ErrorInfo]: ErrorInfo[K] } = { code: failure.code as ErrorCode, message: failure.message }
    if (failure.subject !== undefined) info.subject = failure.subject
    if (failure instanceof CapabilityUnavailable) info.reason = failure.reason
    if (failure instanceof LimitReached) {
      info.needed_mb = failure.needed_mb
      info.available_mb = failure.available_mb
    }
    return info
  }
  if (Cause.isCause(failure)) {
    const expected = Cause.failureOption(failure)
    if (Option.isSome(expected)) return toErrorInfo(expected.value)
    if (Cause.isInterruptedOnly(failure)) return { code: "canceled", message: "the operation was canceled" }
    return toErrorInfo(Cause.squash(failure))
  }
  const message = failure instanceof Error ? failure.message : String(failure)
  return { code: "internal", message }
}
