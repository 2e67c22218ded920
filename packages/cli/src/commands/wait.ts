import { Args, Flags } from "@oclif/core"
import { projectWait, waitVm } from "@stoat/core"
import { StoatCommand } from "../base.js"
import { waitTimeoutFlag } from "../flags.js"

export default class Wait extends StoatCommand {
  static override summary = "Wait for a VM state (or for each of this project's VMs)"
  static override description =
    "Wait until a VM is reachable over SSH (default), stopped, or has applied its recipes. Impossible states fail at once."
  static override args = {
    vm: Args.string({ description: "VM name or project key; none: every VM ./stoat.toml declares" })
  }
  static override flags = {
    until: Flags.string({
      options: ["reachable", "applied", "stopped"],
      description: "state to wait for (default reachable)"
    }),
    healthy: Flags.boolean({ description: "wait until recipe health checks pass", exclusive: ["until"] }),
    timeout: waitTimeoutFlag("how long to wait, e.g. 2m or 90s (default 5m, at most 10m)")
  }

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Wait)
    const input = {
      ...(flags.until ? { until: flags.until } : {}),
      ...(flags.healthy ? { healthy: true } : {}),
      ...(flags.timeout ? { timeout_seconds: flags.timeout } : {})
    }
    if (args.vm === undefined)
      return this.runProject(projectWait, input, flags.until ?? (flags.healthy ? "healthy" : "reachable"))
    const result = await this.call(waitVm, { vm: args.vm, ...input })
    // A script's `stoat wait --healthy && …` must not go on past failing checks (MCP gets healthy: false).
    if (result.healthy === false) {
      return this.failWith({
        code: "timeout",
        message: `the recipe health checks of VM "${result.vm}" did not pass (see stoat get ${result.vm})`,
        subject: result.vm
      })
    }
    this.emit(result, () =>
      this.line(`${result.vm} is ${result.until} (after ${(result.waited_ms / 1000).toFixed(1)} s)`)
    )
  }
}
