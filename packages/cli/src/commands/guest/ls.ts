import { listGuests } from "@stoat/core"
import { StoatCommand } from "../../base.js"
import { table } from "../../render.js"

export default class GuestLs extends StoatCommand {
  static override summary = "List guest definitions"
  static override description = "List bundled and user guest definitions ($STOAT_HOME/guests/*.toml)."
  static override aliases = ["guest list"]

  async run(): Promise<void> {
    await this.parse(GuestLs)
    const { guests } = await this.call(listGuests, {})
    this.emit({ guests }, () =>
      this.line(
        table(
          ["NAME", "INIT", "PKG", "BACKEND", "SOURCE"],
          guests.map((guest) => [
            guest.name,
            guest.init,
            guest.pkg.install[0] ?? "-",
            guest.default_backend,
            guest.source
          ])
        )
      )
    )
  }
}
