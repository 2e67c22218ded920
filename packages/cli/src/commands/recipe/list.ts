import { listRecipeEntries } from "@stoat/core"
import { StoatCommand } from "../../base.js"
import { table } from "../../render.js"

export default class RecipeList extends StoatCommand {
  static override summary = "List recipes with their scope"
  static override description =
    "Every recipe with its scope (bundled, local, global, project), in shadow order: project > global > local > bundled."
  static override aliases = ["recipe ls"]

  async run(): Promise<void> {
    await this.parse(RecipeList)
    const result = await this.call(listRecipeEntries, {})
    this.emit(result, () =>
      this.line(
        table(
          ["NAME", "SCOPE", "COMMIT", "DESCRIPTION"],
          result.recipes.map((recipe) => [recipe.name, recipe.scope, recipe.commit || "-", recipe.description])
        )
      )
    )
  }
}
