import { Context, Duration, Effect, Layer, Schedule } from "effect"
import { mkdirSync, statSync } from "node:fs"
import { dirname, join } from "node:path"
import { DataRoot } from "./data-root.js"
import { InUse, InvalidSpec, Timeout, type LimitReached } from "../errors.js"
import { diskFull, isDiskFull } from "./fs.js"
import { pollUntil } from "./poll.js"

type Database = import("better-sqlite3").Database

/**
 * Cross-process locks. Each lock is an SQLite file held with `BEGIN EXCLUSIVE`: SQLite's POSIX
 * record locks are released by the kernel when the holder dies, so a crashed process never
 * leaves a lock behind, and SQLite also excludes two holders inside one process.
 */
export class Locks extends Context.Tag("stoat/Locks")<
  Locks,
  {
    /** Serialises create/clone/destroy/prune/update and "count running + start" across processes. */
    readonly withRootLock: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | Timeout | LockError, R>
    /** Serialises state changes of one VM (start/stop/snapshot/update). */
    readonly withVmLock: <A, E, R>(
      vm: string,
      effect: Effect.Effect<A, E, R>
    ) => Effect.Effect<A, E | Timeout | LockError, R>
    /** Serialises changes to one file-backed state other than a VM (`what` names it in a timeout). */
    readonly withLock: <A, E, R>(
      path: string,
      what: string,
      effect: Effect.Effect<A, E, R>
    ) => Effect.Effect<A, E | Timeout | LockError, R>
    /** A lock that is never waited for: busy ⇒ `in_use` (a second apply on one VM). */
    readonly tryLock: <A, E, R>(
      path: string,
      what: string,
      effect: Effect.Effect<A, E, R>
    ) => Effect.Effect<A, E | InUse | LockError, R>
  }
>() {}

let sqlite: typeof import("better-sqlite3") | undefined
const loadSqlite = Effect.promise(async () => (sqlite ??= (await import("better-sqlite3")).default))

/** A lock that cannot be taken: a lock file stoat cannot use (invalid_spec), or a full file system (limit_reached). */
export type LockError = InvalidSpec | LimitReached

/**
 * A lock file that cannot be used is the data root's problem, said with the path and what to do;
 * a full file system is said as such, never as a damaged lock file someone would then delete.
 */
const unusableLock = (path: string, cause: unknown): Effect.Effect<never, LockError> =>
  isDiskFull(cause)
    ? Effect.flatMap(diskFull(`cannot take the lock ${path}`, path), Effect.fail)
    : Effect.fail(damagedLock(path, cause))

const damagedLock = (path: string, cause: unknown): InvalidSpec => {
  const kind = (() => {
    try {
      const info = statSync(path)
      return info.isDirectory()
        ? "it is a directory"
        : info.isFile()
          ? "it is not a lock file stoat can open"
          : "it is not a regular file"
    } catch {
      return cause instanceof Error ? cause.message : String(cause)
    }
  })()
  return new InvalidSpec({
    message: `cannot use the lock file ${path}: ${kind}; remove it and stoat will recreate it`,
    subject: path
  })
}

const tryAcquire = (db: Database, path: string): Effect.Effect<boolean, LockError> =>
  Effect.suspend(() => {
    try {
      // Nothing is ever written to a lock file, but SQLite's default journal is a file beside it
      // made when a transaction begins: kept in memory, a lock is taken on a full file system too
      // (rm and prune must work there, to free space). Set here, where busy is expected: reading
      // the mode waits on a holder too.
      db.pragma("journal_mode = MEMORY")
      db.exec("BEGIN EXCLUSIVE")
      return Effect.succeed(true)
    } catch (error) {
      if ((error as { code?: string }).code === "SQLITE_BUSY") return Effect.succeed(false)
      db.close()
      return unusableLock(path, error)
    }
  })

const open = (path: string) =>
  Effect.flatMap(loadSqlite, (Sqlite) =>
    Effect.suspend(() => {
      try {
        mkdirSync(dirname(path), { recursive: true })
        return Effect.succeed(new Sqlite(path, { timeout: 0 }))
      } catch (cause) {
        return unusableLock(path, cause)
      }
    })
  )

const release = (db: Database) =>
  Effect.sync(() => {
    if (!db.open) return
    try {
      if (db.inTransaction) db.exec("ROLLBACK")
    } finally {
      db.close()
    }
  })

/** Busy lock: look again after 5 ms, doubling up to every 100 ms. */
const LOCK_RETRY = Schedule.union(Schedule.exponential(Duration.millis(5)), Schedule.spaced(Duration.millis(100)))

/** Opens the lock file and takes the lock, looking again while it is busy; the wait itself stays interruptible. */
const acquireBlocking = (path: string, what: string, wait: Duration.Duration) =>
  Effect.flatMap(Effect.acquireRelease(open(path), release), (db) =>
    pollUntil(tryAcquire(db, path), {
      schedule: LOCK_RETRY,
      until: (acquired) => acquired,
      within: wait,
      onTimeout: () => new Timeout({ message: `timed out waiting for the ${what} lock (${path})`, subject: path })
    })
  )

export const makeLocks = (
  rootLock: string,
  vmLock: (vm: string) => string,
  wait = Duration.minutes(2)
): Context.Tag.Service<Locks> => ({
  withRootLock: (effect) => Effect.scoped(Effect.zipRight(acquireBlocking(rootLock, "data-root", wait), effect)),
  withVmLock: (vm, effect) => Effect.scoped(Effect.zipRight(acquireBlocking(vmLock(vm), `VM ${vm}`, wait), effect)),
  withLock: (path, what, effect) => Effect.scoped(Effect.zipRight(acquireBlocking(path, what, wait), effect)),
  tryLock: (path, what, effect) =>
    Effect.scoped(
      Effect.zipRight(
        Effect.acquireRelease(
          Effect.flatMap(open(path), (db) =>
            Effect.flatMap(tryAcquire(db, path), (acquired) =>
              acquired
                ? Effect.succeed(db)
                : Effect.zipRight(
                    release(db),
                    Effect.fail(new InUse({ message: `${what} in progress`, subject: path }))
                  )
            )
          ),
          release
        ),
        effect
      )
    )
})

export const LocksLive = Layer.effect(
  Locks,
  Effect.map(DataRoot, (root) => makeLocks(root.rootLock, (vm) => join(root.vmDir(vm), ".vm.lock")))
)
