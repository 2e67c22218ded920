import { createInterface } from "node:readline/promises"
import { Args, Flags } from "@oclif/core"
import { destroyVm } from "@stoat/core"
import { StoatCommand } from "../base.js"

export default class Rm extends StoatCommand {
  static override summary = "Delete a VM"
  static override description = "Delete a stopped VM with its disk, snapshots and shared folder. Asks first; without a terminal (or with --json/-q) pass -y."
  static override aliases = ["delete", "destroy"]
  static override args = { vm: Args.string({ description: "VM name", required: true }) }
  static override flags = { yes: Flags.boolean({ char: "y", description: "do not ask" }) }

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Rm)
    if (!flags.yes) {
      if (this.json || flags.quiet || process.stdin.isTTY !== true) {
        return this.failWith({ code: "confirmation_required", message: `deleting "${args.vm}" needs confirmation; pass -y`, subject: args.vm })
      }
      const prompt = createInterface({ input: process.stdin, output: process.stderr })
      const answer = await prompt.question(`delete VM "${args.vm}" and its disk? [y/N] `)
      prompt.close()
      if (!/^y(es)?$/i.test(answer.trim())) {
        process.stderr.write("not deleted\n")
        return this.exit(1)
      }
    }
    const result = await this.call(destroyVm, { vm: args.vm })
    this.emit({ deleted: result.destroyed, name: result.name }, () => this.line(`deleted ${result.name}`))
  }
}
