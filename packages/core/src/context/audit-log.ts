import { existsSync } from "node:fs"
import { open, type FileHandle } from "node:fs/promises"
import { dirname } from "node:path"
import { Clock, Context, Effect, Layer } from "effect"
import { DataRoot } from "../platform/data-root.js"

/** One call as stoat.log records it: who, what, which VM, how long, outcome. Never argument values. */
export interface AuditEntry {
  readonly operation: string
  readonly tool: string
  readonly entrypoint: string
  readonly requestId: string
  readonly vm?: string | undefined
  readonly ms: number
  readonly outcome: string
}

/** Where every operation call leaves its line (`logs/stoat.log` of the data root). */
export class AuditLog extends Context.Tag("stoat/AuditLog")<AuditLog, { readonly record: (entry: AuditEntry) => Effect.Effect<void> }>() {}

/** How often a held log handle is checked for a file deleted under it (a person clearing the log). */
const RECHECK_MS = 1_000

const lineOf = (at: number, entry: AuditEntry): string =>
  `${new Date(at).toISOString()} INFO op=${entry.operation} tool=${entry.tool} entrypoint=${entry.entrypoint} request=${entry.requestId}` +
  `${entry.vm ? ` vm=${entry.vm}` : ""} ms=${entry.ms} outcome=${entry.outcome}\n`

/**
 * Appends through one held O_APPEND handle: a long-lived server writes a line per call, and opening
 * the file each time cost more than the call; O_APPEND keeps lines of concurrent processes whole.
 * Best effort: a data root without logs/ (never written to) gets no folder created by a read.
 */
export const makeAuditLog = (path: string) =>
  Effect.gen(function* () {
    let held: { readonly file: Promise<FileHandle>; checked: number; failed: boolean } | undefined
    const openLog = (now: number) => {
      const entry = { file: open(path, "a"), checked: now, failed: false }
      entry.file.catch(() => {
        entry.failed = true
      })
      held = entry
      return entry
    }
    const close = (entry: NonNullable<typeof held>) => entry.file.then((file) => file.close()).catch(() => undefined)
    const append = async (now: number, line: string): Promise<void> => {
      let entry = held ?? openLog(now)
      if (entry.failed) {
        // A synchronous look, not another failing open per call on a read-only root.
        if (!existsSync(dirname(path))) return
        entry = openLog(now)
      } else if (now - entry.checked > RECHECK_MS) {
        entry.checked = now
        const unlinked = await entry.file.then((file) => file.stat()).then((info) => info.nlink === 0, () => true)
        if (unlinked) {
          void close(entry)
          entry = openLog(now)
        }
      }
      await entry.file.then((file) => file.write(line)).catch(() => undefined)
    }
    yield* Effect.addFinalizer(() => Effect.promise(() => (held === undefined ? Promise.resolve() : close(held))))
    return AuditLog.of({
      record: (entry) => Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.promise(() => append(now, lineOf(now, entry))))
    })
  })

export const AuditLogLive = Layer.scoped(
  AuditLog,
  Effect.flatMap(DataRoot, (root) => makeAuditLog(`${root.logs}/stoat.log`))
)
