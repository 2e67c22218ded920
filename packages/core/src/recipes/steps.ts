/**
 * The steps an apply would run on a VM, planned on the host (reference §7 steps 2–5), and the
 * guest script of each: shared by apply over ssh and by first-boot delivery through cloud-init.
 */
import { randomBytes } from "node:crypto"
import { Effect } from "effect"
import type { Guest } from "@stoat/wire"
import { InvalidSpec } from "../errors.js"
import { GuestDefinitions } from "../guest-definitions/definitions.js"
import { DataRoot } from "../platform/data-root.js"
import { readSecrets } from "../platform/secrets.js"
import { quoteWord } from "../ssh/quote.js"
import { loadVm, sshTarget, type OkRecord } from "../vm/records.js"
import {
  decideRun,
  orderByDepends,
  recipeHash,
  requireApplicable,
  resolveParams,
  scriptHash,
  type ResolvedParams,
  type RunDecision
} from "./plan.js"
import { renderPrelude } from "./prelude.js"
import { ensureProjectRecipes } from "./remote/service.js"
import { Recipes, type LoadedRecipe } from "./store.js"

export interface PlannedStep {
  readonly recipe: LoadedRecipe
  readonly body: string
  readonly params: ResolvedParams
  readonly hash: string
  readonly scriptHash: string
  readonly decision: RunDecision
}

export interface ApplyPlanned {
  readonly record: OkRecord
  readonly guest: Guest
  readonly steps: ReadonlyArray<PlannedStep>
}

/** Steps 2–5 on the host only: targets, order, params and the run-mode filter. Works on a stopped VM. */
export const planApply = (vm: string, only: ReadonlyArray<string> | undefined) =>
  Effect.gen(function* () {
    const record = yield* loadVm(vm)
    const guest = yield* (yield* GuestDefinitions).get(record.config.os)
    const recipes = yield* Recipes
    const configured = record.config.recipes
    const stray = (only ?? []).find((name) => !configured.includes(name))
    if (stray !== undefined) {
      return yield* new InvalidSpec({
        message: `--only: "${stray}" is not one of VM "${vm}"'s recipes (${configured.join(", ") || "none"})`,
        subject: stray
      })
    }
    const names = only !== undefined && only.length > 0 ? configured.filter((name) => only.includes(name)) : configured
    // Step 2, project scope: declaration, lock and checkouts agree before anything is loaded.
    yield* ensureProjectRecipes(names)
    const targets: LoadedRecipe[] = []
    for (const name of names) {
      const recipe = yield* recipes.get(name)
      yield* requireApplicable(recipe, guest)
      targets.push(recipe)
    }
    const ordered = yield* orderByDepends(targets, new Set(Object.keys(record.config.applied)))
    const secrets = yield* readSecrets(record.dir)
    const facts = { name: record.name, sshUser: sshTarget(yield* DataRoot, record).user }
    const steps: PlannedStep[] = []
    for (const recipe of ordered) {
      const { body } = yield* recipes.script(recipe, guest)
      const params = yield* resolveParams(recipe.manifest, record.config, secrets, facts)
      const hashes = { hash: recipeHash(body, params), scriptHash: scriptHash(body) }
      const named = only?.includes(recipe.manifest.name) ?? false
      steps.push({
        recipe,
        body,
        params,
        ...hashes,
        decision: decideRun(recipe.manifest, record.config.applied[recipe.manifest.name], hashes, named)
      })
    }
    return { record, guest, steps } satisfies ApplyPlanned
  })

export const planView = (planned: ApplyPlanned) =>
  planned.steps.map((step) => ({
    name: step.recipe.manifest.name,
    action: step.decision.action,
    reason: step.decision.reason,
    ...(step.recipe.manifest.version !== "" ? { version: step.recipe.manifest.version } : {})
  }))

const exportLines = (env: Readonly<Record<string, string>>) =>
  Object.entries(env)
    .map(([name, value]) => `export ${name}=${quoteWord(value)}`)
    .join("\n")

/**
 * The whole script as one `{ … }` group, so the shell has parsed all of it before the body runs
 * and a command in the body that reads stdin cannot swallow the rest (its stdin is /dev/null).
 */
export const recipeScript = (
  guest: Guest,
  step: Pick<PlannedStep, "recipe" | "body" | "params">,
  outputPath: string
): string => {
  const env = { STOAT_RECIPE: step.recipe.manifest.name, STOAT_OUTPUT: outputPath, ...step.params.env }
  const python = guest.pkg.runtime_packages["python3"] ?? "python3"
  const delimiter = `STOAT_PY_${randomBytes(8).toString("hex")}`
  const run =
    step.recipe.manifest.runtime === "python3"
      ? `command -v python3 >/dev/null 2>&1 || { stoat_pkg_setup && stoat_pkg_install ${quoteWord(python)}; } </dev/null\npython3 - <<'${delimiter}'\n${step.body}\n${delimiter}`
      : `(\n${step.body}\n) </dev/null`
  return `{\n${exportLines(env)}\n${renderPrelude(guest)}: > "$STOAT_OUTPUT"\n${run}\n}\n`
}

export const healthScript = (guest: Guest, check: string, params: ResolvedParams): string =>
  `{\n${exportLines(params.env)}\n${renderPrelude(guest)}(\n${check}\n) </dev/null\n}\n`
