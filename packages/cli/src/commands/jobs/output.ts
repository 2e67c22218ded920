import { Args, Flags } from "@oclif/core"
import { jobOutput } from "@stoat/core"
import { StoatCommand } from "../../base.js"

export default class JobsOutput extends StoatCommand {
  static override summary = "Print a background job's output"
  static override description =
    "Print a job's stdout (or --stream stderr) from byte --offset, at most --max-bytes (0 = 1 MiB). Bytes are written as they are; --json gives the content (base64 when not UTF-8), the stream's size so far and whether more follows."
  static override args = {
    vm: Args.string({ description: "VM name", required: true }),
    job: Args.string({ description: "job id (j- and 8 hex digits)", required: true })
  }
  static override flags = {
    stream: Flags.string({ options: ["stdout", "stderr"], default: "stdout", description: "which output" }),
    offset: Flags.integer({ default: 0, description: "byte offset to start at" }),
    "max-bytes": Flags.integer({ default: 0, description: "most bytes to return (0 = 1 MiB)" })
  }
  static override examples = [
    "stoat jobs output dev j-0123abcd",
    "stoat jobs output --stream stderr --offset 4096 dev j-0123abcd"
  ]

  async run(): Promise<void> {
    const { args, flags } = await this.parse(JobsOutput)
    const read = await this.call(jobOutput, {
      vm: args.vm,
      job_id: args.job,
      stream: flags.stream,
      offset: flags.offset,
      max_bytes: flags["max-bytes"]
    })
    this.emit(read, () => {
      process.stdout.write(read.encoding === "base64" ? Buffer.from(read.content, "base64") : read.content)
      if (read.truncated)
        process.stderr.write(
          `(${read.size} bytes in all; continue with --offset ${flags.offset + Buffer.byteLength(read.content, read.encoding === "base64" ? "base64" : "utf8")})\n`
        )
    })
  }
}
