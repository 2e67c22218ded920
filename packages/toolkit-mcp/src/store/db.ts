import { Context, Effect, Either, Layer } from "effect"
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from "node:fs"
import { dirname } from "node:path"
import { Broken } from "@stoat/core/errors"

type Database = import("better-sqlite3").Database

/**
 * The per-user `config.db` of a command-line tool (the toolkit's config defaults, OAuth
 * profiles and MCP profiles all live in it). A missing file means "nothing saved": reads never
 * create it, the first write does, with a 0700 directory and a 0600 file because it holds
 * client secrets.
 */
export class ConfigDb extends Context.Tag("toolkit/ConfigDb")<
  ConfigDb,
  {
    readonly path: string
    /** Runs `f` on the open database, or returns `empty` when there is no database yet. */
    readonly read: <A>(f: (db: Database) => A, empty: A) => Effect.Effect<A, Broken>
    /**
     * Runs `f` inside one transaction, creating the database first if needed. A `Left` from `f`
     * rolls the transaction back and becomes the failure.
     */
    readonly write: <A, E = never>(f: (db: Database) => Either.Either<A, E>) => Effect.Effect<A, Broken | E>
  }
>() {}

let sqlite: typeof import("better-sqlite3") | undefined
// Loaded on first use so that commands which never touch the store do not pay for the native module.
const loadSqlite = Effect.promise(async () => (sqlite ??= (await import("better-sqlite3")).default))

const unreadable = (path: string, error: unknown) =>
  new Broken({
    message: `config database ${path} is unreadable: ${error instanceof Error ? error.message : String(error)}`,
    subject: path
  })

/** True when a table exists; reads of a never-created table mean "no rows". */
export const hasTable = (db: Database, table: string): boolean =>
  db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table) !== undefined

/** Quotes an SQL identifier (table names come from topic names, which are checked, but quote anyway). */
export const ident = (name: string): string => `"${name.replaceAll('"', '""')}"`

/** Carries a domain failure out of a better-sqlite3 transaction so that it rolls back. */
class Rollback {
  constructor(readonly failure: unknown) {}
}

const createPrivateFile = (path: string): void => {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
  if (!existsSync(path)) closeSync(openSync(path, "a", 0o600))
  // The umask may have widened nothing, but an older file could be world-readable: tighten it.
  if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600)
}

/** A scoped handle on the database at `path`: opened at most once, closed when the scope ends. */
export const ConfigDbLive = (path: string): Layer.Layer<ConfigDb> =>
  Layer.scoped(
    ConfigDb,
    Effect.gen(function* () {
      const Sqlite = yield* loadSqlite
      const state = yield* Effect.acquireRelease(
        Effect.sync(() => ({ db: undefined as Database | undefined })),
        (s) => Effect.sync(() => s.db?.close())
      )
      const open = (create: boolean): Database | undefined => {
        if (state.db) return state.db
        if (!create && !existsSync(path)) return undefined
        if (create) createPrivateFile(path)
        const db = new Sqlite(path, { fileMustExist: true, timeout: 5_000 })
        state.db = db
        return db
      }
      return {
        path,
        read: <A>(f: (db: Database) => A, empty: A) =>
          Effect.try({
            try: () => {
              const db = open(false)
              return db ? f(db) : empty
            },
            catch: (error) => unreadable(path, error)
          }),
        write: <A, E = never>(f: (db: Database) => Either.Either<A, E>) =>
          Effect.suspend((): Effect.Effect<A, Broken | E> => {
            try {
              const db = open(true)!
              return db
                .transaction(() => {
                  const outcome = f(db)
                  if (Either.isLeft(outcome)) throw new Rollback(outcome.left)
                  return Effect.succeed(outcome.right)
                })
                .immediate()
            } catch (error) {
              return error instanceof Rollback ? Effect.fail(error.failure as E) : Effect.fail(unreadable(path, error))
            }
          })
      }
    })
  )
