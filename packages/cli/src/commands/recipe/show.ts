import { Args } from "@oclif/core"
import { recipeSchema } from "@stoat/core"
import { StoatCommand } from "../../base.js"

export default class RecipeShow extends StoatCommand {
  static override summary = "Show a recipe's contract"
  static override description = "Schema, runtime, params, outputs and health check of one recipe."
  static override args = { name: Args.string({ description: "recipe name", required: true }) }

  async run(): Promise<void> {
    const { args } = await this.parse(RecipeShow)
    await this.show(recipeSchema, { name: args.name }, (recipe) => {
      this.line(`name: ${recipe.name}`)
      this.line(`description: ${recipe.description}`)
      this.line(`schema: ${recipe.schema}`)
      this.line(`runtime: ${recipe.runtime}`)
      this.line(`reboot: ${recipe.reboot}`)
      this.line(`depends: ${recipe.depends.join(", ") || "-"}`)
      for (const param of recipe.params) {
        const value = param.required
          ? "required"
          : param.default_from
            ? `default from ${param.default_from}`
            : `default ${JSON.stringify(param.default)}`
        this.line(
          `param ${param.name} (${param.type}${param.values.length > 0 ? `: ${param.values.join("|")}` : ""}, ${value})${param.help ? `: ${param.help}` : ""}`
        )
      }
      for (const output of recipe.outputs) this.line(`output ${output.name}: ${output.help}`)
      this.line(`health: ${recipe.health ? `${recipe.health.check} (timeout ${recipe.health.timeout})` : "-"}`)
    })
  }
}
