import { Flags } from "@oclif/core"
import { lockRecipes } from "@stoat/core"
import { StoatCommand } from "../../base.js"
import { pinTable } from "../../views/recipe-pins.js"

export default class RecipeLock extends StoatCommand {
  static override summary = "Pin declared recipes in stoat.lock"
  static override description = lockRecipes.description
  static override flags = { global: Flags.boolean({ description: "the global lock (<root>/stoat.lock) even inside a project" }) }

  async run(): Promise<void> {
    const { flags } = await this.parse(RecipeLock)
    const result = await this.call(lockRecipes, flags.global ? { global: true } : {})
    this.emit(result, () => this.line(pinTable(result.recipes)))
  }
}
