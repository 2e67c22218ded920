import { existsSync } from "node:fs"
import { resolve } from "node:path"
import { Args, Flags } from "@oclif/core"
import { createVm } from "@stoat/core"
import { StoatCommand } from "../base.js"
import { recipeNames, recipesFlag } from "../flags.js"

export default class Create extends StoatCommand {
  static override summary = "Create a VM"
  static override description =
    "Create a VM from a catalog image. `--image tiny` builds the tiny busybox guest from Debian packages on first use (no download) and boots to SSH in seconds. The VM is not started: run stoat up <name>."
  static override aliases = ["new"]
  static override examples = ["stoat create dev --image tiny", "stoat create box --image tiny --ram 512 --disk 2G --agent-access exec"]
  static override args = { name: Args.string({ description: "new VM name", required: true }) }
  static override flags = {
    image: Flags.string({ description: "catalog image id (see stoat images), or the path of your own image file", required: true }),
    os: Flags.string({ description: "guest definition to use (default: from the image)" }),
    backend: Flags.string({ description: "provisioning backend", options: ["apkovl", "cloudinit", "ssh", "direct"] }),
    mode: Flags.string({ description: "live or disk, for images that offer both", options: ["live", "disk"] }),
    ram: Flags.integer({ description: "RAM in MiB (default 4096; tiny: 256)", min: 256 }),
    cpus: Flags.integer({ description: "vCPUs (default 4; tiny: 1)", min: 1 }),
    disk: Flags.string({ description: "absolute disk size 64M..64T, e.g. 8G or 512M (tiny: 1G)" }),
    share: Flags.string({ description: "host folder shared read-only at /mnt/host" }),
    "console-password": Flags.string({ description: "console password, or random" }),
    recipes: recipesFlag("recipes to apply (comma-separated or repeated)"),
    "agent-access": Flags.string({ description: "what MCP agents may do in the guest", options: ["none", "observe", "manage", "exec"] }),
    "allow-exec": Flags.boolean({ hidden: true, allowNo: true, description: "legacy: true means agent-access exec" }),
    global: Flags.boolean({ description: "create a VM outside the project even though ./stoat.toml exists" })
  }

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Create)
    const access = flags["agent-access"] ?? (flags["allow-exec"] === undefined ? undefined : flags["allow-exec"] ? "exec" : "manage")
    const vm = await this.call(
      createVm,
      {
        name: args.name,
        global: flags.global === true,
        // A path (anything with a slash, or an existing file) is your own image; otherwise a catalog id.
        ...(flags.image.includes("/") || existsSync(flags.image) ? { image_path: resolve(flags.image) } : { image: flags.image }),
        ...(flags.os ? { os: flags.os } : {}),
        ...(flags.backend ? { backend: flags.backend } : {}),
        ...(flags.mode ? { mode: flags.mode } : {}),
        ...(flags.ram ? { ram_mb: flags.ram } : {}),
        ...(flags.cpus ? { cpus: flags.cpus } : {}),
        ...(flags.disk ? { disk: flags.disk } : {}),
        ...(flags.share ? { share: flags.share } : {}),
        ...(flags["console-password"] ? { console_password: flags["console-password"] } : {}),
        ...(flags.recipes ? { recipes: recipeNames(flags.recipes) } : {}),
        ...(access ? { agent_access: access } : {})
      },
      { interactive: !this.json && process.stdin.isTTY === true }
    )
    this.emit({ vm }, () => {
      this.line(`created ${vm.name} (${vm.os}, ${vm.mode}, ssh port ${vm.ssh_port})`)
      if (!flags.quiet) this.line(`start it with: stoat up ${vm.name}`)
    })
  }
}
