import { Args } from "@oclif/core"
import { listJobs } from "@stoat/core"
import { StoatCommand } from "../../base.js"
import { table } from "../../render.js"

export default class JobsLs extends StoatCommand {
  static override summary = "List a VM's background jobs"
  static override description =
    "List the jobs started with stoat jobs start (or the exec_bg tool) on a VM, from stoat's registry: works on a stopped VM, whose jobs read unknown."
  static override aliases = ["jobs list"]
  static override args = { vm: Args.string({ description: "VM name", required: true }) }
  static override examples = ["stoat jobs ls dev", "stoat jobs ls --json dev"]

  async run(): Promise<void> {
    const { args } = await this.parse(JobsLs)
    const result = await this.call(listJobs, { vm: args.vm })
    this.emit(result, () => {
      if (result.jobs.length === 0) return this.line(`no jobs on ${args.vm}`)
      this.line(
        table(
          ["JOB", "STATE", "STARTED", "USER", "COMMAND"],
          result.jobs.map((job) => [job.job_id, job.state, job.started, job.user, job.argv.join(" ")])
        )
      )
    })
  }
}
