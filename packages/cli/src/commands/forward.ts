import { Args, Flags } from "@oclif/core"
import { forwardPorts } from "@stoat/core"
import { StoatCommand } from "../base.js"

export default class Forward extends StoatCommand {
  static override summary = "Show or set port forwards"
  static override description =
    "With no pairs, show the VM's forwards. With HOST:GUEST pairs, replace them (127.0.0.1:HOST → guest GUEST). On a running VM changes apply at the next start."
  static override strict = false
  static override args = { vm: Args.string({ description: "VM name", required: true }) }
  static override flags = { clear: Flags.boolean({ description: "remove every forward" }) }

  async run(): Promise<void> {
    const { args, argv, flags } = await this.parse(Forward)
    const pairs = (argv as string[]).slice(1)
    const result = await this.call(forwardPorts, {
      vm: args.vm,
      ...(pairs.length > 0 ? { pairs } : {}),
      ...(flags.clear ? { clear: true } : {})
    })
    this.emit(result, () => {
      if (result.forwards.length === 0) this.line(`${result.vm}: no forwards`)
      for (const forward of result.forwards) this.line(`127.0.0.1:${forward.host_port} -> ${forward.guest_port}`)
      if (result.applies_at === "next_start") this.line("takes effect at next start")
    })
  }
}
