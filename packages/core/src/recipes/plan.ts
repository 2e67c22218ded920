/**
 * The host-side half of apply (reference §7 steps 2–5): which recipes, in what order, and which
 * of them run. Pure functions over loaded recipes and vm.toml, so plan and dry-run never touch
 * the guest, and every refusal happens before anything runs.
 */
import { createHash } from "node:crypto"
import { Effect } from "effect"
import type { Guest } from "@stoat/wire"
import { InvalidSpec, RecipeNotApplicable } from "../errors.js"
import type { SecretTable } from "../platform/secrets.js"
import type { VmConfig } from "../vm/config.js"
import type { RecipeManifest } from "./manifest.js"
import type { LoadedRecipe } from "./store.js"

/** Why this recipe cannot run on this guest, or undefined when it can. `--backend` is never a filter. */
export const applicabilityProblem = (
  manifest: RecipeManifest,
  guest: Pick<Guest, "name" | "aliases" | "capabilities" | "init" | "pkg">
): string | undefined => {
  if (manifest.stage === "install") return "stage install is not supported"
  if (manifest.os.length > 0 && ![guest.name, ...guest.aliases].some((os) => manifest.os.includes(os)))
    return `not for ${guest.name} (runs on ${manifest.os.join(", ")})`
  const capabilities = new Set([...guest.capabilities, guest.init])
  const missing = manifest.requires.find((capability) => !capabilities.has(capability))
  if (missing !== undefined) return `needs capability ${missing}, which ${guest.name} lacks`
  if (manifest.runtime === "python3" && guest.pkg.runtime_packages["python3"] === undefined)
    return `runtime python3 is not available on ${guest.name}`
  return undefined
}

export const requireApplicable = (recipe: LoadedRecipe, guest: Guest) => {
  const problem = applicabilityProblem(recipe.manifest, guest)
  return problem === undefined
    ? Effect.void
    : Effect.fail(
        new RecipeNotApplicable({
          message: `recipe "${recipe.manifest.name}" cannot run on ${guest.name}: ${problem}`,
          subject: recipe.manifest.name
        })
      )
}

export interface ResolvedParams {
  /** `STOAT_PARAM_<NAME>` → value, secrets included: only ever sent in the script's stdin. */
  readonly env: Readonly<Record<string, string>>
  /** Non-secret params, name → value (part of the hash). */
  readonly plain: Readonly<Record<string, string>>
  /** Names of secrets that are set (their names, never values, are part of the hash). */
  readonly secretNames: ReadonlyArray<string>
  /** Values to mask wherever guest output is shown. */
  readonly secretValues: ReadonlyArray<string>
}

export interface VmFacts {
  readonly name: string
  readonly sshUser: string
}

const paramError = (recipe: string, param: string, why: string) =>
  new InvalidSpec({ message: `params.${recipe}.${param}: ${why}`, subject: `params.${recipe}.${param}` })

/** Normalises a value to what the script sees (int decimal, bool true/false), or says why it is not one. */
const typedValue = (
  type: string,
  values: ReadonlyArray<string>,
  value: string
): string | { readonly problem: string } => {
  // No shell string can carry NUL.
  if (value.includes("\0")) return { problem: "must not contain NUL" }
  if (type === "int")
    return /^-?\d+$/.test(value.trim())
      ? String(Number(value.trim()))
      : { problem: `expected an integer, got ${JSON.stringify(value)}` }
  if (type === "bool") {
    const lower = value.trim().toLowerCase()
    return lower === "true" || lower === "false"
      ? lower
      : { problem: `expected true or false, got ${JSON.stringify(value)}` }
  }
  if (type === "enum")
    return values.includes(value) ? value : { problem: `${JSON.stringify(value)} is not one of ${values.join(", ")}` }
  return value
}

/**
 * Params for one recipe: vm.toml `[params.<recipe>]` overrides, else the default, else
 * `default_from`; secrets from secrets.toml. A required param or secret left unset is
 * `invalid_spec` (naming the param, never a value).
 */
