import { Schema } from "effect"
import { Int } from "./primitives.js"
import { RecipeDetail } from "./vm.js"

const StringList = Schema.Array(Schema.String)

export const RecipeParam = Schema.Struct({
  name: Schema.String,
  type: Schema.Literal("string", "int", "bool", "enum", "secret"),
  required: Schema.Boolean,
  default: Schema.String,
  default_from: Schema.optional(Schema.String),
  values: StringList,
  help: Schema.String
})
export const RecipeOutput = Schema.Struct({ name: Schema.String, help: Schema.String })
export const RecipeHealth = Schema.Struct({ check: Schema.String, timeout: Schema.String })

/** Full recipe contract (`recipe show`, MCP `recipe_schema`): params and outputs sorted by name. */
export const RecipeSchema = Schema.Struct({
  name: Schema.String,
  description: Schema.String,
  schema: Int,
  runtime: Schema.String,
  reboot: Schema.Boolean,
  depends: StringList,
  params: Schema.Array(RecipeParam),
  outputs: Schema.Array(RecipeOutput),
  health: Schema.NullOr(RecipeHealth)
})
export type RecipeSchema = typeof RecipeSchema.Type
/** Recipe as MCP lists show it: `has_health` instead of the check script. */
export const RecipeSummary = Schema.Struct({
  name: Schema.String,
  description: Schema.String,
  schema: Int,
  runtime: Schema.String,
  reboot: Schema.Boolean,
  depends: StringList,
  params: Schema.Array(RecipeParam),
  outputs: Schema.Array(RecipeOutput),
  has_health: Schema.Boolean
})
export const RecipeCatalog = Schema.Struct({ recipes: Schema.Array(RecipeSummary) })

export const RecipeScope = Schema.Literal("bundled", "local", "global", "project")
export const RecipeEntry = Schema.Struct({
  name: Schema.String,
  description: Schema.String,
  scope: RecipeScope,
  source: Schema.String,
  ref: Schema.String,
  /** Short (7 hex) commit; empty for bundled and local recipes. */
  commit: Schema.String
})
export const RecipeRoot = Schema.Struct({ path: Schema.String, scope: RecipeScope })
export const RecipeList = Schema.Struct({ roots: Schema.Array(RecipeRoot), recipes: Schema.Array(RecipeEntry) })
export const RecipeAdded = Schema.Struct({
  name: Schema.String,
  source: Schema.String,
  ref: Schema.String,
  commit: Schema.String,
  scope: RecipeScope
})
export const RecipeRemoved = Schema.Struct({ name: Schema.String, scope: RecipeScope })
export const IndexEntry = Schema.Struct({
  name: Schema.String,
  source: Schema.String,
  description: Schema.String,
  os: StringList
})
export const RecipeIssue = Schema.Struct({ name: Schema.String, reason: Schema.String })
export const CheckRecipesResult = Schema.Struct({ applicable: Schema.Boolean, issues: Schema.Array(RecipeIssue) })
export const ApplyPlan = Schema.Struct({
  name: Schema.String,
  action: Schema.Literal("run", "skip"),
  reason: Schema.String,
  version: Schema.optional(Schema.String)
})
export const RecipeRefreshed = Schema.Struct({ path: Schema.String, status: Schema.String })
export const ApplyResult = Schema.Struct({
  vm: Schema.String,
  /** Recipes that ran this time, in the order they ran. */
  applied: StringList,
  /** Why nothing ran ("provision in progress", "no recipes configured"); empty otherwise. */
  skipped_reason: Schema.String,
  recipes_detail: Schema.Array(RecipeDetail)
})
/** `plan` / MCP `plan_recipes`: what apply would run or skip, computed on the host. */
export const RecipePlan = Schema.Struct({ vm: Schema.String, plan: Schema.Array(ApplyPlan) })
export const RecipeRefreshList = Schema.Struct({ files: Schema.Array(RecipeRefreshed) })
export const RecipeCreated = Schema.Struct({ path: Schema.String })
export const ApplyDryRun = Schema.Struct({
  vm: Schema.String,
  dry_run: Schema.Literal(true),
  plan: Schema.Array(ApplyPlan)
})

/** `recipe search` / search_recipes. */
export const RecipeSearchResult = Schema.Struct({ recipes: Schema.Array(IndexEntry) })
/** `recipe lock` / `recipe sync`: every pin of the scope. */
export const RecipePins = Schema.Struct({ recipes: Schema.Array(RecipeAdded) })
/** add_recipe: the pin added (the CLI's RecipeAdded) and the recipe catalog after it (the tool's RecipeCatalog). */
export const RecipeAddResult = Schema.Struct({ ...RecipeAdded.fields, recipes: Schema.Array(RecipeSummary) })
/** update_recipe: the pins re-resolved and the recipe catalog after them. */
export const RecipeUpdateResult = Schema.Struct({
  updated: Schema.Array(RecipeAdded),
  recipes: Schema.Array(RecipeSummary)
})
/** remove_recipe: what was removed (the CLI's RecipeRemoved) and the recipe catalog after it. */
export const RecipeRemoveResult = Schema.Struct({ ...RecipeRemoved.fields, recipes: Schema.Array(RecipeSummary) })
