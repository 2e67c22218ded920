import { join } from "node:path"
import { Effect, Option } from "effect"
import { parse, stringify } from "smol-toml"
import { InvalidSpec } from "../errors.js"
import * as fs from "./fs.js"

export type SecretTable = Readonly<Record<string, Readonly<Record<string, string>>>>

/**
 * `<vm>/secrets.toml` parsed, or none when absent. The file must be exactly 0600; a wider one is
 * refused rather than trusted. Errors never quote a value.
 */
const readSecretFile = (
  path: string,
  label = "secrets.toml"
): Effect.Effect<Option.Option<Record<string, unknown>>, InvalidSpec | fs.FsError> =>
  Effect.gen(function* () {
    const info = yield* fs.statIfExists(path)
    if (Option.isNone(info)) return Option.none()
    // Only a regular file is read: a FIFO would block, a folder is a mistake.
    if (!info.value.isFile()) return yield* new InvalidSpec({ message: `${label}: not a regular file`, subject: path })
    const mode = info.value.mode & 0o777
    if (mode !== 0o600)
      return yield* new InvalidSpec({
        message: `${label}: mode ${mode.toString(8).padStart(4, "0")}, want 0600`,
        subject: path
      })
    const text = yield* fs.readFileString(path)
    // The parser's message may quote a value: say only that the file does not parse.
    return Option.some(
      yield* Effect.try({
        try: () => parse(text) as Record<string, unknown>,
        catch: () => new InvalidSpec({ message: `${label} does not parse as TOML; fix or remove it`, subject: path })
      })
    )
  })

/** The `[recipe] param = "value"` tables of a parsed file; anything else is ignored. */
const tablesOf = (raw: Record<string, unknown>): Record<string, Record<string, string>> => {
  const secrets: Record<string, Record<string, string>> = {}
  for (const [recipe, params] of Object.entries(raw)) {
    if (typeof params !== "object" || params === null) continue
    secrets[recipe] = Object.fromEntries(
      Object.entries(params).filter((entry): entry is [string, string] => typeof entry[1] === "string")
    )
  }
  return secrets
}

/** Merges recipe secrets into `<vm>/secrets.toml` (`[recipe] param = "value"`), written 0600. */
export const writeSecrets = (vmDir: string, secrets: SecretTable): Effect.Effect<void, InvalidSpec | fs.FsError> =>
  Effect.gen(function* () {
    const path = join(vmDir, "secrets.toml")
    const current = tablesOf(Option.getOrElse(yield* readSecretFile(path), () => ({})))
    for (const [recipe, params] of Object.entries(secrets)) current[recipe] = { ...(current[recipe] ?? {}), ...params }
    yield* fs.writeFileAtomic(path, `${stringify(current)}\n`, 0o600)
  })

/** The secrets stored for a VM (none: empty). */
export const readSecrets = (vmDir: string): Effect.Effect<SecretTable, InvalidSpec | fs.FsError> =>
  Effect.map(readSecretFile(join(vmDir, "secrets.toml")), (raw) => tablesOf(Option.getOrElse(raw, () => ({}))))

/**
 * A project's `.stoat/secrets.toml`: `[<key>.<recipe>] <param> = "value"`, per declaration key,
 * under the same 0600 rule as a VM's own file.
 */
export const readProjectSecrets = (
  projectDir: string
): Effect.Effect<Readonly<Record<string, SecretTable>>, InvalidSpec | fs.FsError> =>
  Effect.map(readSecretFile(join(projectDir, ".stoat", "secrets.toml"), ".stoat/secrets.toml"), (raw) => {
    const byKey: Record<string, SecretTable> = {}
    for (const [key, recipes] of Object.entries(Option.getOrElse(raw, () => ({})))) {
      if (typeof recipes === "object" && recipes !== null && !Array.isArray(recipes))
        byKey[key] = tablesOf(recipes as Record<string, unknown>)
    }
    return byKey
  })

/** Which secrets are set, per recipe: names only, for views that show `<set>`. */
export const setSecretNames = (secrets: SecretTable): Record<string, ReadonlyArray<string>> =>
  Object.fromEntries(Object.entries(secrets).map(([recipe, table]) => [recipe, Object.keys(table)]))
