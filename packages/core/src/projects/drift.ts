import type { Drift as DriftSchema } from "@stoat/wire"
import { effectiveAccess, diskSizeBytes, type VmConfig } from "../vm/config.js"
import type { Declaration } from "./file.js"
import { advise, type Hint } from "../errors.js"

type Drift = typeof DriftSchema.Type

/** A declared setting the VM cannot take without being made again. */
export interface ImmutableChange {
  readonly field: "image" | "disk" | "provider" | "host"
  readonly from: string
  readonly to: string
}

export interface DriftReport {
  readonly drift: ReadonlyArray<Drift>
  readonly immutable: ReadonlyArray<ImmutableChange>
}

const list = (items: ReadonlyArray<string>) => items.join(",")

/**
 * How a VM differs from its declaration. Settings the declaration leaves out are whatever create
 * chose and never drift; boot-time ones (cpus, ram, shares) need a restart only on a running VM.
 */
export const driftOf = (declaration: Declaration, config: VmConfig, running: boolean): DriftReport => {
  const drift: Drift[] = []
  const add = (field: string, from: string, to: string, bootTime: boolean) => {
    if (from !== to) drift.push({ field, from, to, needs_restart: bootTime && running })
  }
  if (declaration.cpus !== undefined) add("cpus", String(config.cpus), String(declaration.cpus), true)
  if (declaration.ram !== undefined) add("ram", String(config.ram), String(declaration.ram), true)
  add("recipes", list(config.recipes), list(declaration.recipes), false)
  for (const [recipe, params] of Object.entries(declaration.params)) {
    for (const [param, value] of Object.entries(params))
      add(`params.${recipe}.${param}`, config.params[recipe]?.[param] ?? "", value, false)
  }
  add("shares", list(config.shares.map((share) => share.host)), list(declaration.shares), true)
  add("agent_access", effectiveAccess(config), declaration.agent_access, false)
  const immutable: ImmutableChange[] = []
  if (config.image !== declaration.image) immutable.push({ field: "image", from: config.image, to: declaration.image })
  if (
    declaration.disk !== undefined &&
    config.mode !== "live" &&
    diskSizeBytes(config.disk) !== diskSizeBytes(declaration.disk)
  ) {
    immutable.push({ field: "disk", from: config.disk, to: declaration.disk })
  }
  const provider = config.provider === "" ? "qemu" : config.provider
  if (provider !== declaration.provider) immutable.push({ field: "provider", from: provider, to: declaration.provider })
  else if ((config.host ?? "") !== (declaration.host ?? ""))
    immutable.push({ field: "host", from: config.host ?? "", to: declaration.host ?? "" })
  return { drift, immutable }
}

/** The refusal of an immutable change, as `status` shows it and `up` fails with (`recreate` says what to do about it). */
export const immutableMessage = (changes: ReadonlyArray<ImmutableChange>): string =>
  changes.map((change) => `${change.field} changed from ${change.from || "(none)"} to ${change.to}`).join("; ")

/** What an immutable change needs: the VM deleted and the project brought up again. */
export const recreate = (declaration: Declaration): Hint =>
  advise(
    "recreate it",
    { operation: "vm.destroy", input: { vm: declaration.key } },
    { operation: "project.up", input: {} }
  )
