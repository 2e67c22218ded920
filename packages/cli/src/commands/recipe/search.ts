import { Flags } from "@oclif/core"
import { searchRecipes } from "@stoat/core"
import { StoatCommand } from "../../base.js"
import { table } from "../../render.js"

export default class RecipeSearch extends StoatCommand {
  static override summary = "Search the recipe index"
  static override description =
    "List curated index entries whose name or description holds every term (STOAT_INDEX: a Git repository or a folder with index.toml). The index clone is reused for 24 hours."
  static override strict = false
  static override flags = { refresh: Flags.boolean({ description: "fetch the index again now" }) }

  async run(): Promise<void> {
    const { argv, flags } = await this.parse(RecipeSearch)
    const terms = (argv as string[]).join(" ")
    const result = await this.call(searchRecipes, {
      ...(terms !== "" ? { term: terms } : {}),
      ...(flags.refresh ? { refresh: true } : {})
    })
    this.emit(result, () =>
      this.line(
        table(
          ["NAME", "OS", "DESCRIPTION", "SOURCE"],
          result.recipes.map((entry) => [entry.name, entry.os.join(",") || "all", entry.description, entry.source])
        )
      )
    )
  }
}
