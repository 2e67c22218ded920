import { Args, Flags } from "@oclif/core"
import { jobWait } from "@stoat/core"
import { StoatCommand } from "../../base.js"
import { describeJob } from "../../views/jobs.js"

export default class JobsWait extends StoatCommand {
  static override summary = "Wait for a background job to finish"
  static override description =
    "Wait until the job exits or --timeout seconds pass (default 60, at most 600), then print its state and the last 4 KiB of its stdout and stderr. A job still running at the timeout is reported as running, not as an error."
  static override args = {
    vm: Args.string({ description: "VM name", required: true }),
    job: Args.string({ description: "job id (j- and 8 hex digits)", required: true })
  }
  static override flags = { timeout: Flags.integer({ description: "seconds to wait (1-600)", default: 60 }) }
  static override examples = ["stoat jobs wait dev j-0123abcd", "stoat jobs wait --timeout 600 --json dev j-0123abcd"]

  async run(): Promise<void> {
    const { args, flags } = await this.parse(JobsWait)
    const waited = await this.call(jobWait, { vm: args.vm, job_id: args.job, timeout_seconds: flags.timeout })
    this.emit(waited, () => {
      process.stdout.write(waited.stdout_tail)
      process.stderr.write(waited.stderr_tail)
      process.stderr.write(`${describeJob(waited)}\n`)
    })
  }
}
