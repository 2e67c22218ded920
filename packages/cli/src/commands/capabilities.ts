import { Args } from "@oclif/core"
import { capabilities } from "@stoat/core"
import { StoatCommand } from "../base.js"
import { table } from "../render.js"

export default class Capabilities extends StoatCommand {
  static override summary = "Report what this host and build can do"
  static override description =
    "Report capabilities, limits and unavailable features for the host, or for one VM's stored metadata. Never starts or connects to a VM."
  static override args = { vm: Args.string({ description: "VM name" }) }

  async run(): Promise<void> {
    const { args } = await this.parse(Capabilities)
    const report = await this.call(capabilities, args.vm === undefined ? {} : { vm: args.vm })
    this.emit(report, () => {
      const rows = [...report.profiles, ...report.capabilities, ...report.unavailable].map((entry) => [
        entry.name,
        entry.status,
        entry.scope,
        [...entry.limits.map((limit) => limit.code), ...(entry.reason ? [entry.reason.code] : [])].join(", ")
      ])
      this.line(table(["NAME", "STATUS", "SCOPE", "NOTES"], rows))
    })
  }
}
