import { Args } from "@oclif/core"
import { psOp } from "@stoat/core"
import { StoatCommand } from "../base.js"
import { table } from "../render.js"

export default class Ps extends StoatCommand {
  static override summary = "List the processes of a VM"
  static override description =
    "The processes of a running VM: pid, parent, user, elapsed time (when the guest's ps has it) and command line; at most 2000."
  static override args = { vm: Args.string({ description: "VM name", required: true }) }
  static override examples = ["stoat ps dev", "stoat ps --json dev"]

  async run(): Promise<void> {
    const { args } = await this.parse(Ps)
    const list = await this.call(psOp, { vm: args.vm })
    this.emit(list, () => {
      const rows = list.processes.map((p) => [String(p.pid), String(p.ppid), p.user, p.elapsed ?? "-", p.command])
      this.line(table(["PID", "PPID", "USER", "ELAPSED", "COMMAND"], rows))
      if (list.truncated)
        process.stderr.write(`stoat: ps: only the first ${list.processes.length} processes are shown\n`)
    })
  }
}
