import { join } from "node:path"
import { Effect, Option } from "effect"
import { parse, stringify } from "smol-toml"
import { InvalidSpec } from "./errors.js"
import * as fs from "./platform/fs.js"

type SecretTable = Readonly<Record<string, Readonly<Record<string, string>>>>

/**
 * Merges recipe secrets into `<vm>/secrets.toml` (`[recipe] param = "value"`). The file must be
 * exactly 0600; a wider one is refused rather than trusted. Values never appear in errors.
 */
export const writeSecrets = (vmDir: string, secrets: SecretTable): Effect.Effect<void, InvalidSpec | fs.FsError> =>
  Effect.gen(function* () {
    const path = join(vmDir, "secrets.toml")
    let current: Record<string, Record<string, string>> = {}
    const info = yield* fs.statIfExists(path)
    if (Option.isSome(info)) {
      const mode = info.value.mode & 0o777
      if (mode !== 0o600) return yield* new InvalidSpec({ message: `secrets.toml: mode ${mode.toString(8).padStart(4, "0")}, want 0600`, subject: path })
      const text = yield* fs.readFileString(path)
      // The parser's message may quote a value: say only that the file does not parse.
      current = yield* Effect.try({
        try: () => parse(text) as Record<string, Record<string, string>>,
        catch: () => new InvalidSpec({ message: "secrets.toml does not parse as TOML; fix or remove it", subject: path })
      })
    }
    for (const [recipe, params] of Object.entries(secrets)) current[recipe] = { ...(current[recipe] ?? {}), ...params }
    yield* fs.writeFileAtomic(path, `${stringify(current)}\n`, 0o600)
  })
