import { Args } from "@oclif/core"
import { listCheckpoints } from "@stoat/core"
import { StoatCommand } from "../../base.js"
import { mib, table } from "../../render.js"

export default class CheckpointLs extends StoatCommand {
  static override summary = "List checkpoints"
  static override description =
    "List the checkpoints of one VM, or of every VM: when taken, RAM, state size, pause, the VMs built on each, and any problem."
  static override aliases = ["checkpoint list"]
  static override args = { vm: Args.string({ description: "VM name (default: every VM)" }) }

  async run(): Promise<void> {
    const { args } = await this.parse(CheckpointLs)
    const { checkpoints } = await this.call(listCheckpoints, args.vm === undefined ? {} : { vm: args.vm })
    this.emit({ checkpoints }, () =>
      this.line(
        checkpoints.length === 0
          ? "no checkpoints"
          : table(
              ["CHECKPOINT", "CREATED", "RAM", "STATE", "PAUSED", "FORKS", "PROBLEM"],
              checkpoints.map((checkpoint) => [
                `${checkpoint.vm}@${checkpoint.name}`,
                checkpoint.created,
                mib(checkpoint.ram_mb),
                `${(checkpoint.state_bytes / 1024 / 1024).toFixed(1)}M`,
                `${checkpoint.paused_ms} ms`,
                checkpoint.dependents.join(",") || "-",
                checkpoint.problem ?? "-"
              ])
            )
      )
    )
  }
}
