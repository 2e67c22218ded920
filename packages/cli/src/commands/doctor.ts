import { doctor } from "@stoat/core"
import { StoatCommand } from "../base.js"

export default class Doctor extends StoatCommand {
  static override summary = "Check host prerequisites"
  static override description =
    "Check that QEMU, qemu-img and ssh are installed and whether KVM really works (a short probe boot). Exits 1 when a required check fails; with --json it always exits 0 and reports healthy."

  async run(): Promise<void> {
    const { flags } = await this.parse(Doctor)
    const report = await this.call(doctor, {})
    this.emit(report, () => {
      for (const check of report.checks) {
        if (check.ok && flags.quiet) continue
        const label = check.ok ? "ok:" : check.optional ? "WARN:" : "FAIL:"
        this.line(`${label} ${check.name}: ${check.detail}`)
        for (const fix of check.fix) this.line(`  try: ${fix}`)
      }
    })
    if (!this.json && !report.healthy) this.exit(1)
  }
}
