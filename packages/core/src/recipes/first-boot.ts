/**
 * First-boot delivery for cloud VMs (reference §7): the recipes a new VM would run are written
 * into the NoCloud seed and run by cloud-init, each followed by a marker; the first apply over
 * ssh then records them from the markers instead of running them again. Secrets travel in a
 * per-recipe 0600 file under /run (RAM), which the runner deletes.
 */
import { Effect } from "effect"
import { yamlString } from "../cloudinit/seed.js"
import { quoteWord } from "../ssh/quote.js"
import { GuestTransport, type SshTarget } from "../ports/guest-transport.js"
import type { OkRecord } from "../vm/records.js"
import { planApply, recipeScript, type PlannedStep } from "./steps.js"

export const MARKER_DIR = "/var/lib/stoat/.applied"
const SCRIPT_DIR = "/var/lib/stoat/recipes"

const secretsFile = (name: string) => `/run/stoat/secrets-${name}.env`

/** The steps cloud-init can run: those apply would run, sh only (python3 waits for the ssh path). */
const firstBootSteps = (steps: ReadonlyArray<PlannedStep>) => {
  const chosen: PlannedStep[] = []
  for (const step of steps) {
    // A recipe after one that cannot go first-boot waits too: dependency order holds.
    if (step.decision.action !== "run" || step.recipe.manifest.runtime !== "sh") break
    chosen.push(step)
  }
  return chosen
}

const fileEntry = (path: string, permissions: string, content: string) =>
  `  - path: ${yamlString(path)}\n    permissions: ${yamlString(permissions)}\n    content: ${yamlString(content)}\n`

/** The `#cloud-config` document that runs the VM's recipes at first boot, or undefined when none can. */
export const firstBootUserData = (record: OkRecord) =>
  Effect.gen(function* () {
    if (record.config.mode !== "cloud" || record.config.recipes.length === 0) return undefined
    const { guest, steps } = yield* planApply(record.name, undefined)
    const chosen = firstBootSteps(steps)
    if (chosen.length === 0) return undefined
    const files: string[] = []
    const commands: string[] = [`mkdir -p ${MARKER_DIR}`]
    for (const step of chosen) {
      const name = step.recipe.manifest.name
      const secretNames = step.params.secretNames.map((param) => `STOAT_PARAM_${param.toUpperCase()}`)
      const plainEnv = Object.fromEntries(Object.entries(step.params.env).filter(([key]) => !secretNames.includes(key)))
      const script = recipeScript(
        guest,
        { ...step, params: { ...step.params, env: plainEnv } },
        `${MARKER_DIR}/${name}.out`
      )
      const secrets = secretNames.map((key) => `export ${key}=${quoteWord(step.params.env[key]!)}\n`).join("")
      files.push(
        fileEntry(
          `${SCRIPT_DIR}/${name}.sh`,
          "0700",
          `[ -f ${secretsFile(name)} ] && . ${secretsFile(name)}\n${script}`
        )
      )
      if (secrets !== "") files.push(fileEntry(secretsFile(name), "0600", secrets))
      commands.push(
        `sh ${SCRIPT_DIR}/${name}.sh > /var/log/stoat-recipe-${name}.log 2>&1 && printf '%s\\n%s\\n' ${step.hash} ${step.scriptHash} > ${MARKER_DIR}/${name} || { rm -f /run/stoat/secrets-*.env; exit 1; }`
      )
    }
    commands.push("rm -f /run/stoat/secrets-*.env")
    return `#cloud-config\nwrite_files:\n${files.join("")}runcmd:\n  - [ "sh", "-c", ${yamlString(commands.join("\n"))} ]\n`
  })

export interface FirstBootResult {
  readonly name: string
  readonly hash: string
  readonly scriptHash: string
  readonly outputs: string
}

/** Reads the markers cloud-init left for these recipes (none: the recipe did not run at first boot). */
export const readFirstBootMarkers = (
  target: SshTarget,
  names: ReadonlyArray<string>,
  asRoot: (argv: ReadonlyArray<string>) => ReadonlyArray<string>
) =>
  Effect.gen(function* () {
    const transport = yield* GuestTransport
    const found: FirstBootResult[] = []
    for (const name of names) {
      const marker = yield* transport.exec(
        target,
        asRoot([
          "sh",
          "-c",
          'cat "$1" 2>/dev/null && echo --- && cat "$1.out" 2>/dev/null; true',
          "stoat_marker",
          `${MARKER_DIR}/${name}`
        ]),
        {
          timeoutMs: 30_000
        }
      )
      const text = Buffer.from(marker.stdout).toString("utf8")
      const [head, ...rest] = text.split("\n---\n")
      const [hash, scriptHash] = (head ?? "").trim().split("\n")
      if (hash && scriptHash && /^[0-9a-f]{64}$/.test(hash) && /^[0-9a-f]{64}$/.test(scriptHash))
        found.push({ name, hash, scriptHash, outputs: rest.join("\n---\n") })
    }
    return found
  })
