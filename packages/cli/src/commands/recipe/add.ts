import { createInterface } from "node:readline/promises"
import { Args, Flags } from "@oclif/core"
import { addRecipe } from "@stoat/core"
import { StoatCommand } from "../../base.js"

/** An index name is `name` or `name@ref`; anything else (a URL, a path) is a Git source. */
const INDEX_REF = /^[a-z0-9][a-z0-9-]*(@.*)?$/s

export default class RecipeAdd extends StoatCommand {
  static override summary = "Add a remote recipe"
  static override description =
    "Add a recipe from the curated index (name or name@ref) or from a Git URL (URL[@ref]), pinned to a commit in stoat.lock: in this directory's project when it has a stoat.toml, else globally. A URL is previewed and needs confirmation (-y when there is no terminal)."
  static override args = { ref: Args.string({ description: "name, name@ref or URL[@ref]", required: true }) }
  static override flags = {
    yes: Flags.boolean({ char: "y", description: "add a URL without asking" }),
    global: Flags.boolean({ description: "global scope even inside a project" }),
    force: Flags.boolean({ description: "re-pin, or shadow a recipe of the same name" })
  }

  async run(): Promise<void> {
    const { args, flags } = await this.parse(RecipeAdd)
    const target = INDEX_REF.test(args.ref) ? { name: args.ref } : { source: args.ref }
    const input = { ...target, ...(flags.global ? { global: true } : {}), ...(flags.force ? { force: true } : {}) }
    if ("source" in target && !flags.yes) {
      if (this.json || flags.quiet || process.stdin.isTTY !== true) {
        return this.failWith({
          code: "confirmation_required",
          message: `adding a recipe from ${args.ref} runs its scripts in your VMs; pass -y to add it`,
          subject: args.ref
        })
      }
      const preview = await this.call(addRecipe, { ...input, preview: true })
      process.stderr.write(
        `recipe ${preview.name} from ${preview.source}\n  ref ${preview.ref}, commit ${preview.commit}, ${preview.scope} scope\n`
      )
      const prompt = createInterface({ input: process.stdin, output: process.stderr })
      const answer = await prompt.question("Add it? [y/N] ")
      prompt.close()
      if (!/^y(es)?$/i.test(answer.trim())) {
        process.stderr.write("not added\n")
        return this.exit(1)
      }
    }
    const result = await this.call(addRecipe, input)
    this.emit(result, () =>
      this.line(`added ${result.name} ${result.commit.slice(0, 7)} (${result.ref}, ${result.scope})`)
    )
  }
}
