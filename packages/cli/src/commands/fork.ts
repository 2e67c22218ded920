import { Args, Flags } from "@oclif/core"
import { forkCheckpoint } from "@stoat/core"
import { StoatCommand } from "../base.js"

export default class Fork extends StoatCommand {
  static override summary = "Start warm VMs from a checkpoint"
  static override description =
    "Start new VMs running from a checkpoint (stoat checkpoint <vm> <name>): each on its own copy-on-write disk, with its own SSH port, hostname and reseeded RNG, ready once SSH answers. --count N makes <new-name>-1…N at once; if one fails, none is kept."
  static override examples = ["stoat fork dev@ready try", "stoat fork dev@ready try --count 5"]
  static override args = {
    source: Args.string({ description: "<vm>@<checkpoint>", required: true }),
    name: Args.string({ description: "new VM name (with --count: the prefix)", required: true })
  }
  static override flags = { count: Flags.integer({ char: "n", description: "how many forks, named <new-name>-1…N" }) }

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Fork)
    const at = args.source.lastIndexOf("@")
    if (at <= 0 || at === args.source.length - 1) {
      return this.failWith({ code: "usage", message: `expected <vm>@<checkpoint>, got ${JSON.stringify(args.source)}` })
    }
    const input = {
      vm: args.source.slice(0, at),
      checkpoint: args.source.slice(at + 1),
      name: args.name,
      ...(flags.count !== undefined ? { count: flags.count } : {})
    }
    const result = await this.call(forkCheckpoint, input, { showProgress: true })
    this.emit(result, () => {
      for (const fork of result.forks)
        this.line(
          `forked ${fork.vm.name} from ${result.source}@${result.checkpoint} (ssh port ${fork.vm.ssh_port}, ready in ${fork.ready_ms} ms)`
        )
    })
  }
}
