import { Effect, Schema } from "effect"
import {
  ApplyDryRun,
  ApplyResult,
  CheckRecipesResult,
  RecipeCatalog,
  RecipeSummary,
  RecipeCreated,
  RecipeList,
  RecipePlan,
  RecipeRefreshList,
  RecipeSchema
} from "@stoat/wire"
import { GuestDefinitions } from "../guest-definitions/definitions.js"
import { planApply, planView } from "../recipes/steps.js"
import { RECIPE_NAME } from "../platform/names.js"
import { applicabilityProblem } from "../recipes/plan.js"
import { Recipes, type LoadedRecipe } from "../recipes/store.js"
import { NoInput, VmName } from "./inputs.js"
import { defineOperation, EXEC, MUTATE, READ } from "./operation.js"
import { Vms } from "../lifecycle/lifecycle.js"

export const RecipeName = Schema.String.pipe(
  Schema.pattern(RECIPE_NAME, { message: () => "recipe names use lower-case letters, digits and '-'" }),
  Schema.maxLength(64)
).annotations({
  description: "Recipe name"
})
const OsName = Schema.String.pipe(
  Schema.pattern(/^[a-z0-9][a-z0-9-]*$/, { message: () => "OS names use lower-case letters, digits and '-'" }),
  Schema.maxLength(64)
).annotations({
  description: "Guest OS name, e.g. debian"
})
const Backend = Schema.optional(Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9-]*$/))).annotations({
  description: "Accepted for compatibility; not a filter"
})
const Only = Schema.optional(Schema.Array(RecipeName).pipe(Schema.maxItems(256))).annotations({
  description: "Apply only these of the VM's recipes (and run manual ones)"
})

/** The full contract of one recipe (`recipe show`, `recipe_schema`): params and outputs sorted. */
export const recipeSchemaView = (recipe: LoadedRecipe): typeof RecipeSchema.Type => {
  const m = recipe.manifest
  return {
    name: m.name,
    description: m.description,
    schema: m.schema,
    runtime: m.runtime,
    reboot: m.reboot,
    depends: [...m.depends],
    params: m.params.map((p) => ({
      name: p.name,
      type: p.type,
      required: p.required,
      default: p.default,
      ...(p.default_from !== undefined ? { default_from: p.default_from } : {}),
      values: [...p.values],
      help: p.help
    })),
    outputs: m.outputs.map((o) => ({ ...o })),
    health: m.health ? { ...m.health } : null
  }
}

/** A recipe as agents' lists show it: has_health instead of the check script. */
export const recipeSummary = (recipe: LoadedRecipe): typeof RecipeSummary.Type => {
  const { health, ...rest } = recipeSchemaView(recipe)
  return { ...rest, has_health: health !== null }
}

export const listRecipes = defineOperation({
  key: "recipe.catalog",
  tool: "list_recipes",
  expose: { cli: "recipes", mcp: true },
  title: "List recipes",
  description:
    "Recipes every recipe root declares (bundled, local, remote); has_health tells whether one has a health check.",
  kind: "query",
  input: Schema.Struct({
    os: Schema.optional(OsName).annotations({ description: "Only recipes that run on this guest OS" }),
    backend: Backend
  }),
  output: RecipeCatalog,
  annotations: READ,
  access: null,
  run: (input) =>
    Effect.gen(function* () {
      const all = yield* (yield* Recipes).list
      const guest = input.os === undefined ? undefined : yield* (yield* GuestDefinitions).get(input.os)
      const shown =
        guest === undefined ? all : all.filter((recipe) => applicabilityProblem(recipe.manifest, guest) === undefined)
      return { recipes: shown.map(recipeSummary) }
    })
})

export const listRecipeEntries = defineOperation({
  key: "recipe.list",
  tool: "recipe_list",
  // list_recipes is the agents' view; this one shows host folders.
  expose: { cli: "recipe list", mcp: false },
  title: "List recipes with their scope",
  description: "Every recipe with its scope (bundled, local, global, project) and the recipe roots in shadow order.",
  kind: "query",
  input: NoInput,
  output: RecipeList,
  annotations: READ,
  access: null,
  run: () =>
    Effect.gen(function* () {
      const recipes = yield* Recipes
      const all = yield* recipes.list
      return {
        roots: [...(yield* recipes.roots)],
        recipes: all.map((recipe) => ({
          name: recipe.manifest.name,
          description: recipe.manifest.description,
          scope: recipe.scope,
          source: recipe.source,
          ref: recipe.ref,
          commit: recipe.commit.slice(0, 7)
        }))
      }
    })
})

