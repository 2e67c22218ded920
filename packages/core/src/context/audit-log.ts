import { closeSync, constants, existsSync, fstatSync, openSync, writeSync } from "node:fs"
import { dirname } from "node:path"
import { Context, Effect, Layer } from "effect"
import { DataRoot } from "../platform/data-root.js"

/** One call as stoat.log records it: when it ended, who, what, which VM, how long, outcome. Never argument values. */
export interface AuditEntry {
  /** When the call ended (epoch ms, from the call's Clock). */
  readonly at: number
  readonly operation: string
  readonly tool: string
  readonly entrypoint: string
  readonly requestId: string
  readonly vm?: string | undefined
  readonly ms: number
  readonly outcome: string
}

/** Where every operation call leaves its line (`logs/stoat.log` of the data root). */
export class AuditLog extends Context.Tag("stoat/AuditLog")<
  AuditLog,
  { readonly record: (entry: AuditEntry) => Effect.Effect<void> }
>() {}

/** How often a held log handle is checked for a file deleted under it (a person clearing the log). */
const RECHECK_MS = 1_000

const lineOf = (entry: AuditEntry): string =>
  `${new Date(entry.at).toISOString()} INFO op=${entry.operation} tool=${entry.tool} entrypoint=${entry.entrypoint} request=${entry.requestId}` +
  `${entry.vm ? ` vm=${entry.vm}` : ""} ms=${entry.ms} outcome=${entry.outcome}\n`

/**
 * Appends through one held O_APPEND descriptor: a long-lived server writes a line per call, and
 * opening the file each time cost more than the call; O_APPEND keeps lines of concurrent processes
 * whole. The writes are synchronous: a line into the page cache takes microseconds, a round trip
 * through libuv's thread pool a tenth of a millisecond of every MCP call. Only a regular file is
 * written, and it is opened non-blocking, so a FIFO planted as stoat.log cannot stall the caller.
 * Best effort: a data root without logs/ (never written to) gets no folder created by a read.
 */
export const makeAuditLog = (path: string) =>
  Effect.gen(function* () {
    let held: { readonly fd: number | undefined; checked: number } | undefined
    const openLog = (now: number) => {
      let fd: number | undefined
      try {
        fd = openSync(path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NONBLOCK, 0o644)
        if (!fstatSync(fd).isFile()) {
          closeQuietly(fd)
          fd = undefined
        }
      } catch {
        fd = undefined
      }
      held = { fd, checked: now }
      return held
    }
    const append = (entry: AuditEntry): void => {
      const now = entry.at
      let log = held
      // Without a log, a synchronous look per call, not another failing open, on a root without logs/.
      if (log === undefined || (log.fd === undefined && existsSync(dirname(path)))) log = openLog(now)
      else if (log.fd !== undefined && now - log.checked > RECHECK_MS) {
        // The log deleted under the held descriptor (a person clearing it): a new file.
        log.checked = now
        if (nlinkOf(log.fd) === 0) {
          closeQuietly(log.fd)
          log = openLog(now)
        }
      }
      // The line is made only when there is a log to take it.
      if (log.fd === undefined) return
      try {
        writeSync(log.fd, lineOf(entry))
      } catch {
        // A full or read-only disk: the call itself still answers.
      }
    }
    yield* Effect.addFinalizer(() => Effect.sync(() => held?.fd !== undefined && closeQuietly(held.fd)))
    return AuditLog.of({ record: (entry) => Effect.sync(() => append(entry)) })
  })

const nlinkOf = (fd: number): number => {
  try {
    return fstatSync(fd).nlink
  } catch {
    return 0
  }
}

const closeQuietly = (fd: number): void => {
  try {
    closeSync(fd)
  } catch {
    // Already closed.
  }
}

export const AuditLogLive = Layer.scoped(
  AuditLog,
  Effect.flatMap(DataRoot, (root) => makeAuditLog(`${root.logs}/stoat.log`))
)
