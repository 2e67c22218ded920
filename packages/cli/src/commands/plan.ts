import { Args } from "@oclif/core"
import { planRecipes } from "@stoat/core"
import { StoatCommand } from "../base.js"
import { recipeNames, recipesFlag } from "../flags.js"
import { renderPlan } from "../views/recipes.js"

export default class Plan extends StoatCommand {
  static override summary = "Show what apply would do"
  static override description =
    "Show which of a VM's recipes apply would run or skip, and why. Computed on the host: works on a stopped VM and runs nothing."
  static override args = { vm: Args.string({ description: "VM name", required: true }) }
  static override flags = { only: recipesFlag("plan only these of the VM's recipes (comma-separated or repeated)") }

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Plan)
    const result = await this.call(planRecipes, {
      vm: args.vm,
      ...(flags.only ? { only: recipeNames(flags.only) } : {})
    })
    this.emit(result, () => this.line(renderPlan(result.plan)))
  }
}
