import { Args, Flags } from "@oclif/core"
import { tailLogOp } from "@stoat/core"
import { StoatCommand } from "../base.js"

export default class Tail extends StoatCommand {
  static override summary = "Show the end of a log in a VM"
  static override description =
    "The last lines of a log in a running VM: a systemd unit's journal (--unit, as root), a file (--path, as the ssh user), or with neither the guest's system log (as root)."
  static override args = { vm: Args.string({ description: "VM name", required: true }) }
  static override flags = {
    unit: Flags.string({ description: "systemd unit whose journal to show", exclusive: ["path"] }),
    path: Flags.string({ description: "absolute path of a log file", exclusive: ["unit"] }),
    lines: Flags.integer({ char: "n", description: "lines to show (max 2000)", default: 50, min: 1, max: 2000 })
  }
  static override examples = [
    "stoat tail dev --unit nginx",
    "stoat tail dev --path /var/log/app.log -n 200",
    "stoat tail dev"
  ]

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Tail)
    const result = await this.call(tailLogOp, {
      vm: args.vm,
      lines: flags.lines,
      ...(flags.unit !== undefined ? { unit: flags.unit } : {}),
      ...(flags.path !== undefined ? { path: flags.path } : {})
    })
    this.emit(result, () => {
      for (const line of result.lines) this.line(line)
    })
  }
}