export const recipeSchema = defineOperation({
  key: "recipe.show",
  tool: "recipe_schema",
  expose: { cli: "recipe show", mcp: true },
  title: "Show a recipe's contract",
  description:
    "One recipe's contract: runtime, depends, params (type, default, required, values), outputs and health check.",
  kind: "query",
  input: Schema.Struct({ name: RecipeName }),
  output: RecipeSchema,
  cliView: (recipe) => ({ recipe }),
  annotations: READ,
  access: null,
  run: (input) =>
    Effect.map(
      Effect.flatMap(Recipes, (recipes) => recipes.get(input.name)),
      recipeSchemaView
    )
})

export const checkRecipes = defineOperation({
  key: "recipe.check",
  tool: "check_recipes",
  expose: { cli: "check-recipes", mcp: true },
  title: "Check recipes against a guest OS",
  description:
    "Whether recipes can run on a guest OS; each one that cannot is listed with the reason (a result, not a failure).",
  kind: "query",
  input: Schema.Struct({
    recipes: Schema.NonEmptyArray(RecipeName)
      .pipe(Schema.maxItems(256))
      .annotations({ description: "Recipe names to check (1..256)" }),
    os: OsName,
    backend: Backend
  }),
  output: CheckRecipesResult,
  annotations: READ,
  access: null,
  run: (input) =>
    Effect.gen(function* () {
      const guest = yield* (yield* GuestDefinitions).get(input.os)
      const recipes = yield* Recipes
      const issues: Array<{ name: string; reason: string }> = []
      for (const name of input.recipes) {
        const found = yield* Effect.either(recipes.get(name))
        if (found._tag === "Left") {
          if (found.left._tag !== "NotFound") return yield* found.left
          issues.push({ name, reason: "no recipe root declares it" })
          continue
        }
        const problem = applicabilityProblem(found.right.manifest, guest)
        if (problem !== undefined) issues.push({ name, reason: problem })
      }
      return { applicable: issues.length === 0, issues }
    })
})

export const planRecipes = defineOperation({
  key: "recipe.plan",
  tool: "plan_recipes",
  expose: { cli: "plan", mcp: true },
  title: "Plan a recipe apply",
  description:
    "What apply_recipes would run or skip on a VM and why; computed on the host, runs nothing, works on a stopped VM.",
  kind: "query",
  input: Schema.Struct({ vm: VmName, only: Only }),
  output: RecipePlan,
  annotations: READ,
  access: null,
  run: (input) => Effect.map(planApply(input.vm, input.only), (planned) => ({ vm: input.vm, plan: planView(planned) }))
})

/**
 * `stoat apply VM --dry-run`: a second CLI view of plan_recipes (whose own command, `plan`,
 * shows the result as it is), marked so a script can tell it from an apply's result.
 */
export const applyDryRunView = (planned: typeof RecipePlan.Type): typeof ApplyDryRun.Type => ({
  vm: planned.vm,
  dry_run: true,
  plan: planned.plan
})

export const applyRecipes = defineOperation({
  key: "recipe.apply",
  tool: "apply_recipes",
  longRunning: true,
  expose: { cli: "apply", mcp: true },
  title: "Apply a VM's recipes",
  description:
    "Run a running VM's recipes in dependency order (only: a subset, manual ones included); unchanged once-recipes are skipped. Records outputs and runs health checks; the log is logs which=apply.",
  kind: "command",
  input: Schema.Struct({ vm: VmName, only: Only }),
  output: ApplyResult,
  annotations: EXEC,
  touches: ["guest"],
  access: "manage",
  run: (input) => Effect.flatMap(Vms, (vms) => vms.applyRecipes(input.vm, input.only))
})

export const newRecipe = defineOperation({
  key: "recipe.new",
  tool: "recipe_new",
  expose: { cli: "recipe new", mcp: false },
  title: "Scaffold a recipe",
  description: "Create $STOAT_HOME/recipes/<name>/ with a sample recipe.toml and install.sh.",
  kind: "command",
  input: Schema.Struct({ name: Schema.String, os: Schema.optional(Schema.Array(OsName)), backend: Backend }),
  output: RecipeCreated,
  annotations: MUTATE,
  access: null,
  run: (input) =>
    Effect.gen(function* () {
      for (const os of input.os ?? []) yield* (yield* GuestDefinitions).get(os)
      return { path: yield* (yield* Recipes).scaffold(input.name, input.os ?? []) }
    })
})

export const refreshRecipes = defineOperation({
  key: "recipe.refresh",
  tool: "refresh_recipes",
  expose: { cli: "recipe refresh", mcp: false },
  title: "Rewrite bundled recipes",
  description:
    "Rewrite bundled recipe files from this build's copies; a hand-edited file is kept beside it as .bak. Statuses: refreshed, backed_up, current, orphan.",
  kind: "command",
  input: Schema.Struct({ names: Schema.optional(Schema.Array(RecipeName)) }),
  output: RecipeRefreshList,
  annotations: MUTATE,
  access: null,
  run: (input) =>
    Effect.map(
      Effect.flatMap(Recipes, (recipes) => recipes.refresh(input.names ?? [])),
      (files) => ({ files: [...files] })
    )
})
