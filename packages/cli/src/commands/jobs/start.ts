import { Args, Flags } from "@oclif/core"
import { execBackground } from "@stoat/core"
import { StoatCommand } from "../../base.js"
import { cliState } from "../../state.js"

export default class JobsStart extends StoatCommand {
  static override summary = "Start a command in the background of a VM"
  static override description =
    "Start a command in a running VM and return at once with its job id; the job keeps running after stoat exits, its output kept on the guest under /run/stoat/jobs/<id>/. Every word after the VM name, flags included, is the command's argv (a leading -- is dropped); stoat's own flags (--cwd, --env, --json) go before the VM name."
  static override args = { vm: Args.string({ description: "VM name", required: true }) }
  static override flags = {
    cwd: Flags.string({ description: "absolute guest directory to run in" }),
    // Non-greedy: the word after the value is the VM name, not a second value.
    env: Flags.string({
      description: "NAME=value for the job's environment (repeatable)",
      multiple: true,
      multipleNonGreedy: true
    })
  }
  static override examples = [
    "stoat jobs start dev -- make -j4 test",
    "stoat jobs start --cwd /srv/app --env PORT=8080 dev ./server --verbose",
    "stoat jobs start --json dev sleep 600"
  ]

  async run(): Promise<void> {
    const { args, flags } = await this.parse(JobsStart)
    // main takes the guest command out of argv before oclif could mistake its flags for stoat's.
    const argv = cliState.guest ?? []
    if (argv.length === 0)
      return this.failWith({ code: "usage", message: "missing command: stoat jobs start <vm> <cmd...>" })
    const env: Record<string, string> = {}
    for (const pair of flags.env ?? []) {
      const at = pair.indexOf("=")
      if (at <= 0) return this.failWith({ code: "usage", message: `--env ${pair}: expected NAME=value` })
      env[pair.slice(0, at)] = pair.slice(at + 1)
    }
    const started = await this.call(execBackground, {
      vm: args.vm,
      argv,
      ...(flags.cwd !== undefined ? { cwd: flags.cwd } : {}),
      ...(flags.env !== undefined ? { env } : {})
    })
    this.emit(started, () => {
      this.line(started.job_id)
      process.stderr.write(`follow it with: stoat jobs wait ${args.vm} ${started.job_id}\n`)
    })
  }
}
