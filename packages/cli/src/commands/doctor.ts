import { doctor } from "@stoat/core"
import { StoatCommand } from "../base.js"
import { inputOf, schemaFlags } from "../flags.js"

const field = schemaFlags(doctor.input)

export default class Doctor extends StoatCommand {
  static override summary = "Check host prerequisites"
  static override description =
    "Check that QEMU, qemu-img and ssh are installed and whether KVM really works (a short probe boot). With --host URI, check a libvirt host instead: virsh here, the connection, KVM or TCG there, the pinned QEMU machine type and CPU model, and for qemu+ssh:// hosts that guest SSH goes through the host (ssh -W, with your ~/.ssh/config). Exits 1 when a required check fails; with --json it always exits 0 and reports healthy."
  static override examples = ["stoat doctor", "stoat doctor --host qemu+ssh://root@buildbox/system"]
  static override flags = {
    host: field.string("host", "check this libvirt host (e.g. qemu+ssh://root@buildbox/system) instead of this machine")
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(Doctor)
    const report = await this.call(doctor, inputOf(Doctor.flags, flags))
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
