import { readFile } from "node:fs/promises"
import { Effect } from "effect"
import { parse } from "smol-toml"
import { InvalidSpec } from "./errors.js"
import { isNotFound } from "./files.js"

export interface Limits {
  readonly max_vms?: number
  readonly max_ram_mb?: number
}

const positiveInt = (value: unknown, key: string, file: string): number | undefined => {
  if (value === undefined) return undefined
  if (typeof value === "number" && Number.isInteger(value) && value > 0) return value
  throw new InvalidSpec({ message: `${file}: limits.${key}: expected a positive integer`, subject: file })
}

/** `[limits]` of the account's config.toml; unset means unlimited. */
export const readLimits = (configToml: string): Effect.Effect<Limits, InvalidSpec> =>
  Effect.tryPromise({
    try: async () => {
      let text: string
      try {
        text = await readFile(configToml, "utf8")
      } catch (error) {
        if (isNotFound(error)) return {}
        throw error
      }
      const limits = ((parse(text) as Record<string, unknown>)["limits"] ?? {}) as Record<string, unknown>
      const maxVms = positiveInt(limits["max_vms"], "max_vms", configToml)
      const maxRam = positiveInt(limits["max_ram_mb"], "max_ram_mb", configToml)
      return { ...(maxVms !== undefined ? { max_vms: maxVms } : {}), ...(maxRam !== undefined ? { max_ram_mb: maxRam } : {}) }
    },
    catch: (error) =>
      error instanceof InvalidSpec ? error : new InvalidSpec({ message: `${configToml}: ${(error as Error).message.split("\n")[0]}`, subject: configToml })
  })
