import { Args } from "@oclif/core"
import { svcOp, svcStatusOp } from "@stoat/core"
import { GuestCommand } from "../guest-output.js"

const ACTIONS = ["status", "enable", "start", "stop", "restart"] as const

export default class Svc extends GuestCommand {
  static override summary = "Show, enable, start, stop or restart a service in a VM"
  static override description =
    "Runs the guest definition's service command (systemctl on systemd guests, rc-service/rc-update on OpenRC) for a service of a running VM; all but status run as root. status prints the service manager's report and whether the service is active and enabled. Exits 1 when the service command fails."
  static override args = {
    action: Args.string({ description: "what to do", required: true, options: [...ACTIONS] }),
    vm: Args.string({ description: "VM name", required: true }),
    name: Args.string({ description: "service (unit) name", required: true })
  }
  static override examples = ["stoat svc status dev nginx", "stoat svc restart dev nginx", "stoat svc enable dev ssh"]

  async run(): Promise<void> {
    const { args } = await this.parse(Svc)
    const action = args.action as (typeof ACTIONS)[number]
    if (action === "status") {
      const status = await this.call(svcStatusOp, { vm: args.vm, name: args.name })
      this.emit(status, () => {
        process.stdout.write(status.stdout)
        process.stderr.write(status.stderr)
        this.line(
          `${args.name}: ${status.active ? "active" : "inactive"}, ${status.enabled ? "enabled" : "not enabled"}`
        )
      })
      return
    }
    const result = await this.call(svcOp, { vm: args.vm, name: args.name, action })
    this.emitCommandResult(result)
  }
}
