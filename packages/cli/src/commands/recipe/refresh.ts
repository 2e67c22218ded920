import { refreshRecipes } from "@stoat/core"
import { StoatCommand } from "../../base.js"
import { table } from "../../render.js"

export default class RecipeRefresh extends StoatCommand {
  static override summary = "Rewrite bundled recipes"
  static override description =
    "Rewrite bundled recipe files from this build's copies (all, or the named recipes). A hand-edited file is kept beside it as .bak."
  static override strict = false

  async run(): Promise<void> {
    const { argv } = await this.parse(RecipeRefresh)
    const result = await this.call(refreshRecipes, argv.length > 0 ? { names: argv } : {})
    this.emit(result, () =>
      this.line(
        table(
          ["STATUS", "PATH"],
          result.files.map((file) => [file.status, file.path])
        )
      )
    )
  }
}
