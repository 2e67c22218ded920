/** Remote recipes (reference §7): the curated index and recipes pinned from Git sources, global or project scope. */
import { Effect, Schema } from "effect"
import { RecipeAddResult, RecipePins, RecipeRemoveResult, RecipeSearchResult, RecipeUpdateResult } from "@stoat/wire"
import { RemoteRecipes, type PinnedRecipe } from "../recipes/remote/service.js"
import { Recipes } from "../recipes/store.js"
import { Usage } from "../errors.js"
import { defineOperation, hostOnly, MUTATE, MUTATE_NETWORK, READ_NETWORK } from "./operation.js"
import { RecipeName, recipeSummary } from "./recipe.js"

const INDEX_REF = /^[a-z0-9][a-z0-9-]*(@[A-Za-z0-9][A-Za-z0-9._/-]*)?$/
const IndexRef = Schema.String.pipe(
  Schema.maxLength(264),
  Schema.pattern(INDEX_REF, {
    message: () =>
      "a curated index name: name or name@ref (a ref uses letters, digits, ., _, / and -); Git URLs are refused here"
  })
).annotations({ description: "A curated index name, optionally name@ref (see search_recipes). Git URLs are refused." })
const Ref = Schema.String.pipe(
  Schema.maxLength(200),
  Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9._/-]*$/, { message: () => "a tag, branch or commit" })
).annotations({
  description: "A tag, branch or commit (no ranges); default the source's default branch"
})
const Global = Schema.optional(Schema.Boolean).annotations({ description: "Global scope even inside a project" })

const noVms = (): ReadonlyArray<string> => []
const catalogNow = Effect.flatMap(Recipes, (recipes) => Effect.map(recipes.list, (all) => all.map(recipeSummary)))
const pins = (all: ReadonlyArray<PinnedRecipe>) => ({ recipes: all.map((pin) => ({ ...pin })) })

export const searchRecipes = defineOperation({
  key: "recipe.search",
  tool: "search_recipes",
  expose: { cli: "recipe search", mcp: true },
  title: "Search the recipe index",
  description:
    "Search the curated recipe index by words in names and descriptions (no term: every entry). The local index clone is refreshed when older than 24 hours.",
  kind: "query",
  input: Schema.Struct({
    term: Schema.optional(Schema.String.pipe(Schema.maxLength(200))).annotations({
      description: "Words every listed entry's name or description holds"
    }),
    refresh: Schema.optional(Schema.Boolean).annotations({
      description: "Fetch the index again even when the clone is recent"
    })
  }),
  output: RecipeSearchResult,
  annotations: READ_NETWORK,
  touches: ["network"],
  access: null,
  // Recipe names and Git sources are never VMs.
  target: noVms,
  run: (input) =>
    Effect.map(
      Effect.flatMap(RemoteRecipes, (remote) =>
        remote.search(input.term === undefined ? [] : [input.term], input.refresh ?? false)
      ),
      (entries) => ({ recipes: entries.map((entry) => ({ ...entry, os: [...entry.os] })) })
    )
})

export const addRecipe = defineOperation({
  key: "recipe.add",
  tool: "add_recipe",
  expose: { cli: "recipe add", mcp: true },
  title: "Add a remote recipe",
  description:
    "Add a recipe from the curated index by name or name@ref (Git URLs are refused), pinned in stoat.lock: to the working directory's project when it has a stoat.toml, else globally.",
  kind: "command",
  input: Schema.Struct({
    name: Schema.optional(IndexRef),
    ref: Schema.optional(Ref),
    source: hostOnly(
      Schema.optional(Schema.String.pipe(Schema.maxLength(1000))).annotations({
        description: "A Git URL or path instead of an index name (URL[@ref])"
      })
    ),
    global: hostOnly(Global),
    force: hostOnly(
      Schema.optional(Schema.Boolean).annotations({
        description: "Re-pin, or shadow a bundled, local or global recipe of the same name"
      })
    ),
    preview: hostOnly(
      Schema.optional(Schema.Boolean).annotations({ description: "Resolve and validate only; write nothing" })
    )
  }),
  output: RecipeAddResult,
  annotations: MUTATE_NETWORK,
  touches: ["network"],
  access: null,
  // Recipe names and Git sources are never VMs.
  target: noVms,
  run: (input) =>
    Effect.gen(function* () {
      if ((input.name === undefined) === (input.source === undefined)) {
        return yield* new Usage({
          message: "give a recipe: an index name (name or name@ref) or a Git URL",
          subject: "name"
        })
      }
      const added = yield* (yield* RemoteRecipes).add({
        ...(input.name !== undefined ? { name: input.name } : {}),
        ...(input.source !== undefined ? { source: input.source } : {}),
        ...(input.ref !== undefined ? { ref: input.ref } : {}),
        global: input.global ?? false,
        force: input.force ?? false,
        preview: input.preview ?? false
      })
      return { ...added, recipes: yield* catalogNow }
    })
})

