import { Args } from "@oclif/core"
import { statOp } from "@stoat/core"
import { StoatCommand } from "../../base.js"

export default class FileStat extends StoatCommand {
  static override summary = "Describe a path of a VM"
  static override description =
    "Type, size, mode, owner and modification time of one path of a running VM (a symlink itself, not its target)."
  static override args = {
    vm: Args.string({ description: "VM name", required: true }),
    path: Args.string({ description: "absolute path in the guest", required: true })
  }
  static override examples = ["stoat file stat dev /etc/passwd"]

  async run(): Promise<void> {
    const { args } = await this.parse(FileStat)
    const entry = await this.call(statOp, { vm: args.vm, path: args.path })
    this.emit(entry, () => {
      for (const [key, value] of [
        ["name", entry.name],
        ["type", entry.type],
        ["size", String(entry.size)],
        ["mode", entry.mode],
        ["owner", entry.owner],
        ["modified", entry.mtime]
      ])
        this.line(`${key}: ${value}`)
    })
  }
}
