import { Args, Flags } from "@oclif/core"
import { jobKill } from "@stoat/core"
import { StoatCommand } from "../../base.js"
import { describeJob } from "../../views/jobs.js"

export default class JobsKill extends StoatCommand {
  static override summary = "Signal a background job"
  static override description =
    "Send a signal (default TERM) to a running job and its process group. A job that is not running is not signalled; its state is printed either way."
  static override args = {
    vm: Args.string({ description: "VM name", required: true }),
    job: Args.string({ description: "job id (j- and 8 hex digits)", required: true })
  }
  static override flags = {
    signal: Flags.string({ default: "TERM", description: "signal name without SIG: TERM, KILL, INT, HUP, USR1 …" })
  }
  static override examples = ["stoat jobs kill dev j-0123abcd", "stoat jobs kill --signal KILL dev j-0123abcd"]

  async run(): Promise<void> {
    const { args, flags } = await this.parse(JobsKill)
    const killed = await this.call(jobKill, { vm: args.vm, job_id: args.job, signal: flags.signal })
    this.emit(killed, () =>
      this.line(
        `${describeJob(killed)}${killed.signaled ? ` (sent ${flags.signal})` : " (not running: no signal sent)"}`
      )
    )
  }
}
