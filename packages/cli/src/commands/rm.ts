import { existsSync } from "node:fs"
import { join } from "node:path"
import { Args, Flags } from "@oclif/core"
import { cliDataOf, destroyVm, PROJECT_FILE, projectRm } from "@stoat/core"
import { StoatCommand } from "../base.js"

export default class Rm extends StoatCommand {
  static override summary = "Delete a VM, or this project's VMs"
  static override description =
    "Delete a stopped VM with its disk, snapshots, checkpoints and shared folder. Asks first, and again naming them when checkpoints or VMs forked or cloned from it depend on it (those get their own copy of its data); without a terminal (or with --json/-q) pass -y."
  static override aliases = ["delete", "destroy"]
  static override args = {
    vm: Args.string({ description: "VM name or project key; none: every VM ./stoat.toml declares" })
  }
  static override flags = {
    yes: Flags.boolean({ char: "y", description: "do not ask (dependents included)" }),
    force: Flags.boolean({
      description:
        "delete it even though its libvirt host does not answer (a host gone for good); what still runs there is left to that host"
    })
  }

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Rm)
    if (args.vm === undefined) {
      // Outside a project there is nothing to ask about: the VM's name is what is missing.
      if (!existsSync(join(process.cwd(), PROJECT_FILE)))
        return this.failWith({
          code: "usage",
          message: `name the VM to delete: stoat rm <vm> (there is no ${PROJECT_FILE} here, so no project whose VMs rm would delete)`
        })
      if (!flags.yes)
        await this.confirmOrExit("delete every VM of this project and their disks?", "stoat.toml", flags.quiet)
      return this.runProject(projectRm, { detach_dependents: true }, "deleted")
    }
    let detach = flags.yes
    if (!flags.yes) {
      await this.confirmOrExit(`delete VM "${args.vm}" and its disk?`, args.vm, flags.quiet)
      const input = { vm: args.vm, ...(flags.force ? { force: true } : {}) }
      const first = await this.attempt(destroyVm, input)
      if (first.ok) return this.report(first.value, input)
      if (first.error.code !== "confirmation_required") return this.failWith(first.error)
      process.stderr.write(`${first.error.message}\n`)
      await this.confirmOrExit(`delete "${args.vm}" anyway?`, args.vm, flags.quiet)
      detach = true
    }
    const input = { vm: args.vm, detach_dependents: detach, ...(flags.force ? { force: true } : {}) }
    this.report(await this.call(destroyVm, input), input)
  }

  private report(result: typeof destroyVm.output.Type, input: typeof destroyVm.input.Type): void {
    this.emit(cliDataOf(destroyVm, result, input), () => this.line(`deleted ${result.name}`))
  }
}
