import { spawn } from "node:child_process"
import { constants } from "node:os"
import { Args } from "@oclif/core"
import { sshCommand } from "@stoat/core"
import { StoatCommand } from "../base.js"
import { cliState } from "../state.js"

export default class Ssh extends StoatCommand {
  static override summary = "Open a shell in a VM, or run a command there"
  static override description =
    "Run the system ssh client into a running VM: an interactive shell, or with words after the VM name a remote command (ssh joins the words and the guest's shell parses them). Exits with ssh's status. There is no --json form; stoat ssh-command prints the command line instead."
  static override args = { vm: Args.string({ description: "VM name", required: true }) }
  static override examples = ["stoat ssh dev", "stoat ssh dev uname -a", "stoat ssh dev -- 'cd /srv && ls -la'"]

  async run(): Promise<void> {
    const { args } = await this.parse(Ssh)
    if (this.json)
      return this.failWith({
        code: "usage",
        message: "ssh has no --json form; use stoat ssh-command --json for the command line"
      })
    const { argv } = await this.call(sshCommand, { vm: args.vm, interactive: true })
    const [program, ...options] = argv
    const child = spawn(program!, [...options, ...(cliState.guest ?? [])], { stdio: "inherit" })
    // The terminal's Ctrl-C belongs to the remote session: ssh handles it, stoat must not die first.
    const ignore = () => undefined
    process.on("SIGINT", ignore)
    const code = await new Promise<number>((resolveCode) => {
      child.on("error", (error) => {
        process.stderr.write(`stoat: ssh: cannot run ${program}: ${error.message} (install openssh-client)\n`)
        resolveCode(1)
      })
      child.on("exit", (status, signal) =>
        resolveCode(status ?? 128 + ((signal ? constants.signals[signal] : undefined) ?? 0))
      )
    })
    process.off("SIGINT", ignore)
    this.exit(code)
  }
}
