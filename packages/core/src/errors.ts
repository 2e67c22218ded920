import { Cause, Data, Option, Predicate } from "effect"
import type { ErrorCode, ErrorInfo } from "@stoat/wire"

/** One step a hint advises: a catalog operation (its key) and its input. */
export interface HintStep {
  readonly operation: string
  readonly input: Readonly<Record<string, string | number | boolean>>
}

/**
 * What a failure advises doing next, in no frontend's words: the catalog operations that do it,
 * in order, and what they achieve for people ("start it"). Each frontend names the steps its own
 * way (the CLI `start it with stoat up web`, the MCP server `start it: call start with vm="web"`),
 * so core never tells an agent to type a command or a person to call a tool.
 */
export interface Hint {
  /** What the steps achieve; absent for a lookup that shows what there is (`see stoat ls`). */
  readonly advice?: string
  /** The steps must come before the failed call can succeed (`call wait first`). */
  readonly first?: true
  readonly steps: ReadonlyArray<HintStep>
}

/** Steps that fix what failed, in order. */
export const advise = (advice: string, ...steps: ReadonlyArray<HintStep>): Hint => ({ advice, steps })
/** Steps to take before the failed call is tried again. */
export const adviseFirst = (advice: string, ...steps: ReadonlyArray<HintStep>): Hint => ({ advice, first: true, steps })
/** A lookup that shows what there is. */
export const adviseLookup = (operation: string, input: HintStep["input"] = {}): Hint => ({
  steps: [{ operation, input }]
})

/** The advice several failures give. */
export const startIt = (vm: string): Hint => advise("start it", { operation: "vm.start", input: { vm } })
export const waitForSsh = (vm: string): Hint => adviseFirst("wait for its ssh", { operation: "vm.wait", input: { vm } })
export const fixOrDelete = (vm: string): Hint =>
  advise("fix it, or delete it", { operation: "vm.destroy", input: { vm } })
export const checkTheHost: Hint = adviseLookup("host.doctor")
/** For a provider host that did not answer (a libvirt URI): doctor's checks of that host. */
export const checkHostAt = (host: string): Hint => advise("check it", { operation: "host.doctor", input: { host } })

/** How a frontend words a hint: what follows "; " after the failure's own message. */
export type HintWords = (hint: Hint) => string

/** A hint as a person reads it, each step named by `name`: `see X`, `start it with X`, `stop it first with X, then Y`. */
export const personWords =
  (name: (step: HintStep) => string): HintWords =>
  (hint) => {
    const steps = hint.steps.map(name).join(", then ")
    return hint.advice === undefined ? `see ${steps}` : `${hint.advice}${hint.first ? " first" : ""} with ${steps}`
  }

/** A hint in the catalog's own terms, for callers that are no frontend: `start it with vm.start {"vm":"web"}`. */
export const catalogWords: HintWords = personWords((step) =>
  Object.keys(step.input).length > 0 ? `${step.operation} ${JSON.stringify(step.input)}` : step.operation
)

/** Fields every expected failure carries: a human message and the thing it is about. */
interface Subject {
  /** What went wrong, complete without the hint (which each frontend words and appends). */
  readonly message: string
  readonly subject?: string
  /** The errno (`EACCES`, `ENOSPC`, …) when a file-system call failed. */
  readonly errno?: string
  readonly hint?: Hint
}

/** Marks Stoat's own expected failures, so they are recognised by brand rather than by shape. */
export const StoatErrorTypeId: unique symbol = Symbol.for("@stoat/core/StoatError")
export type StoatErrorTypeId = typeof StoatErrorTypeId

/** What every Stoat error is: a tagged, yieldable error with its wire `code` and the brand. */
export interface StoatErrorShape<Tag extends string, Code extends ErrorCode> extends Cause.YieldableError {
  readonly _tag: Tag
  readonly subject?: string
  readonly errno?: string
  readonly hint?: Hint
  readonly code: Code
  readonly [StoatErrorTypeId]: StoatErrorTypeId
}

/**
 * The base of every error class: a tagged error that carries its wire `code` and the
 * `StoatErrorTypeId` brand. The type argument adds fields beyond message and subject.
 */
