import { Context, Effect, Either, Layer, Option } from "effect"
import { Broken, InvalidSpec, NameTaken, NotFound } from "@stoat/core/errors"
import { ConfigDb, hasTable } from "./db.js"

/** What may be shown about an OAuth client profile: everything except the secret. */
export interface OAuthProfileInfo {
  readonly name: string
  readonly tokenUrl: string
  readonly clientId: string
  readonly scope?: string
  readonly hasSecret: boolean
}

export interface OAuthProfile extends OAuthProfileInfo {
  readonly clientSecret: string
}

export interface OAuthProfileInput {
  readonly name: string
  readonly tokenUrl: string
  readonly clientId: string
  readonly clientSecret: string
  readonly scope?: string
}

export interface OAuthProfilePatch {
  readonly tokenUrl?: string
  readonly clientId?: string
  readonly clientSecret?: string
  readonly scope?: string
}

export const OAUTH_PROFILE_TABLE = "oauth_profiles"
const OAUTH_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]*$/

/**
 * OAuth2 client profiles, in the `oauth_profiles` table of config.db (a 0600 file). Names are
 * matched without regard to case. Only `secret` ever returns the client secret.
 */
export class OAuthProfiles extends Context.Tag("toolkit/OAuthProfiles")<
  OAuthProfiles,
  {
    readonly list: Effect.Effect<ReadonlyArray<OAuthProfileInfo>, Broken>
    readonly add: (input: OAuthProfileInput) => Effect.Effect<void, Broken | InvalidSpec | NameTaken>
    readonly update: (name: string, patch: OAuthProfilePatch) => Effect.Effect<void, Broken | InvalidSpec | NotFound>
    readonly remove: (name: string) => Effect.Effect<void, Broken | NotFound>
    /** The profile with its secret, for a token request. */
    readonly secret: (name: string) => Effect.Effect<OAuthProfile, Broken | NotFound>
  }
>() {}

interface Row {
  readonly name: string
  readonly token_url: string
  readonly client_id: string
  readonly client_secret: string | null
  readonly scope: string | null
}

const info = (row: Row): OAuthProfileInfo => ({
  name: row.name,
  tokenUrl: row.token_url,
  clientId: row.client_id,
  ...(row.scope !== null ? { scope: row.scope } : {}),
  hasSecret: row.client_secret !== null && row.client_secret !== ""
})

const CREATE = `CREATE TABLE IF NOT EXISTS ${OAUTH_PROFILE_TABLE} (
  name TEXT PRIMARY KEY NOT NULL COLLATE NOCASE,
  token_url TEXT NOT NULL,
  client_id TEXT NOT NULL,
  client_secret TEXT,
  scope TEXT
)`

const notFound = (name: string) => new NotFound({ message: `OAuth profile '${name}' does not exist`, subject: name })

const checkUrl = (url: string): Either.Either<string, InvalidSpec> => {
  try {
    const parsed = new URL(url)
    if (parsed.protocol === "http:" || parsed.protocol === "https:") return Either.right(url)
  } catch {
    // falls through to the error below
  }
  return Either.left(
    new InvalidSpec({ message: `invalid token URL '${url}': it must be an http or https URL`, subject: url })
  )
}

export const OAuthProfilesLive: Layer.Layer<OAuthProfiles, never, ConfigDb> = Layer.effect(
  OAuthProfiles,
  Effect.map(ConfigDb, (store) => {
    const row = (name: string) =>
      store.read(
        (db) =>
          hasTable(db, OAUTH_PROFILE_TABLE)
            ? (db.prepare(`SELECT * FROM ${OAUTH_PROFILE_TABLE} WHERE name = ?`).get(name) as Row | undefined)
            : undefined,
        undefined
      )
    return {
      list: store.read(
        (db) =>
          hasTable(db, OAUTH_PROFILE_TABLE)
            ? (db.prepare(`SELECT * FROM ${OAUTH_PROFILE_TABLE} ORDER BY name COLLATE NOCASE`).all() as Row[]).map(info)
            : [],
        [] as ReadonlyArray<OAuthProfileInfo>
      ),
      add: (input) => {
        if (!OAUTH_NAME_PATTERN.test(input.name))
          return Effect.fail(
            new InvalidSpec({ message: `invalid OAuth profile name '${input.name}'`, subject: input.name })
          )
        if (input.clientSecret === "")
          return Effect.fail(new InvalidSpec({ message: "the client secret must not be empty", subject: input.name }))
        return Effect.flatMap(checkUrl(input.tokenUrl), () =>
          store.write((db) => {
            db.exec(CREATE)
            if (db.prepare(`SELECT 1 FROM ${OAUTH_PROFILE_TABLE} WHERE name = ?`).get(input.name) !== undefined)
              return Either.left(
                new NameTaken({ message: `OAuth profile '${input.name}' already exists`, subject: input.name })
              )
            db.prepare(
              `INSERT INTO ${OAUTH_PROFILE_TABLE} (name, token_url, client_id, client_secret, scope) VALUES (?, ?, ?, ?, ?)`
            ).run(input.name, input.tokenUrl, input.clientId, input.clientSecret, input.scope ?? null)
            return Either.right(undefined)
          })
        )
      },
      update: (name, patch) =>
        Effect.gen(function* () {
          if (patch.tokenUrl !== undefined) yield* checkUrl(patch.tokenUrl)
          if (patch.clientSecret === "")
            return yield* new InvalidSpec({ message: "the client secret must not be empty", subject: name })
          const current = yield* row(name)
          if (current === undefined) return yield* notFound(name)
          yield* store.write((db) => {
            db.prepare(
              `UPDATE ${OAUTH_PROFILE_TABLE} SET token_url = ?, client_id = ?, client_secret = ?, scope = ? WHERE name = ?`
            ).run(
              patch.tokenUrl ?? current.token_url,
              patch.clientId ?? current.client_id,
              patch.clientSecret ?? current.client_secret,
              patch.scope ?? current.scope,
              name
            )
            return Either.right(undefined)
          })
        }),
      remove: (name) =>
        Effect.gen(function* () {
          if ((yield* row(name)) === undefined) return yield* notFound(name)
          yield* store.write((db) =>
            Either.right(db.prepare(`DELETE FROM ${OAUTH_PROFILE_TABLE} WHERE name = ?`).run(name).changes)
          )
        }),
      secret: (name) =>
        Effect.flatMap(row(name), (current) =>
          current === undefined || current.client_secret === null
            ? Effect.fail(notFound(name))
            : Effect.succeed({ ...info(current), clientSecret: current.client_secret })
        )
    }
  })
)

export const findOAuthProfile = (
  profiles: ReadonlyArray<OAuthProfileInfo>,
  name: string
): Option.Option<OAuthProfileInfo> =>
  Option.fromNullable(profiles.find((profile) => profile.name.toLowerCase() === name.toLowerCase()))
