import { Flags } from "@oclif/core"
import { updateRecipe } from "@stoat/core"
import { StoatCommand } from "../../base.js"
import { pinTable } from "../../views/recipe-pins.js"

export default class RecipeUpdate extends StoatCommand {
  static override summary = "Re-pin remote recipes"
  static override description =
    "Resolve the stored refs of the named remote recipes (default all of the scope) again and check out the new commits."
  static override strict = false
  static override flags = { global: Flags.boolean({ description: "global scope even inside a project" }) }

  async run(): Promise<void> {
    const { argv, flags } = await this.parse(RecipeUpdate)
    const names = argv as string[]
    const result = await this.call(updateRecipe, {
      ...(names.length > 0 ? { names } : {}),
      ...(flags.global ? { global: true } : {})
    })
    this.emit(result, () => this.line(pinTable(result.updated)))
  }
}
