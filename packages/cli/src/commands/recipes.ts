import { Flags } from "@oclif/core"
import { listRecipes } from "@stoat/core"
import { StoatCommand } from "../base.js"
import { table } from "../render.js"

export default class RecipesCommand extends StoatCommand {
  static override summary = "List recipes"
  static override description =
    "List the recipes every recipe root declares; with --os only those that run on that guest OS. --backend is accepted but is not a filter."
  static override flags = {
    os: Flags.string({ description: "only recipes that run on this guest OS" }),
    backend: Flags.string({ description: "accepted for compatibility; not a filter" })
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(RecipesCommand)
    const { recipes } = await this.call(listRecipes, {
      ...(flags.os ? { os: flags.os } : {}),
      ...(flags.backend ? { backend: flags.backend } : {})
    })
    this.emit({ recipes }, () =>
      this.line(
        table(
          ["NAME", "DESCRIPTION"],
          recipes.map((recipe) => [recipe.name, recipe.description])
        )
      )
    )
  }
}
