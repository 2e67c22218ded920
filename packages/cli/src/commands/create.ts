import { existsSync } from "node:fs"
import { resolve } from "node:path"
import { Args, Flags } from "@oclif/core"
import { createVm } from "@stoat/core"
import { StoatCommand } from "../base.js"
import { inputOf, recipeNames, recipesFlag, schemaFlags } from "../flags.js"

const field = schemaFlags(createVm.input)

export default class Create extends StoatCommand {
  static override summary = "Create a VM"
  static override description =
    "Create a VM from a catalog image. `--image tiny` builds the tiny busybox guest from Debian packages on first use (no download) and boots to SSH in seconds. The VM is not started: run stoat up <name>."
  static override aliases = ["new"]
  static override examples = [
    "stoat create dev --image tiny",
    "stoat create box --image tiny --ram 512 --disk 2G --agent-access exec",
    "stoat create lv --image tiny --provider libvirt"
  ]
  static override args = { name: Args.string({ description: "new VM name", required: true }) }
  static override flags = {
    image: Flags.string({
      description: "catalog image id (see stoat images), or the path of your own image file",
      required: true
    }),
    os: field.string("os", "guest definition to use (default: from the image)"),
    backend: field.string("backend", "provisioning backend"),
    mode: field.string("mode", "live or disk, for images that offer both"),
    ram: field.integer("ram_mb"),
    cpus: field.integer("cpus"),
    disk: field.string("disk"),
    share: field.string("share"),
    "console-password": field.string("console_password"),
    recipes: recipesFlag("recipes to apply (comma-separated or repeated)"),
    "agent-access": field.string("agent_access"),
    "allow-exec": Flags.boolean({ hidden: true, allowNo: true, description: "legacy: true means agent-access exec" }),
    global: Flags.boolean({ description: "create a VM outside the project even though ./stoat.toml exists" }),
    provider: field.string("provider", "qemu (default) or libvirt"),
    host: field.string("host", "libvirt host URI, e.g. qemu+ssh://root@buildbox/system (with --provider libvirt)")
  }

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Create)
    const access =
      flags["agent-access"] ?? (flags["allow-exec"] === undefined ? undefined : flags["allow-exec"] ? "exec" : "manage")
    await this.show(
      createVm,
      {
        name: args.name,
        global: flags.global === true,
        // A path (anything with a slash, or an existing file) is your own image; otherwise a catalog id.
        ...(flags.image.includes("/") || existsSync(flags.image)
          ? { image_path: resolve(flags.image) }
          : { image: flags.image }),
        ...inputOf(Create.flags, flags),
        ...(flags.recipes ? { recipes: recipeNames(flags.recipes) } : {}),
        ...(access ? { agent_access: access } : {})
      },
      (vm) => {
        this.line(`created ${vm.name} (${vm.os}, ${vm.mode}, ssh port ${vm.ssh_port})`)
        if (!flags.quiet) this.line(`start it with: stoat up ${vm.name}`)
      },
      { interactive: !this.json && process.stdin.isTTY === true }
    )
  }
}
