import { Args, Flags } from "@oclif/core"
import { newRecipe } from "@stoat/core"
import { StoatCommand } from "../../base.js"

export default class RecipeNew extends StoatCommand {
  static override summary = "Scaffold a recipe"
  static override description =
    "Create $STOAT_HOME/recipes/<name>/ with a sample recipe.toml and install.sh, and print the folder."
  static override args = { name: Args.string({ description: "recipe name", required: true }) }
  static override flags = {
    os: Flags.string({
      description: "guest OS the recipe is for (comma-separated or repeated)",
      multiple: true,
      multipleNonGreedy: true,
      delimiter: ","
    }),
    backend: Flags.string({ description: "accepted for compatibility" })
  }

  async run(): Promise<void> {
    const { args, flags } = await this.parse(RecipeNew)
    const result = await this.call(newRecipe, {
      name: args.name,
      ...(flags.os ? { os: flags.os } : {}),
      ...(flags.backend ? { backend: flags.backend } : {})
    })
    this.emit(result, () => this.line(result.path))
  }
}
