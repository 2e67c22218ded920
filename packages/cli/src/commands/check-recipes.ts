import { Args, Flags } from "@oclif/core"
import { checkRecipes } from "@stoat/core"
import { StoatCommand } from "../base.js"

export default class CheckRecipes extends StoatCommand {
  static override summary = "Check recipes against a guest OS"
  static override description =
    "Print `name: reason` for each recipe that cannot run on the guest OS, or `all applicable`. An inapplicable recipe is not a failure."
  static override strict = false
  static override args = { recipes: Args.string({ description: "recipe names", required: true }) }
  static override flags = {
    os: Flags.string({ description: "guest OS", required: true }),
    backend: Flags.string({ description: "accepted for compatibility; not a filter" })
  }

  async run(): Promise<void> {
    const { argv, flags } = await this.parse(CheckRecipes)
    const result = await this.call(checkRecipes, {
      recipes: argv,
      os: flags.os,
      ...(flags.backend ? { backend: flags.backend } : {})
    })
    this.emit(result, () => {
      if (result.applicable) this.line("all applicable")
      for (const issue of result.issues) this.line(`${issue.name}: ${issue.reason}`)
    })
  }
}
