import type { Guest, RecipeDetail, Vm, VmStatus } from "@stoat/wire"
import { advise, startIt, type Hint, type HintWords } from "../errors.js"
import type { DataRootPaths } from "../platform/data-root.js"
import { effectiveAccess, sshUserOf } from "./config.js"
import type { VmRecord } from "./store.js"

export interface VmLive {
  readonly running: boolean
  readonly graphical: boolean
  /** Stopped without a shutdown: the provider found what its last run left (see RunState.leftovers). */
  readonly crashed?: boolean
  /** Its state could not be learned (the provider's host did not answer): why, and what to do. */
  readonly unreachable?: { readonly message: string; readonly hint?: Hint | undefined }
}

const SHARED_MOUNT = "/mnt/work"

/** Why a VM's QEMU ended without a shutdown, and the ways back in the frontend's words; a stopped VM carries it as its `error`. */
const crashedReason = (name: string, words: HintWords): string =>
  `QEMU ended without a shutdown (killed or crashed); ${words(startIt(name))} again; ${words(advise("or remove what it left", { operation: "host.prune", input: { apply: true } }))}`

/**
 * The wire view of a broken VM: everything unknown except its name, reason and reserved port. One
 * whose QEMU still runs says so, since only `down` reaches it (rm refuses a running VM).
 */
const brokenVm = (
  record: Extract<VmRecord, { kind: "broken" }>,
  root: DataRootPaths,
  running: boolean,
  words: HintWords
): Vm => ({
  name: record.name,
  os: "",
  mode: "",
  backend: "",
  state: "broken",
  cpus: 0,
  ram_mb: 0,
  disk: "",
  share: "",
  recipes: [],
  ssh_port: record.sshport ?? 0,
  ssh_user: "",
  installed: false,
  forwards: [],
  allow_exec: false,
  agent_access: "none",
  display: "",
  error: running
    ? `${record.reason}; its QEMU still runs: ${words(advise("stop it", { operation: "vm.stop", input: { vm: record.name } }))}, then fix vm.toml or ${words(advise("delete it", { operation: "vm.destroy", input: { vm: record.name } }))}`
    : record.reason,
  project: "",
  key: "",
  project_missing: false,
  shared_dir: root.sharedDir(record.name),
  shared_mount: SHARED_MOUNT
})

/** A message followed by its hint in the caller's words. */
export const withHint = (message: string, hint: Hint | undefined, words: HintWords) =>
  hint === undefined ? message : `${message}; ${words(hint)}`

/** Why a VM whose `os` names no loaded guest is broken (the original's rule). */
export const unknownGuestReason = (os: string): string => `vm.toml: os: unknown guest "${os}"`

/**
 * Maps a VM record to the contract's VM. A VM whose `os` names no loaded guest is broken.
 * Host-only secrets and paths (console password, iso, base, VNC socket) never appear; advice is
 * in the frontend's `words`.
 */
export const toVm = (
  record: VmRecord,
  live: VmLive,
  guests: ReadonlyMap<string, Guest>,
  root: DataRootPaths,
  words: HintWords
): Vm => {
  if (record.kind === "broken") return brokenVm(record, root, live.running, words)
  const config = record.config
  if (config.os !== "" && !guests.has(config.os)) {
    return brokenVm(
      {
        kind: "broken",
        name: record.name,
        dir: record.dir,
        reason: unknownGuestReason(config.os),
        sshport: config.sshport
      },
      root,
      live.running,
      words
    )
  }
  const access = effectiveAccess(config)
  const wantsWindow = config.display === "window" || config.display === "auto" || config.display === ""
  return {
    name: record.name,
    os: config.os,
    mode: config.mode,
    backend: config.backend,
    // A VM whose host does not answer may run or not: broken, saying why, never stopped.
    state: live.unreachable !== undefined ? "broken" : live.running ? "running" : "stopped",
    cpus: config.cpus,
    ram_mb: config.ram,
    disk: config.mode === "live" ? "" : config.disk,
    share: config.share,
    recipes: config.recipes,
    ssh_port: config.sshport,
    ssh_user: sshUserOf(config),
    installed: config.installed,
    forwards: config.forwards.map((forward) => ({ host_port: forward.hostport, guest_port: forward.guestport })),
    allow_exec: config.agent_access !== undefined ? access === "exec" : (config.allow_exec ?? true),
    agent_access: access,
    display: wantsWindow && live.graphical ? "window" : "vnc",
    ...(live.unreachable !== undefined
      ? { error: withHint(live.unreachable.message, live.unreachable.hint, words) }
      : !live.running && live.crashed === true
        ? { error: crashedReason(record.name, words) }
        : {}),
    project: config.project,
    key: config.key,
    project_missing: false,
    // Only VMs of another provider name it, so a QEMU VM's record stays as it was.
    ...(config.provider !== "" && config.provider !== "qemu"
      ? { provider: config.provider, ...(config.host !== undefined && config.host !== "" ? { host: config.host } : {}) }
      : {}),
    shared_dir: root.sharedDir(record.name),
    shared_mount: SHARED_MOUNT
  }
}

/**
 * Failed if a recipe failed or the VM stopped without a shutdown (a stopped VM's only `error`);
 * ok only when every configured recipe is applied and ok.
 */
export const aggregateHealth = (record: VmRecord, vm?: Vm): string => {
  if (record.kind === "broken") return "unknown"
  if (vm?.state === "stopped" && vm.error !== undefined) return "failed"
  const config = record.config
  if (config.recipes.length === 0) return "ok"
  const states = config.recipes.map((name) => config.applied[name]?.health ?? "unknown")
  if (states.includes("failed")) return "failed"
  // A VM is not healthy while a configured recipe is unapplied.
  return states.every((state) => state === "ok") ? "ok" : "unknown"
}

export const toVmStatus = (record: VmRecord, vm: Vm, setSecrets: SetSecrets = {}): VmStatus => ({
  ...vm,
  health: aggregateHealth(record, vm),
  recipes_detail: recipeDetails(record, setSecrets)
})

/** Recipe → names of its secrets that are set (never their values). */
export type SetSecrets = Readonly<Record<string, ReadonlyArray<string>>>

/** Each configured recipe with its applied state, health, params (set secrets as `<set>`) and outputs. */
export const recipeDetails = (record: VmRecord, setSecrets: SetSecrets = {}): RecipeDetail[] =>
  record.kind === "broken"
    ? []
    : record.config.recipes.map((name) => {
        const applied = record.config.applied[name]
        return {
          name,
          applied: applied !== undefined,
          version: applied?.version ?? "",
          at: applied?.at ?? "",
          health: applied?.health ?? "unknown",
          params: {
            ...(record.config.params[name] ?? {}),
            ...Object.fromEntries((setSecrets[name] ?? []).map((secret) => [secret, "<set>"]))
          },
          outputs: { ...(applied?.outputs ?? {}) }
        }
      })
