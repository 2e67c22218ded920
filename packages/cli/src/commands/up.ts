import { Args, Flags } from "@oclif/core"
import { projectUp, startVm } from "@stoat/core"
import { StoatCommand } from "../base.js"
import { waitTimeoutFlag } from "../flags.js"
import { renderUp } from "../views/up.js"

export default class Up extends StoatCommand {
  static override summary = "Start a VM, or bring up this project's VMs"
  static override description =
    "Start a VM and apply its recipes (unless --no-apply). When stdout is not a terminal, or with --json or --wait, waits until SSH answers. A running VM is fine (exit 0). -y ignores the host-memory floor (never the configured RAM limit)."
  static override aliases = ["start"]
  static override args = {
    vm: Args.string({ description: "VM name or project key; none: every VM ./stoat.toml declares (reconciled first)" })
  }
  static override flags = {
    yes: Flags.boolean({ char: "y", description: "start even if the host has less free memory than the VM's RAM" }),
    wait: Flags.boolean({ allowNo: true, description: "wait until SSH answers (default when not a terminal)" }),
    timeout: waitTimeoutFlag("how long to wait for SSH, e.g. 2m or 90s (default 5m, at most 10m)"),
    "no-apply": Flags.boolean({ aliases: ["no-provision"], description: "do not apply recipes after boot" }),
    parallel: Flags.integer({ description: "with no VM: bring up to N project VMs up at once", min: 1, max: 16 })
  }

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Up)
    const wait = flags.wait ?? (this.json || process.stdout.isTTY !== true)
    const common = {
      wait,
      ...(flags.timeout ? { timeout_seconds: flags.timeout } : {}),
      ...(flags.yes ? { force: true } : {}),
      apply: !flags["no-apply"]
    }
    if (args.vm === undefined) {
      return this.runProject(
        projectUp,
        { ...common, ...(flags.parallel ? { parallel: flags.parallel } : {}) },
        wait ? "running; ssh is up" : "running",
        { showProgress: !flags.quiet }
      )
    }
    if (flags.parallel)
      return this.failWith({
        code: "usage",
        message: "--parallel is for the project fan-out (stoat up with no VM name)"
      })
    await this.show(startVm, { vm: args.vm, ...common }, (vm) => this.line(renderUp(vm, wait)), {
      showProgress: !flags.quiet
    })
  }
}
