import { Args } from "@oclif/core"
import { listSnapshots } from "@stoat/core"
import { StoatCommand } from "../../base.js"
import { table } from "../../render.js"

type Snapshots = (typeof listSnapshots.output.Type)["snapshots"]

/** The snapshot table both `snapshot ls <vm>` and the original `snapshot <vm>` print. */
export const renderSnapshots = (vm: string, snapshots: Snapshots): string =>
  snapshots.length === 0
    ? `${vm}: no snapshots`
    : table(
        ["TAG", "SIZE", "CREATED", "RAM"],
        snapshots.map((s) => [
          s.tag,
          s.size_display,
          s.created_display,
          s.vm_state === "running" ? "no (disk-only)" : "-"
        ])
      )

export default class SnapshotLs extends StoatCommand {
  static override summary = "List a VM's disk snapshots"
  static override aliases = ["snapshot list"]
  static override args = { vm: Args.string({ description: "VM name", required: true }) }
  static override examples = ["stoat snapshot ls dev"]

  async run(): Promise<void> {
    const { args } = await this.parse(SnapshotLs)
    await this.show(listSnapshots, { vm: args.vm }, ({ snapshots }) => this.line(renderSnapshots(args.vm, snapshots)))
  }
}
