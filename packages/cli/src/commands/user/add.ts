import { Args } from "@oclif/core"
import { useraddOp } from "@stoat/core"
import { GuestCommand } from "../../guest-output.js"

export default class UserAdd extends GuestCommand {
  static override summary = "Add a user in a VM"
  static override description =
    "Add a user to a running VM with its guest definition's useradd command (e.g. useradd -m -s /bin/bash NAME), as root. Exits 1 when it fails (for example, the user exists)."
  static override args = {
    vm: Args.string({ description: "VM name", required: true }),
    name: Args.string({ description: "user name", required: true })
  }
  static override examples = ["stoat user add dev alice"]

  async run(): Promise<void> {
    const { args } = await this.parse(UserAdd)
    const result = await this.call(useraddOp, { vm: args.vm, name: args.name })
    this.emitCommandResult(result)
  }
}