/** `recipe lock` and `recipe sync`: CLI-only steps over one scope's pins. */
const pinsOperation = (step: "lock" | "sync", title: string, description: string) =>
  defineOperation({
    key: `recipe.${step}`,
    tool: `${step}_recipes`,
    expose: { cli: `recipe ${step}`, mcp: false },
    title,
    description,
    kind: "command",
    input: Schema.Struct({ global: Global }),
    output: RecipePins,
    annotations: MUTATE_NETWORK,
    // Both resolve or fetch the pinned Git sources.
    touches: ["network"],
    access: null,
    // Recipe names and Git sources are never VMs.
    target: noVms,
    run: (input) =>
      Effect.map(
        Effect.flatMap(RemoteRecipes, (remote) => remote[step](input.global ?? false)),
        pins
      )
  })

export const lockRecipes = pinsOperation(
  "lock",
  "Pin declared recipes",
  "Resolve the project's [recipes] declarations to 40-hex commits in stoat.lock (unchanged pins kept, undeclared ones dropped); the checkouts are not touched."
)

export const syncRecipes = pinsOperation(
  "sync",
  "Make checkouts match stoat.lock",
  "Check out every pinned recipe at its locked commit (a missing or stale clean checkout is replaced, a changed one refused) and remove project checkouts the lock does not pin."
)

export const updateRecipe = defineOperation({
  key: "recipe.update",
  tool: "update_recipe",
  expose: { cli: "recipe update", mcp: true },
  title: "Re-pin remote recipes",
  description: "Resolve a remote recipe's ref again and check out the new commit.",
  kind: "command",
  input: Schema.Struct({
    name: Schema.optional(RecipeName).annotations({ description: "Remote recipe to repin; omit for all of the scope" }),
    names: hostOnly(Schema.optional(Schema.Array(RecipeName).pipe(Schema.maxItems(256)))),
    global: hostOnly(Global)
  }),
  output: RecipeUpdateResult,
  annotations: MUTATE_NETWORK,
  touches: ["network"],
  access: null,
  // Recipe names and Git sources are never VMs.
  target: noVms,
  run: (input) =>
    Effect.gen(function* () {
      const names = [...(input.name !== undefined ? [input.name] : []), ...(input.names ?? [])]
      const updated = yield* (yield* RemoteRecipes).update(names, input.global ?? false)
      return { updated: pins(updated).recipes, recipes: yield* catalogNow }
    })
})

export const removeRecipe = defineOperation({
  key: "recipe.remove",
  tool: "remove_recipe",
  expose: { cli: "recipe rm", mcp: true },
  title: "Remove a remote recipe",
  description: "Remove a remote recipe's declaration, pin and checkout; refused while a VM lists it.",
  kind: "command",
  input: Schema.Struct({
    name: RecipeName,
    global: hostOnly(Global),
    force: hostOnly(Schema.optional(Schema.Boolean).annotations({ description: "Remove even while VMs list it" }))
  }),
  output: RecipeRemoveResult,
  annotations: MUTATE,
  access: null,
  // Recipe names and Git sources are never VMs.
  target: noVms,
  run: (input) =>
    Effect.gen(function* () {
      const removed = yield* (yield* RemoteRecipes).remove(input.name, {
        global: input.global ?? false,
        force: input.force ?? false
      })
      return { ...removed, recipes: yield* catalogNow }
    })
})

export const remoteRecipeOperations = [
  searchRecipes,
  addRecipe,
  lockRecipes,
  syncRecipes,
  updateRecipe,
  removeRecipe
] as const
