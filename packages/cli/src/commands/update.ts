import { Args, Flags } from "@oclif/core"
import { updateVm } from "@stoat/core"
import { StoatCommand } from "../base.js"
import { paramTable, recipeNames, recipesFlag, secretEnvName } from "../flags.js"

export default class Update extends StoatCommand {
  static override summary = "Change a VM's settings"
  static override description =
    "Change only the settings given. On a running VM, boot-time settings (ram, cpus, ssh port, display, share) take effect at the next start. Disks only grow, and only while stopped."
  static override args = { vm: Args.string({ description: "VM name", required: true }) }
  static override flags = {
    ram: Flags.integer({ description: "RAM in MiB", min: 256 }),
    cpus: Flags.integer({ description: "vCPUs", min: 1 }),
    "ssh-port": Flags.integer({ description: "host port forwarded to the guest's sshd", min: 1024, max: 65535 }),
    disk: Flags.string({ description: "new absolute disk size (grow only)" }),
    share: Flags.string({ description: "host folder shared read-only (\"\" clears)" }),
    recipes: recipesFlag("replace the recipe list (comma-separated or repeated; \"\" clears)"),
    "agent-access": Flags.string({ options: ["none", "observe", "manage", "exec"], description: "what MCP agents may do in the guest" }),
    display: Flags.string({ options: ["auto", "window", "vnc"], description: "display preference" }),
    installed: Flags.boolean({ allowNo: true, description: "mark the disk as installed" }),
    set: Flags.string({ description: "recipe param: recipe.param=value (repeatable)", multiple: true, multipleNonGreedy: true }),
    secret: Flags.string({ description: "recipe secret recipe.param, read from $STOAT_SECRET_<RECIPE>_<PARAM> (repeatable)", multiple: true, multipleNonGreedy: true })
  }

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Update)
    const input = {
      vm: args.vm,
      ...(flags.ram !== undefined ? { ram_mb: flags.ram } : {}),
      ...(flags.cpus !== undefined ? { cpus: flags.cpus } : {}),
      ...(flags["ssh-port"] !== undefined ? { ssh_port: flags["ssh-port"] } : {}),
      ...(flags.disk !== undefined ? { disk: flags.disk } : {}),
      ...(flags.share !== undefined ? { share: flags.share } : {}),
      ...(flags.recipes !== undefined ? { recipes: recipeNames(flags.recipes) } : {}),
      ...(flags["agent-access"] !== undefined ? { agent_access: flags["agent-access"] } : {}),
      ...(flags.display !== undefined ? { display: flags.display } : {}),
      ...(flags.installed !== undefined ? { installed: flags.installed } : {})
    }
    if (flags.set) {
      const params = paramTable(flags.set)
      if ("bad" in params) return this.failWith({ code: "usage", message: `--set ${JSON.stringify(params.bad)}: expected recipe.param=value` })
      Object.assign(input, { params })
    }
    if (flags.secret) {
      const secrets: Record<string, Record<string, string>> = {}
      for (const name of flags.secret) {
        const match = /^([a-z0-9][a-z0-9-]*)\.([a-z][a-z0-9_]*)$/.exec(name)
        if (!match) return this.failWith({ code: "usage", message: `--secret ${JSON.stringify(name)}: expected recipe.param` })
        const variable = secretEnvName(match[1]!, match[2]!)
        const value = process.env[variable]
        if (value === undefined || value === "") return this.failWith({ code: "usage", message: `--secret ${name}: set $${variable} to the value (it is never read from the command line)` })
        ;(secrets[match[1]!] ??= {})[match[2]!] = value
      }
      Object.assign(input, { secrets })
    }
    if (Object.keys(input).length === 1) return this.failWith({ code: "usage", message: "nothing to change: give at least one flag (see stoat update --help)" })
    const result = await this.call(updateVm, input)
    this.emit(result, () => {
      this.line(result.changed.length === 0 ? `${result.vm.name}: nothing changed` : `updated ${result.vm.name}: ${result.changed.join(", ")}`)
      if (result.pending_restart.length > 0) this.line(`takes effect at next start: ${result.pending_restart.join(", ")}`)
    })
  }
}
