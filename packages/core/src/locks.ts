import { Context, Duration, Effect, Layer } from "effect"
import { mkdirSync } from "node:fs"
import { dirname, join } from "node:path"
import { DataRoot } from "./data-root.js"
import { InUse, Timeout } from "./errors.js"

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
    readonly withRootLock: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | Timeout, R>
    /** Serialises state changes of one VM (start/stop/snapshot/update). */
    readonly withVmLock: <A, E, R>(vm: string, effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | Timeout, R>
    /** A lock that is never waited for: busy ⇒ `in_use` (a second apply on one VM). */
    readonly tryLock: <A, E, R>(path: string, what: string, effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | InUse, R>
  }
>() {}

let sqlite: typeof import("better-sqlite3") | undefined
const loadSqlite = Effect.promise(async () => (sqlite ??= (await import("better-sqlite3")).default))

const tryAcquire = (db: Database): boolean => {
  try {
    db.exec("BEGIN EXCLUSIVE")
    return true
  } catch (error) {
    if ((error as { code?: string }).code === "SQLITE_BUSY") return false
    throw error
  }
}

const open = (path: string) =>
  Effect.flatMap(loadSqlite, (Sqlite) =>
    Effect.sync(() => {
      mkdirSync(dirname(path), { recursive: true })
      return new Sqlite(path, { timeout: 0 })
    })
  )

const release = (db: Database) =>
  Effect.sync(() => {
    try {
      if (db.inTransaction) db.exec("ROLLBACK")
    } finally {
      db.close()
    }
  })

const acquireBlocking = (path: string, what: string, wait: Duration.Duration) =>
  Effect.acquireRelease(
    Effect.gen(function* () {
      const db = yield* open(path)
      const deadline = Date.now() + Duration.toMillis(wait)
      let pause = 5
      while (!tryAcquire(db)) {
        if (Date.now() > deadline) {
          db.close()
          return yield* new Timeout({ message: `timed out waiting for the ${what} lock (${path})`, subject: path })
        }
        yield* Effect.sleep(Duration.millis(pause))
        pause = Math.min(pause * 2, 100)
      }
      return db
    }),
    release
  )

export const makeLocks = (rootLock: string, vmLock: (vm: string) => string, wait = Duration.minutes(2)): Context.Tag.Service<Locks> => ({
  withRootLock: (effect) => Effect.scoped(Effect.zipRight(acquireBlocking(rootLock, "data-root", wait), effect)),
  withVmLock: (vm, effect) => Effect.scoped(Effect.zipRight(acquireBlocking(vmLock(vm), `VM ${vm}`, wait), effect)),
  tryLock: (path, what, effect) =>
    Effect.scoped(
      Effect.zipRight(
        Effect.acquireRelease(
          Effect.flatMap(open(path), (db) =>
            tryAcquire(db) ? Effect.succeed(db) : Effect.zipRight(release(db), Effect.fail(new InUse({ message: `${what} in progress`, subject: path })))
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
