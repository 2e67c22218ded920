import { Context, Effect, Either, Layer, Option } from "effect"
import { Broken, InvalidSpec } from "@stoat/core/errors"
import { ConfigDb, hasTable } from "./db.js"

/** A saved MCP profile: which command-tree entries to serve, and where. */
export interface McpProfile {
  readonly name: string
  /** Entries as typed: `topic` or `topic/action[/sub]`, in the order given. */
  readonly include: ReadonlyArray<string>
  readonly host?: string
  readonly port?: number
}

export const MCP_PROFILE_TABLE = "mcp_profiles"
export const PROFILE_NAME_PATTERN = /^[a-z0-9-]+$/

/**
 * Saved MCP profiles (table `mcp_profiles` of the tool's config.db). Storage only: what an
 * entry resolves to is the frontend's business, since it depends on its command tree.
 */
export class Profiles extends Context.Tag("toolkit/Profiles")<
  Profiles,
  {
    /** Every saved profile, in name order. */
    readonly list: Effect.Effect<ReadonlyArray<McpProfile>, Broken>
    readonly get: (name: string) => Effect.Effect<Option.Option<McpProfile>, Broken>
    /** Saves or replaces (nothing is merged); true when a profile of that name existed. */
    readonly save: (profile: McpProfile) => Effect.Effect<boolean, Broken | InvalidSpec>
    /** Removes a profile; false when there was none. */
    readonly remove: (name: string) => Effect.Effect<boolean, Broken>
  }
>() {}

interface Row {
  readonly name: string
  readonly include: string
  readonly host: string | null
  readonly port: number | null
}

const decode = (row: Row): McpProfile => {
  let include: ReadonlyArray<string> = []
  try {
    const parsed: unknown = JSON.parse(row.include)
    if (Array.isArray(parsed)) include = parsed.filter((entry): entry is string => typeof entry === "string")
  } catch {
    // A hand-edited row with a broken list reads as no entries; serve then reports nothing resolves.
  }
  return {
    name: row.name,
    include,
    ...(row.host !== null ? { host: row.host } : {}),
    ...(row.port !== null ? { port: row.port } : {})
  }
}

const CREATE = `CREATE TABLE IF NOT EXISTS ${MCP_PROFILE_TABLE} (
  name TEXT PRIMARY KEY NOT NULL,
  include TEXT NOT NULL,
  host TEXT,
  port INTEGER,
  updated_at TEXT NOT NULL
)`

export const validateProfile = (profile: McpProfile): Either.Either<McpProfile, InvalidSpec> => {
  if (!PROFILE_NAME_PATTERN.test(profile.name))
    return Either.left(
      new InvalidSpec({
        message: `invalid MCP profile name '${profile.name}': it must match ^[a-z0-9-]+$`,
        subject: profile.name
      })
    )
  if (profile.include.length === 0)
    return Either.left(
      new InvalidSpec({ message: `MCP profile '${profile.name}' needs at least one entry`, subject: profile.name })
    )
  if (profile.port !== undefined && (!Number.isInteger(profile.port) || profile.port < 1 || profile.port > 65_535))
    return Either.left(
      new InvalidSpec({
        message: `invalid port ${profile.port}: it must be between 1 and 65535`,
        subject: profile.name
      })
    )
  if (profile.host !== undefined && profile.host.trim() === "")
    return Either.left(new InvalidSpec({ message: "the host must not be empty", subject: profile.name }))
  return Either.right(profile)
}

export const ProfilesLive: Layer.Layer<Profiles, never, ConfigDb> = Layer.effect(
  Profiles,
  Effect.map(ConfigDb, (store) => ({
    list: store.read(
      (db) =>
        hasTable(db, MCP_PROFILE_TABLE)
          ? (db.prepare(`SELECT name, include, host, port FROM ${MCP_PROFILE_TABLE} ORDER BY name`).all() as Row[]).map(
              decode
            )
          : [],
      [] as ReadonlyArray<McpProfile>
    ),
    get: (name) =>
      store.read((db) => {
        if (!hasTable(db, MCP_PROFILE_TABLE)) return Option.none()
        const row = db.prepare(`SELECT name, include, host, port FROM ${MCP_PROFILE_TABLE} WHERE name = ?`).get(name) as
          | Row
          | undefined
        return row ? Option.some(decode(row)) : Option.none()
      }, Option.none<McpProfile>()),
    save: (profile) =>
      Effect.flatMap(validateProfile(profile), (valid) =>
        store.write((db) => {
          db.exec(CREATE)
          const existed = db.prepare(`SELECT 1 FROM ${MCP_PROFILE_TABLE} WHERE name = ?`).get(valid.name) !== undefined
          db.prepare(
            `INSERT OR REPLACE INTO ${MCP_PROFILE_TABLE} (name, include, host, port, updated_at) VALUES (?, ?, ?, ?, ?)`
          ).run(
            valid.name,
            JSON.stringify(valid.include),
            valid.host ?? null,
            valid.port ?? null,
            new Date().toISOString()
          )
          return Either.right(existed)
        })
      ),
    remove: (name) =>
      Effect.flatMap(
        store.read((db) => hasTable(db, MCP_PROFILE_TABLE), false),
        (exists) =>
          exists
            ? store.write((db) =>
                Either.right(db.prepare(`DELETE FROM ${MCP_PROFILE_TABLE} WHERE name = ?`).run(name).changes > 0)
              )
            : Effect.succeed(false)
      )
  }))
)
