import { Args, Flags } from "@oclif/core"
import { applyDryRunView, applyRecipes, planRecipes, projectApply } from "@stoat/core"
import { StoatCommand } from "../base.js"
import { recipeNames, recipesFlag } from "../flags.js"
import { renderPlan } from "../views/recipes.js"

export default class Apply extends StoatCommand {
  static override summary = "Apply a VM's recipes, or each project VM's"
  static override description =
    "Run the VM's recipes in dependency order, streaming the apply log. Once-recipes whose script and params are unchanged are skipped; --only names a subset (and runs manual recipes). --dry-run shows the plan without running anything."
  static override aliases = ["provision"]
  static override args = {
    vm: Args.string({ description: "VM name or project key; none: every VM ./stoat.toml declares" })
  }
  static override flags = {
    only: recipesFlag("apply only these of the VM's recipes (comma-separated or repeated)"),
    "dry-run": Flags.boolean({ description: "show what would run, run nothing" })
  }

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Apply)
    if (args.vm === undefined) {
      if (flags.only || flags["dry-run"])
        return this.failWith({ code: "usage", message: "--only and --dry-run need a VM name" })
      return this.runProject(projectApply, {}, "applied", { showProgress: !flags.quiet })
    }
    const input = { vm: args.vm, ...(flags.only ? { only: recipeNames(flags.only) } : {}) }
    if (flags["dry-run"]) {
      const planned = await this.call(planRecipes, input)
      return this.emit(applyDryRunView(planned), () => this.line(renderPlan(planned.plan)))
    }
    const result = await this.call(applyRecipes, input, { showProgress: !flags.quiet })
    this.emit(result, () =>
      this.line(
        result.skipped_reason !== ""
          ? `${result.vm}: nothing applied (${result.skipped_reason})`
          : `${result.vm}: applied ${result.applied.join(", ") || "nothing new"}`
      )
    )
  }
}