export const resolveParams = (
  manifest: RecipeManifest,
  config: VmConfig,
  secrets: SecretTable,
  vm: VmFacts
): Effect.Effect<ResolvedParams, InvalidSpec> =>
  Effect.gen(function* () {
    const overrides = config.params[manifest.name] ?? {}
    const stored = secrets[manifest.name] ?? {}
    for (const name of Object.keys(overrides)) {
      const param = manifest.params.find((p) => p.name === name)
      if (param === undefined)
        return yield* paramError(manifest.name, name, `recipe ${manifest.name} has no param ${name}`)
      if (param.type === "secret")
        return yield* paramError(manifest.name, name, "is a secret; set it with --secret, not --set")
    }
    const env: Record<string, string> = {}
    const plain: Record<string, string> = {}
    const secretNames: string[] = []
    const secretValues: string[] = []
    for (const param of manifest.params) {
      const key = `STOAT_PARAM_${param.name.toUpperCase()}`
      if (param.type === "secret") {
        const value = stored[param.name]
        if (value === undefined || value === "") {
          if (param.required)
            return yield* paramError(
              manifest.name,
              param.name,
              `secret is required and not set; stoat update ${vm.name} --secret ${manifest.name}.${param.name}`
            )
          continue
        }
        env[key] = value
        secretNames.push(param.name)
        secretValues.push(value)
        continue
      }
      const given = overrides[param.name]
      const raw =
        given !== undefined
          ? given
          : param.hasDefault
            ? param.default
            : param.default_from === "ssh_user"
              ? vm.sshUser
              : param.default_from === "vm_name"
                ? vm.name
                : undefined
      if (raw === undefined)
        return yield* paramError(
          manifest.name,
          param.name,
          `is required; stoat update ${vm.name} --set ${manifest.name}.${param.name}=VALUE`
        )
      const value = typedValue(param.type, param.values, raw)
      if (typeof value !== "string") return yield* paramError(manifest.name, param.name, value.problem)
      env[key] = value
      plain[param.name] = value
    }
    return { env, plain, secretNames: secretNames.sort(), secretValues }
  })

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex")

export const scriptHash = (body: string): string => sha256(body)

/** The run-once hash: the script body, the resolved non-secret params (sorted) and the names of set secrets. */
export const recipeHash = (body: string, params: ResolvedParams): string =>
  sha256(
    JSON.stringify({
      script: body,
      params: Object.entries(params.plain).sort(([a], [b]) => a.localeCompare(b)),
      secrets: params.secretNames
    })
  )

/**
 * Dependency order, listed order kept where dependencies allow. A dependency must be among the
 * targets or already applied; a cycle or an unmet dependency is `invalid_spec` before anything runs.
 */
export const orderByDepends = (
  targets: ReadonlyArray<LoadedRecipe>,
  applied: ReadonlySet<string>
): Effect.Effect<ReadonlyArray<LoadedRecipe>, InvalidSpec> =>
  Effect.gen(function* () {
    const byName = new Map(targets.map((recipe) => [recipe.manifest.name, recipe]))
    for (const recipe of targets) {
      for (const dependency of recipe.manifest.depends) {
        if (!byName.has(dependency) && !applied.has(dependency)) {
          return yield* new InvalidSpec({
            message: `recipe "${recipe.manifest.name}" depends on "${dependency}", which is neither selected nor applied; add it to the VM's recipes (or --only)`,
            subject: recipe.manifest.name
          })
        }
      }
    }
    const ordered: LoadedRecipe[] = []
    const state = new Map<string, "visiting" | "done">()
    const visit = (recipe: LoadedRecipe, path: ReadonlyArray<string>): string | undefined => {
      const name = recipe.manifest.name
      if (state.get(name) === "done") return undefined
      if (state.get(name) === "visiting") return [...path.slice(path.indexOf(name)), name].join(" → ")
      state.set(name, "visiting")
      for (const dependency of recipe.manifest.depends) {
        const next = byName.get(dependency)
        if (next === undefined) continue
        const cycle = visit(next, [...path, name])
        if (cycle !== undefined) return cycle
      }
      state.set(name, "done")
      ordered.push(recipe)
      return undefined
    }
    for (const recipe of targets) {
      const cycle = visit(recipe, [])
      if (cycle !== undefined)
        return yield* new InvalidSpec({ message: `recipe dependency cycle: ${cycle}`, subject: recipe.manifest.name })
    }
    return ordered
  })

export interface RunDecision {
  readonly action: "run" | "skip"
  readonly reason: string
}

type AppliedEntry = VmConfig["applied"][string]

/** The run-mode filter: manual only when named, always always, once when never applied or its hash changed. */
export const decideRun = (
  manifest: RecipeManifest,
  applied: AppliedEntry | undefined,
  hashes: { readonly hash: string; readonly scriptHash: string },
  named: boolean
): RunDecision => {
  if (manifest.run === "manual" && !named) return { action: "skip", reason: "run = manual; name it with --only" }
  if (manifest.run === "always") return { action: "run", reason: "run = always" }
  if (manifest.run === "manual") return { action: "run", reason: "named with --only" }
  if (applied === undefined || applied.hash === "") return { action: "run", reason: "never applied" }
  if (applied.script_hash !== hashes.scriptHash) return { action: "run", reason: "script changed" }
  if (applied.hash !== hashes.hash) return { action: "run", reason: "params changed" }
  return { action: "skip", reason: "already applied" }
}

/** Masks every secret value in text shown to anyone (logs, results, errors). */
export const redact = (text: string, secrets: ReadonlyArray<string>): string =>
  secrets.reduce((masked, secret) => (secret === "" ? masked : masked.split(secret).join("<secret>")), text)
