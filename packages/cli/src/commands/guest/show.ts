import { Args } from "@oclif/core"
import { guestInfo } from "@stoat/core"
import { StoatCommand } from "../../base.js"

export default class GuestShow extends StoatCommand {
  static override summary = "Show a guest definition"
  static override description = "Show a guest's init system, package manager and service templates."
  static override args = { name: Args.string({ description: "guest name", required: true }) }

  async run(): Promise<void> {
    const { args } = await this.parse(GuestShow)
    await this.show(guestInfo, { name: args.name }, (guest) => {
      const lines: Array<[string, string]> = [
        ["name", guest.name],
        ["source", guest.source],
        ["init", guest.init],
        ["shell", guest.shell],
        ["default backend", guest.default_backend],
        ["default ssh user", guest.default_ssh_user],
        ["escalate", guest.escalate.join(" ")],
        ["capabilities", guest.capabilities.join(", ")],
        ["aliases", guest.aliases.join(", ")],
        ["pkg setup", guest.pkg.setup],
        ["pkg install", guest.pkg.install.join(" ")],
        ["svc enable", guest.svc.enable],
        ["svc start", guest.svc.start],
        ["svc status", guest.svc.status]
      ]
      for (const [key, value] of lines) this.line(`${key}: ${value}`)
    })
  }
}
