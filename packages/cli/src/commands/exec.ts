import { Args, Flags } from "@oclif/core"
import { execInGuest, streamBytes } from "@stoat/core"
import { StoatCommand } from "../base.js"
import { cliState } from "../state.js"

export default class Exec extends StoatCommand {
  static override summary = "Run a command in a VM"
  static override description =
    "Run a command in a running VM over SSH. Every word after the VM name, flags included, is the guest command's argv (a leading -- is dropped); stoat's own flags (--json, -q) go before the VM name. The guest's stdout and stderr are written as the bytes they are, at most 1 MiB of each (a note on stderr says when more was cut). Exits with the guest command's status; with --json exits 0 when the command ran, and a stream that is not UTF-8 comes as <stream>_base64. Stops the command after --timeout seconds (default and max 600; use a background job for longer work) and then exits with the status of the stopped command."
  static override args = { vm: Args.string({ description: "VM name", required: true }) }
  static override flags = {
    timeout: Flags.integer({
      description: "seconds before the command is stopped (max 600); goes before the VM name",
      default: 600,
      min: 1,
      max: 600
    })
  }
  static override examples = [
    "stoat exec --timeout 10 dev -- sh -c 'sleep 60'",
    "stoat exec dev uname -a",
    "stoat exec dev ls -la /etc",
    "stoat exec --json dev -- cat /etc/os-release",
    "stoat exec dev -- sh -c 'echo $HOME'"
  ]

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Exec)
    // main takes the guest command out of argv before oclif could mistake its flags for stoat's.
    const words = cliState.guest ?? []
    if (words.length === 0)
      return this.failWith({ code: "usage", message: "missing command: stoat exec <vm> <cmd...>" })
    const { exit_code } = await this.show(
      execInGuest,
      { vm: args.vm, argv: words, timeout_seconds: flags.timeout },
      (result) => {
        process.stdout.write(streamBytes(result, "stdout"))
        process.stderr.write(streamBytes(result, "stderr"))
        if (result.message !== undefined) process.stderr.write(`stoat: exec: ${result.message}\n`)
        if (result.truncated === true)
          process.stderr.write(
            `stoat: exec: output cut at 1 MiB per stream; for all of it run stoat ssh ${args.vm} -- <cmd>, or write it to a file in the guest and stoat cp it out\n`
          )
      }
    )
    if (!this.json && exit_code !== 0) this.exit(exit_code)
  }
}
