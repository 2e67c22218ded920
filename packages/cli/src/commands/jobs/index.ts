import { UsageCommand } from "../../usage.js"

/** `stoat jobs` alone: the topic's help, so that with --json it too ends in one result. */
export default class JobsTopic extends UsageCommand {
  static override summary = "Run and follow background jobs in a VM"
  static override hidden = true
  static override examples = [
    "stoat jobs start dev -- make test",
    "stoat jobs ls dev",
    "stoat jobs wait dev j-0123abcd"
  ]

  async run(): Promise<void> {
    await this.parse(JobsTopic)
    await this.explain(["jobs"])
  }
}
