import { resolve } from "node:path"
import { Args, Flags } from "@oclif/core"
import { screenshotVm } from "@stoat/core"
import { StoatCommand } from "../base.js"

export default class Screenshot extends StoatCommand {
  static override summary = "Save a PNG of a VM's display"
  static override args = { vm: Args.string({ description: "VM name", required: true }) }
  static override flags = {
    output: Flags.string({ char: "o", description: "output file (default: the VM's screenshots folder)" })
  }

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Screenshot)
    const result = await this.call(screenshotVm, {
      vm: args.vm,
      ...(flags.output ? { path: resolve(flags.output) } : {})
    })
    this.emit(result, () => this.line(`${result.path} (${result.width}x${result.height}, ${result.bytes} bytes)`))
  }
}
