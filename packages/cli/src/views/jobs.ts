/** One line for a job's state: "j-0123abcd: exited 3", "j-0123abcd: running". */
export const describeJob = (job: {
  readonly job_id: string
  readonly state: string
  readonly exit_code?: number | undefined
}): string => `${job.job_id}: ${job.state}${job.exit_code !== undefined ? ` ${job.exit_code}` : ""}`
