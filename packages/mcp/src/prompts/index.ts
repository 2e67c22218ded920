/** Prompts sequence existing tools; they never do anything a tool call would not. */
export interface PromptArgument {
  readonly name: string
  readonly description: string
  readonly required: boolean
}

export interface PromptDefinition {
  readonly name: string
  readonly title: string
  readonly description: string
  readonly arguments: ReadonlyArray<PromptArgument>
  readonly render: (args: Readonly<Record<string, string | undefined>>) => string
}

export const PROMPTS: ReadonlyArray<PromptDefinition> = [
  {
    name: "stoat-first-vm",
    title: "Create and reach a first VM",
    description: "Create a VM from an image, start it, wait for SSH and run a first command.",
    arguments: [
      { name: "name", description: "Name of the new VM (default: first)", required: false },
      { name: "image", description: "Catalog image id (default: tiny)", required: false }
    ],
    render: (args) => {
      const name = args["name"] || "first"
      const image = args["image"] || "tiny"
      return [
        `Set up a Stoat VM named "${name}" from image "${image}" with these tools, in order:`,
        `1. list_images — check that "${image}" exists (tiny needs no download; other images must be downloaded by a person with stoat pull).`,
        `2. create {"name": "${name}", "image": "${image}", "agent_access": "exec"} — leave ram_mb, cpus and disk to their defaults unless asked.`,
        `3. start {"vm": "${name}"}.`,
        `4. wait {"vm": "${name}", "until": "reachable", "timeout_seconds": 120} — guest tools fail with cannot_reach before this.`,
        `5. exec {"vm": "${name}", "argv": ["uname", "-a"]} — and report the output.`,
        "If a step fails, read error.code from the result's _meta and stop; do not retry a refusal (access_denied, limit_reached) without asking the user."
      ].join("\n")
    }
  },
  {
    name: "stoat-debug-vm",
    title: "Find out why a VM misbehaves",
    description: "Inspect a VM's state, logs and reachability with read-only tools before changing anything.",
    arguments: [{ name: "vm", description: "The VM to debug", required: true }],
    render: (args) => {
      const vm = args["vm"] ?? ""
      return [
        `Diagnose the Stoat VM "${vm}" using these tools, changing nothing until the cause is clear:`,
        `1. vm_status {"vm": "${vm}"} — state, health and recipe state. A broken state names what is wrong in vm.toml.`,
        `2. logs {"vm": "${vm}", "which": "console", "n": 200} — the serial console: boot errors, kernel panics, sshd start.`,
        `3. logs {"vm": "${vm}", "which": "apply"} — the last recipe apply, when recipes are configured.`,
        "4. doctor — host prerequisites (QEMU, KVM or TCG).",
        `5. If it is running but unreachable: wait {"vm": "${vm}", "timeout_seconds": 60}.`,
        "Summarise the cause and propose a fix (for example stop and start, update ram_mb, or prune broken files); ask before destroy or restore."
      ].join("\n")
    }
  },
  {
    name: "stoat-project-up",
    title: "Bring up this project's VMs",
    description: "Start every VM the server's working-directory project declares and wait until each is reachable.",
    arguments: [],
    render: () =>
      [
        "Bring up the VMs of the project this Stoat server was started in (its stoat.toml):",
        "1. project_status — each declared VM's state (a missing one is created by project_up), health and drift.",
        '2. project_up {"wait": true} — reconciles and starts every VM in declaration order; the first failure stops the run and later VMs are skipped.',
        "3. Report each VM's status from the result; an immutable change (image, disk) needs a person to run stoat rm <key> and stoat up.",
        "Without a stoat.toml the project tools fail: ask a person to run stoat init in the project, or use start and wait on a named VM."
      ].join("\n")
  }
]
