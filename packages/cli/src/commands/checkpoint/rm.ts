import { Args, Flags } from "@oclif/core"
import { deleteCheckpoint } from "@stoat/core"
import { StoatCommand } from "../../base.js"

export default class CheckpointRm extends StoatCommand {
  static override summary = "Delete a checkpoint"
  static override description =
    "Delete a checkpoint's saved state. VMs forked from it keep working. Asks first; without a terminal (or with --json/-q) pass -y."
  static override aliases = ["checkpoint delete"]
  static override args = {
    vm: Args.string({ description: "VM name", required: true }),
    name: Args.string({ description: "checkpoint name", required: true })
  }
  static override flags = { yes: Flags.boolean({ char: "y", description: "do not ask" }) }

  async run(): Promise<void> {
    const { args, flags } = await this.parse(CheckpointRm)
    if (!flags.yes)
      await this.confirmOrExit(`delete checkpoint ${args.vm}@${args.name}?`, `${args.vm}@${args.name}`, flags.quiet)
    const result = await this.call(deleteCheckpoint, { vm: args.vm, name: args.name })
    this.emit(result, () => this.line(`deleted checkpoint ${result.vm}@${result.name}`))
  }
}
