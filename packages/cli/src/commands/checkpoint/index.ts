import { Args } from "@oclif/core"
import { takeCheckpoint } from "@stoat/core"
import { StoatCommand } from "../../base.js"

export default class Checkpoint extends StoatCommand {
  static override summary = "Checkpoint a running VM (RAM, devices and disk)"
  static override description =
    "Save a running VM's RAM, device state and disk at this instant; fork warm copies from it with stoat fork <vm>@<name> <new-name>. The VM is paused briefly and runs on. See also stoat checkpoint ls and stoat checkpoint rm."
  static override examples = [
    "stoat checkpoint dev ready",
    "stoat fork dev@ready try --count 3",
    "stoat checkpoint ls dev",
    "stoat checkpoint rm dev ready"
  ]
  static override args = {
    vm: Args.string({ description: "running VM", required: true }),
    name: Args.string({ description: "checkpoint name", required: true })
  }

  async run(): Promise<void> {
    const { args } = await this.parse(Checkpoint)
    const result = await this.call(takeCheckpoint, { vm: args.vm, name: args.name }, { showProgress: true })
    this.emit(result, () => {
      const { checkpoint } = result
      this.line(
        `checkpoint ${checkpoint.vm}@${checkpoint.name}: ${(checkpoint.state_bytes / 1024 / 1024).toFixed(1)} MiB of state, paused ${checkpoint.paused_ms} ms, took ${result.took_ms} ms`
      )
    })
  }
}
