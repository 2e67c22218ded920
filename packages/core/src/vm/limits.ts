import { readFile } from "node:fs/promises"
import { Context, Effect, Schema } from "effect"
import { parse } from "smol-toml"
import { InvalidSpec } from "../errors.js"
import { isNotFound } from "../platform/files.js"

/** An integer in min..max; out of range it reads "must be min..max, got N". */
export const IntRange = (min: number, max: number) =>
  Schema.Int.pipe(
    Schema.between(min, max, { message: (issue) => `must be ${min}..${max}, got ${JSON.stringify(issue.actual)}` })
  )

/**
 * The VM sizes create and update take. QEMU's q35 machine runs at most 255 vCPUs without x2APIC
 * on a kernel irqchip (KVM only), so more is refused here rather than failing at start.
 */
const MAX_CPUS = 255
export const Cpus = IntRange(1, MAX_CPUS)
export const RamMb = IntRange(256, 1_048_576)

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
      return {
        ...(maxVms !== undefined ? { max_vms: maxVms } : {}),
        ...(maxRam !== undefined ? { max_ram_mb: maxRam } : {})
      }
    },
    catch: (error) =>
      error instanceof InvalidSpec
        ? error
        : new InvalidSpec({ message: `${configToml}: ${(error as Error).message.split("\n")[0]}`, subject: configToml })
  })

/**
 * A project's `[limits]`, in force while a project operation runs (the fan-out provides it).
 * They can only lower the account's limits: the lower of the two applies.
 */
export class ProjectLimits extends Context.Reference<ProjectLimits>()("stoat/ProjectLimits", {
  defaultValue: (): Limits => ({})
}) {}

const lower = (a: number | undefined, b: number | undefined) =>
  a === undefined ? b : b === undefined ? a : Math.min(a, b)

/** The account's limits, lowered by the project's while a project operation runs. */
export const effectiveLimits = (configToml: string): Effect.Effect<Limits, InvalidSpec> =>
  Effect.gen(function* () {
    const account = yield* readLimits(configToml)
    const project = yield* ProjectLimits
    const maxVms = lower(account.max_vms, project.max_vms)
    const maxRam = lower(account.max_ram_mb, project.max_ram_mb)
    return {
      ...(maxVms !== undefined ? { max_vms: maxVms } : {}),
      ...(maxRam !== undefined ? { max_ram_mb: maxRam } : {})
    }
  })
