import { Args } from "@oclif/core"
import { sshCommand } from "@stoat/core"
import { StoatCommand } from "../base.js"
import { shellWord } from "@stoat/core/ssh"

export default class SshCommand extends StoatCommand {
  static override summary = "Print the ssh command line for a VM"
  static override description =
    "Print the system ssh command that reaches the VM: loopback, its port, stoat's key, no host-key checks (the VM's keys are fresh), BatchMode for scripts. --json gives it as an argv array."
  static override args = { vm: Args.string({ description: "VM name", required: true }) }
  static override examples = [
    "stoat ssh-command dev",
    "$(stoat ssh-command dev) uname -a",
    "stoat ssh-command --json dev"
  ]

  async run(): Promise<void> {
    const { args } = await this.parse(SshCommand)
    const command = await this.call(sshCommand, { vm: args.vm })
    this.emit(command, () => this.line(command.argv.map(shellWord).join(" ")))
  }
}
