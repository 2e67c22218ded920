import { Args } from "@oclif/core"
import { jobStatus } from "@stoat/core"
import { StoatCommand } from "../../base.js"
import { describeJob } from "../../views/jobs.js"

export default class JobsStatus extends StoatCommand {
  static override summary = "Show a background job's state"
  static override description =
    "starting until the guest records the job's pid, then running, then exited with its exit code; unknown once the guest restarted (which clears the job files)."
  static override args = {
    vm: Args.string({ description: "VM name", required: true }),
    job: Args.string({ description: "job id (j- and 8 hex digits)", required: true })
  }
  static override examples = ["stoat jobs status dev j-0123abcd"]

  async run(): Promise<void> {
    const { args } = await this.parse(JobsStatus)
    const status = await this.call(jobStatus, { vm: args.vm, job_id: args.job })
    this.emit(status, () => this.line(describeJob(status)))
  }
}