const StoatErrorClass = <const Tag extends string, const Code extends ErrorCode>(tag: Tag, code: Code) => {
  class Base extends Data.TaggedError(tag)<Subject> {
    readonly code: Code = code
  }
  Object.defineProperty(Base.prototype, StoatErrorTypeId, { value: StoatErrorTypeId })
  return Base as unknown as new <Extra extends Record<string, unknown> = {}>(
    args: Subject & Extra
  ) => StoatErrorShape<Tag, Code> & Readonly<Extra>
}

// One class per wire code. Frontends branch on `code`, never on `message`.
export class NotFound extends StoatErrorClass("NotFound", "not_found") {}
export class Broken extends StoatErrorClass("Broken", "broken") {}
export class NameTaken extends StoatErrorClass("NameTaken", "name_taken") {}
export class InvalidSpec extends StoatErrorClass("InvalidSpec", "invalid_spec") {}
export class ImageNotDownloaded extends StoatErrorClass("ImageNotDownloaded", "image_not_downloaded") {}
export class RecipeNotApplicable extends StoatErrorClass("RecipeNotApplicable", "recipe_not_applicable") {}
export class InUse extends StoatErrorClass("InUse", "in_use") {}
export class GitRequired extends StoatErrorClass("GitRequired", "git_required") {}
export class NotRunning extends StoatErrorClass("NotRunning", "not_running") {}
export class AlreadyRunning extends StoatErrorClass("AlreadyRunning", "already_running") {}
export class NoDisk extends StoatErrorClass("NoDisk", "no_disk") {}
export class ImmutableField extends StoatErrorClass("ImmutableField", "immutable_field") {}
export class DiskShrink extends StoatErrorClass("DiskShrink", "disk_shrink") {}
export class CannotReach extends StoatErrorClass("CannotReach", "cannot_reach") {}
export class UnknownLog extends StoatErrorClass("UnknownLog", "unknown_log") {}
export class Timeout extends StoatErrorClass("Timeout", "timeout") {}
/** The caller stopped waiting and the work went on in the background; `subject` is its job id. */
export class StillRunning extends StoatErrorClass("StillRunning", "still_running") {}
export class Canceled extends StoatErrorClass("Canceled", "canceled") {}
export class Usage extends StoatErrorClass("Usage", "usage") {}
export class ConfirmationRequired extends StoatErrorClass("ConfirmationRequired", "confirmation_required") {}
export class AccessDenied extends StoatErrorClass("AccessDenied", "access_denied") {}
export class RateLimited extends StoatErrorClass("RateLimited", "rate_limited") {}
export class LockOutOfDate extends StoatErrorClass("LockOutOfDate", "lock_out_of_date") {}
export class Internal extends StoatErrorClass("Internal", "internal") {}
// The VM provider's failures (see ports/hypervisor.ts), named for no provider: the message names
// the provider and its program; the wire codes keep the names of the first provider, QEMU.
/** The provider's program or service is not there (QEMU: qemu-system-x86_64 or qemu-img not on PATH). */
export class ProviderMissing extends StoatErrorClass("ProviderMissing", "qemu_missing") {}
/** Hardware acceleration the host offers cannot run guests (QEMU: /dev/kvm). */
export class AcceleratorUnusable extends StoatErrorClass("AcceleratorUnusable", "kvm_unusable") {}
/** The provider did not start the VM. `portInUse`: the host port of a forward it could not bind (taken since it was checked), when that was the reason. */
export class ProviderStartFailed extends StoatErrorClass("ProviderStartFailed", "qemu_start_failed")<{
  readonly portInUse?: number
}> {}
/** The running VM's control channel (QEMU: its QMP socket) cannot be reached. */
export class ControlUnreachable extends StoatErrorClass("ControlUnreachable", "monitor_unreachable") {}
/** The running VM's control channel refused a command. */
export class ControlRejected extends StoatErrorClass("ControlRejected", "monitor_rejected") {}
export class NoConsolePassword extends StoatErrorClass("NoConsolePassword", "no_console_password") {}
export class ShareInvalid extends StoatErrorClass("ShareInvalid", "share_invalid") {}
export class NoXattr extends StoatErrorClass("NoXattr", "no_xattr") {}
export class ScreenshotFailed extends StoatErrorClass("ScreenshotFailed", "screenshot_failed") {}
export class DownloadFailed extends StoatErrorClass("DownloadFailed", "download_failed") {}
export class DownloadStalled extends StoatErrorClass("DownloadStalled", "download_stalled") {}
export class ChecksumMismatch extends StoatErrorClass("ChecksumMismatch", "checksum_mismatch") {}
export class NoSuchImage extends StoatErrorClass("NoSuchImage", "no_such_image") {}
export class CapabilityUnavailable extends StoatErrorClass("CapabilityUnavailable", "capability_unavailable")<{
  readonly reason: string
}> {}
export class LimitReached extends StoatErrorClass("LimitReached", "limit_reached")<{
  readonly needed_mb: number
  readonly available_mb: number
}> {}

