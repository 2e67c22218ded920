import { resolve } from "node:path"
import { Args, Flags } from "@oclif/core"
import { copyFrom, copyTo } from "@stoat/core"
import { VM_NAME } from "@stoat/core/names"
import { StoatCommand } from "../base.js"

/** `vm:path` → its parts; a single letter before the colon is a Windows drive, never a VM. */
const guestSide = (operand: string): { vm: string; path: string } | undefined => {
  const colon = operand.indexOf(":")
  const vm = operand.slice(0, colon)
  if (colon < 0 || vm.length === 1 || !VM_NAME.test(vm)) return undefined
  return { vm, path: operand.slice(colon + 1) }
}

export default class Cp extends StoatCommand {
  static override summary = "Copy a file between the host and a VM"
  static override description =
    "Copy one regular file to or from a running VM over SFTP. Exactly one side is <vm>:<path> (the guest path absolute); the other is a host path, relative to the current directory. Or name all four of --vm, --direction to|from, --local and --remote. At the CLI any host file you can read or write may be copied; agents (MCP copy_to/copy_from) are confined to the VM's shared folder."
  static override args = {
    src: Args.string({ description: "source: a host path or <vm>:<path>" }),
    dst: Args.string({ description: "destination: a host path or <vm>:<path>" })
  }
  static override flags = {
    vm: Flags.string({ description: "VM name (with --direction, --local and --remote)" }),
    direction: Flags.string({ options: ["to", "from"], description: "to: host → guest; from: guest → host" }),
    local: Flags.string({ description: "host path" }),
    remote: Flags.string({ description: "absolute guest path" })
  }
  static override examples = [
    "stoat cp ./build.tar.gz dev:/tmp/build.tar.gz",
    "stoat cp dev:/var/log/app.log ./app.log",
    "stoat cp --vm dev --direction from --remote /etc/os-release --local ./os-release"
  ]

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Cp)
    const named = [flags.vm, flags.direction, flags.local, flags.remote].filter((value) => value !== undefined).length
    let request: { vm: string; toGuest: boolean; local: string; remote: string }
    if (named > 0) {
      if (named < 4 || args.src !== undefined)
        return this.failWith({
          code: "usage",
          message: "--vm, --direction, --local and --remote go together, without operands"
        })
      request = { vm: flags.vm!, toGuest: flags.direction === "to", local: flags.local!, remote: flags.remote! }
    } else {
      if (args.src === undefined || args.dst === undefined)
        return this.failWith({ code: "usage", message: "usage: stoat cp <src> <dst> (one of them <vm>:<path>)" })
      const from = guestSide(args.src)
      const to = guestSide(args.dst)
      if ((from === undefined) === (to === undefined))
        return this.failWith({ code: "usage", message: "exactly one of <src> and <dst> must be <vm>:<path>" })
      request = to
        ? { vm: to.vm, toGuest: true, local: args.src, remote: to.path }
        : { vm: from!.vm, toGuest: false, local: args.dst, remote: from!.path }
    }
    const input = { vm: request.vm, local: resolve(request.local), remote: request.remote, unconfined: true }
    await this.show(request.toGuest ? copyTo : copyFrom, input, (copied) =>
      this.line(
        copied.to_remote
          ? `copied ${copied.local} to ${copied.vm}:${copied.remote}`
          : `copied ${copied.vm}:${copied.remote} to ${copied.local}`
      )
    )
  }
}
