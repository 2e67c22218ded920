import { Context, Effect, Either, Layer } from "effect"
import { Broken, InvalidSpec } from "@stoat/core/errors"
import { ConfigDb, hasTable, ident } from "./db.js"

/**
 * One configured default. `action` is "" for the topic level or the space-joined path below the
 * topic (`brainfuck`, `profile add`); `tokens` are the command-line tokens of the value.
 */
export interface ConfigEntry {
  readonly action: string
  readonly option: string
  readonly tokens: ReadonlyArray<string>
}

export interface ConfigKey {
  readonly action: string
  readonly option: string
}

/** Topic names double as table names, so they are held to the same pattern as profile names. */
export const TOPIC_TABLE_PATTERN = /^[a-z0-9-]+$/

/**
 * Per-user defaults for command options: one table per topic, named after the topic, with
 * columns `action, option, value` (value = JSON array of tokens), primary key `(action, option)`.
 */
export class ConfigStore extends Context.Tag("toolkit/ConfigStore")<
  ConfigStore,
  {
    /** Every row of a topic; none when the table or the database does not exist. */
    readonly entries: (topic: string) => Effect.Effect<ReadonlyArray<ConfigEntry>, Broken | InvalidSpec>
    /**
     * Sets and unsets in one transaction. Returns, per unset key, whether a row was removed.
     */
    readonly apply: (
      topic: string,
      set: ReadonlyArray<ConfigEntry>,
      unset: ReadonlyArray<ConfigKey>
    ) => Effect.Effect<ReadonlyArray<boolean>, Broken | InvalidSpec>
  }
>() {}

interface Row {
  readonly action: string
  readonly option: string
  readonly value: string
}

const checkTopic = (topic: string): Either.Either<string, InvalidSpec> =>
  TOPIC_TABLE_PATTERN.test(topic)
    ? Either.right(topic)
    : Either.left(new InvalidSpec({ message: `invalid topic name '${topic}'`, subject: topic }))

const decodeTokens = (value: string): ReadonlyArray<string> | undefined => {
  try {
    const parsed: unknown = JSON.parse(value)
    return Array.isArray(parsed) && parsed.every((token) => typeof token === "string")
      ? (parsed as string[])
      : undefined
  } catch {
    return undefined
  }
}

export const ConfigStoreLive: Layer.Layer<ConfigStore, never, ConfigDb> = Layer.effect(
  ConfigStore,
  Effect.map(ConfigDb, (store) => ({
    entries: (topic) =>
      Effect.flatMap(checkTopic(topic), (table) =>
        store.read(
          (db) => {
            if (!hasTable(db, table)) return []
            const rows = db
              .prepare(`SELECT action, option, value FROM ${ident(table)} ORDER BY action, option`)
              .all() as Row[]
            // A value that is not a JSON token list keeps its raw text as one token, so that the
            // command using it reports it as an invalid default instead of it silently vanishing.
            return rows.map((row) => ({
              action: row.action,
              option: row.option,
              tokens: decodeTokens(row.value) ?? [row.value]
            }))
          },
          [] as ReadonlyArray<ConfigEntry>
        )
      ),
    apply: (topic, set, unset) =>
      Effect.flatMap(checkTopic(topic), (table) =>
        set.length === 0
          ? // Unsetting alone never creates the database or the table.
            store.read(
              (db) => {
                if (!hasTable(db, table)) return unset.map(() => false)
                return db
                  .transaction(() =>
                    unset.map(
                      (key) =>
                        db
                          .prepare(`DELETE FROM ${ident(table)} WHERE action = ? AND option = ?`)
                          .run(key.action, key.option).changes > 0
                    )
                  )
                  .immediate()
              },
              unset.map(() => false)
            )
          : store.write((db) => {
              db.exec(
                `CREATE TABLE IF NOT EXISTS ${ident(table)} (action TEXT NOT NULL, option TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (action, option))`
              )
              for (const entry of set)
                db.prepare(`INSERT OR REPLACE INTO ${ident(table)} (action, option, value) VALUES (?, ?, ?)`).run(
                  entry.action,
                  entry.option,
                  JSON.stringify(entry.tokens)
                )
              return Either.right(
                unset.map(
                  (key) =>
                    db
                      .prepare(`DELETE FROM ${ident(table)} WHERE action = ? AND option = ?`)
                      .run(key.action, key.option).changes > 0
                )
              )
            })
      )
  }))
)
