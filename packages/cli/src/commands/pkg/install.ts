import { Args } from "@oclif/core"
import { pkgInstallOp } from "@stoat/core"
import { GuestCommand } from "../../guest-output.js"

export default class PkgInstall extends GuestCommand {
  static override summary = "Install packages in a VM"
  static override description =
    "Install packages in a running VM with its guest definition's package manager (e.g. apt-get update, then apt-get install -y), as root. Prints the package manager's output; exits 1 when it fails."
  static override strict = false
  static override args = {
    vm: Args.string({ description: "VM name", required: true }),
    packages: Args.string({ description: "package names", required: true })
  }
  static override examples = ["stoat pkg install dev curl", "stoat pkg install dev nginx postgresql"]

  async run(): Promise<void> {
    const { args, argv } = await this.parse(PkgInstall)
    const packages = (argv as string[]).slice(1)
    const result = await this.call(pkgInstallOp, { vm: args.vm, packages })
    this.emitCommandResult(result)
  }
}
