import { Flags } from "@oclif/core"
import { syncRecipes } from "@stoat/core"
import { StoatCommand } from "../../base.js"
import { pinTable } from "../../views/recipe-pins.js"

export default class RecipeSync extends StoatCommand {
  static override summary = "Make recipe checkouts match stoat.lock"
  static override description = syncRecipes.description
  static override flags = { global: Flags.boolean({ description: "the global lock (<root>/stoat.lock) even inside a project" }) }

  async run(): Promise<void> {
    const { flags } = await this.parse(RecipeSync)
    const result = await this.call(syncRecipes, flags.global ? { global: true } : {})
    this.emit(result, () => this.line(pinTable(result.recipes)))
  }
}
