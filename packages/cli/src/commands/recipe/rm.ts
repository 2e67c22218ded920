import { Args, Flags } from "@oclif/core"
import { removeRecipe } from "@stoat/core"
import { StoatCommand } from "../../base.js"

export default class RecipeRm extends StoatCommand {
  static override summary = "Remove a remote recipe"
  static override description =
    "Remove a remote recipe's declaration, pin and checkout. Refused while a VM lists it, unless --force."
  static override args = { name: Args.string({ description: "recipe name", required: true }) }
  static override flags = {
    yes: Flags.boolean({ char: "y", description: "do not ask" }),
    global: Flags.boolean({ description: "global scope even inside a project" }),
    force: Flags.boolean({ description: "remove even while VMs list it" })
  }

  async run(): Promise<void> {
    const { args, flags } = await this.parse(RecipeRm)
    if (!flags.yes) await this.confirmOrExit(`Remove recipe ${args.name}?`, args.name, flags.quiet)
    const result = await this.call(removeRecipe, {
      name: args.name,
      ...(flags.global ? { global: true } : {}),
      ...(flags.force ? { force: true } : {})
    })
    this.emit(result, () => this.line(`removed ${result.name} (${result.scope})`))
  }
}
