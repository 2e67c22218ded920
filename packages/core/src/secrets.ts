import { readFile, stat } from "node:fs/promises"
import { join } from "node:path"
import { Effect } from "effect"
import { parse, stringify } from "smol-toml"
import { Internal, InvalidSpec } from "./errors.js"
import { isNotFound, writeFileAtomic } from "./files.js"

type SecretTable = Readonly<Record<string, Readonly<Record<string, string>>>>

/**
 * Merges recipe secrets into `<vm>/secrets.toml` (`[recipe] param = "value"`). The file must be
 * exactly 0600; a wider one is refused rather than trusted. Values never appear in errors.
 */
export const writeSecrets = (vmDir: string, secrets: SecretTable): Effect.Effect<void, InvalidSpec | Internal> =>
  Effect.tryPromise({
    try: async () => {
      const path = join(vmDir, "secrets.toml")
      let current: Record<string, Record<string, string>> = {}
      try {
        const info = await stat(path)
        if ((info.mode & 0o777) !== 0o600) throw new InvalidSpec({ message: `secrets.toml: mode ${(info.mode & 0o777).toString(8).padStart(4, "0")}, want 0600`, subject: path })
        current = parse(await readFile(path, "utf8")) as Record<string, Record<string, string>>
      } catch (error) {
        if (!isNotFound(error)) throw error
      }
      for (const [recipe, params] of Object.entries(secrets)) current[recipe] = { ...(current[recipe] ?? {}), ...params }
      await writeFileAtomic(path, `${stringify(current)}\n`, 0o600)
    },
    catch: (error) => (error instanceof InvalidSpec ? error : new Internal({ message: "cannot write secrets.toml" }))
  })