/**
 * The one map from wire code to error class. `satisfies` makes a code without a class (or a
 * class filed under another code) a compile error; the `StoatError` union is derived from it.
 */
export const ERROR_CLASSES = {
  not_found: NotFound,
  broken: Broken,
  name_taken: NameTaken,
  invalid_spec: InvalidSpec,
  image_not_downloaded: ImageNotDownloaded,
  recipe_not_applicable: RecipeNotApplicable,
  in_use: InUse,
  git_required: GitRequired,
  not_running: NotRunning,
  already_running: AlreadyRunning,
  no_disk: NoDisk,
  immutable_field: ImmutableField,
  disk_shrink: DiskShrink,
  cannot_reach: CannotReach,
  unknown_log: UnknownLog,
  timeout: Timeout,
  canceled: Canceled,
  usage: Usage,
  confirmation_required: ConfirmationRequired,
  access_denied: AccessDenied,
  rate_limited: RateLimited,
  lock_out_of_date: LockOutOfDate,
  internal: Internal,
  qemu_missing: ProviderMissing,
  kvm_unusable: AcceleratorUnusable,
  qemu_start_failed: ProviderStartFailed,
  monitor_unreachable: ControlUnreachable,
  monitor_rejected: ControlRejected,
  no_console_password: NoConsolePassword,
  share_invalid: ShareInvalid,
  no_xattr: NoXattr,
  screenshot_failed: ScreenshotFailed,
  download_failed: DownloadFailed,
  download_stalled: DownloadStalled,
  checksum_mismatch: ChecksumMismatch,
  no_such_image: NoSuchImage,
  capability_unavailable: CapabilityUnavailable,
  limit_reached: LimitReached,
  still_running: StillRunning
} as const satisfies {
  readonly [C in ErrorCode]: abstract new (
    ...args: never
  ) => { readonly code: C; readonly [StoatErrorTypeId]: StoatErrorTypeId }
}

/** Every expected failure of Stoat: one class per wire code. */
export type StoatError = InstanceType<(typeof ERROR_CLASSES)[ErrorCode]>

/** True for Stoat's own expected failures (by brand, not by the shape of `_tag` and `code`). */
export const isStoatError = (value: unknown): value is StoatError => Predicate.hasProperty(value, StoatErrorTypeId)

/** For `catch:` of I/O that should not fail: "<what>: <cause>" as an `internal` error. */
export const internalError = (what: string) => (cause: unknown) =>
  new Internal({ message: `${what}: ${cause instanceof Error ? cause.message : String(cause)}` })

/** A failure's message and its hint, if it has one, in a frontend's words. */
export const messageOf = (failure: StoatError, words: HintWords): string =>
  failure.hint === undefined ? failure.message : `${failure.message}; ${words(failure.hint)}`

/**
 * The one mapping from any failure to the wire ErrorInfo, its hint in the frontend's `words`.
 * A defect (a bug) becomes `internal`.
 */
export const toErrorInfo = (failure: unknown, words: HintWords = catalogWords): ErrorInfo => {
  if (isStoatError(failure)) {
    const info: { -readonly [K in keyof ErrorInfo]: ErrorInfo[K] } = {
      code: failure.code,
      message: messageOf(failure, words)
    }
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
    if (Option.isSome(expected)) return toErrorInfo(expected.value, words)
    if (Cause.isInterruptedOnly(failure)) return { code: "canceled", message: "the operation was canceled" }
    return toErrorInfo(Cause.squash(failure), words)
  }
  const message = failure instanceof Error ? failure.message : String(failure)
  return { code: "internal", message }
}
