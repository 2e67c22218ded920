import { Args } from "@oclif/core"
import { execInGuest } from "@stoat/core"
import { StoatCommand } from "../base.js"
import { cliState } from "../state.js"

export default class Exec extends StoatCommand {
  static override summary = "Run a command in a VM"
  static override description =
    "Run a command in a running VM over SSH. Every word after the VM name, flags included, is the guest command's argv (a leading -- is dropped); stoat's own flags (--json, -q) go before the VM name. Exits with the guest command's status; with --json exits 0 when the command ran."
  static override args = { vm: Args.string({ description: "VM name", required: true }) }
  static override examples = ["stoat exec dev uname -a", "stoat exec dev ls -la /etc", "stoat exec --json dev -- cat /etc/os-release"]

  async run(): Promise<void> {
    const { args } = await this.parse(Exec)
    // main takes the guest command out of argv before oclif could mistake its flags for stoat's.
    const words = cliState.guest ?? []
    if (words.length === 0) return this.failWith({ code: "usage", message: "missing command: stoat exec <vm> <cmd...>" })
    const result = await this.call(execInGuest, { vm: args.vm, argv: words, timeout_seconds: 600 })
    const stdout = result.stdout ?? Buffer.from(result.stdout_base64 ?? "", "base64").toString("latin1")
    const stderr = result.stderr ?? Buffer.from(result.stderr_base64 ?? "", "base64").toString("latin1")
    this.emit({ vm: args.vm, exit_code: result.exit_code, stdout, stderr }, () => {
      process.stdout.write(stdout)
      process.stderr.write(stderr)
    })
    if (!this.json && result.exit_code !== 0) this.exit(result.exit_code)
  }
}
