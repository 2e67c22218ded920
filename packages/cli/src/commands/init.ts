import { Flags } from "@oclif/core"
import { projectInit } from "@stoat/core"
import { StoatCommand } from "../base.js"

export default class Init extends StoatCommand {
  static override summary = "Start a project in this folder"
  static override description =
    "Write an annotated stoat.toml with one [vms.dev] (refused when one exists). In a git checkout, .stoat/ (project secrets and recipe checkouts) is added to .gitignore."
  static override flags = { name: Flags.string({ description: "project name (default: the folder's name)" }) }

  async run(): Promise<void> {
    const { flags } = await this.parse(Init)
    const result = await this.call(projectInit, flags.name !== undefined ? { name: flags.name } : {})
    this.emit(result, () => {
      this.line(`stoat.toml created in ${process.cwd()}`)
      if (result.gitignore_updated) this.line("added .stoat/ to .gitignore")
      if (!flags.quiet) this.line("bring it up with: stoat up")
    })
  }
}
