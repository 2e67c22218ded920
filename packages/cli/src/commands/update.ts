import { Args, Flags } from "@oclif/core"
import { cliDataOf, updateVm } from "@stoat/core"
import { StoatCommand } from "../base.js"
import { inputOf, paramTable, recipeNames, recipesFlag, schemaFlags, secretEnvName } from "../flags.js"

const field = schemaFlags(updateVm.input)

export default class Update extends StoatCommand {
  static override summary = "Change a VM's settings"
  static override description =
    "Change only the settings given. On a running VM, boot-time settings (ram, cpus, ssh port, display, share) take effect at the next start. Disks only grow, and only while stopped."
  static override args = { vm: Args.string({ description: "VM name", required: true }) }
  static override flags = {
    ram: field.integer("ram_mb", "RAM in MiB"),
    cpus: field.integer("cpus", "vCPUs"),
    "ssh-port": field.integer("ssh_port", "host port forwarded to the guest's sshd"),
    disk: field.string("disk"),
    share: field.string("share", 'host folder shared read-only ("" clears)'),
    recipes: recipesFlag('replace the recipe list (comma-separated or repeated; "" clears)'),
    "agent-access": field.string("agent_access", "what MCP agents may do in the guest"),
    display: field.string("display", "display preference"),
    installed: field.boolean("installed", "mark the disk as installed", { allowNo: true }),
    set: Flags.string({
      description: "recipe param: recipe.param=value (repeatable)",
      multiple: true,
      multipleNonGreedy: true
    }),
    secret: Flags.string({
      description: "recipe secret recipe.param, read from $STOAT_SECRET_<RECIPE>_<PARAM> (repeatable)",
      multiple: true,
      multipleNonGreedy: true
    })
  }

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Update)
    const input = {
      vm: args.vm,
      ...inputOf(Update.flags, flags),
      ...(flags.recipes !== undefined ? { recipes: recipeNames(flags.recipes) } : {})
    }
    if (flags.set) {
      const params = paramTable(flags.set)
      if ("bad" in params)
        return this.failWith({
          code: "usage",
          message: `--set ${JSON.stringify(params.bad)}: expected recipe.param=value`
        })
      Object.assign(input, { params })
    }
    if (flags.secret) {
      const secrets: Record<string, Record<string, string>> = {}
      for (const name of flags.secret) {
        const match = /^([a-z0-9][a-z0-9-]*)\.([a-z][a-z0-9_]*)$/.exec(name)
        if (!match)
          return this.failWith({ code: "usage", message: `--secret ${JSON.stringify(name)}: expected recipe.param` })
        const variable = secretEnvName(match[1]!, match[2]!)
        const value = process.env[variable]
        if (value === undefined || value === "")
          return this.failWith({
            code: "usage",
            message: `--secret ${name}: set $${variable} to the value (it is never read from the command line)`
          })
        ;(secrets[match[1]!] ??= {})[match[2]!] = value
      }
      Object.assign(input, { secrets })
    }
    if (Object.keys(input).length === 1)
      return this.failWith({
        code: "usage",
        message: "nothing to change: give at least one flag (see stoat update --help)"
      })
    const result = await this.call(updateVm, input)
    this.emit(cliDataOf(updateVm, result, input), () => {
      this.line(
        result.changed.length === 0
          ? `${result.vm.name}: nothing changed`
          : `updated ${result.vm.name}: ${result.changed.join(", ")}`
      )
      if (result.pending_restart.length > 0)
        this.line(`takes effect at next start: ${result.pending_restart.join(", ")}`)
    })
  }
}
