import { join } from "node:path"
import { Effect, Either, Layer } from "effect"
import { Hypervisor, isBaseImage, type DiskRef, type VmRef } from "../ports/hypervisor.js"
import { readSmallFileSync } from "../platform/fs.js"
import { parseVmToml } from "./config.js"

/** Where a VM runs: the provider named in its vm.toml (qemu when none) and, for libvirt, the host URI ("" for the local default). */
export interface Placement {
  readonly provider: string
  readonly host: string
}

const VM_TOML_MAX_BYTES = 1024 * 1024

/** A top-level `key = "value"` (or a 'literal') of vm.toml, before its first table; comments allowed after it. */
const topLevelString = (head: string, key: string): string | undefined | "unreadable" => {
  const line = new RegExp(`^[ \\t]*${key}[ \\t]*=(.*)$`, "m").exec(head)
  if (line === null) return undefined
  const value = /^[ \t]*(?:"([^"\\]*)"|'([^']*)')[ \t]*(?:#.*)?$/.exec(line[1] ?? "")
  return value === null ? "unreadable" : (value[1] ?? value[2] ?? "")
}

/**
 * A VM's placement from its folder's vm.toml, read at each call (a provider is chosen per VM and
 * the file is the only record). Every status of a listing asks it, so the two keys are read from
 * the text before its first table (what stoat writes) and the whole file is parsed only when they
 * are written some other way. A missing or broken file is the default provider's: a broken VM
 * is still stopped and listed by the provider that is always there.
 */
export const readPlacement = (dir: string): Placement => {
  let text: string
  try {
    text = readSmallFileSync(join(dir, "vm.toml"), VM_TOML_MAX_BYTES)
  } catch {
    return { provider: "qemu", host: "" }
  }
  const table = /^[ \t]*\[/m.exec(text)
  const head = table === null ? text : text.slice(0, table.index)
  const provider = topLevelString(head, "provider")
  const host = topLevelString(head, "host")
  if (provider !== "unreadable" && host !== "unreadable") return { provider: provider || "qemu", host: host ?? "" }
  const parsed = parseVmToml(text)
  if (Either.isLeft(parsed)) return { provider: "qemu", host: "" }
  return { provider: parsed.right.config.provider || "qemu", host: parsed.right.config.host ?? "" }
}

type HypervisorService = Hypervisor["Type"]

/**
 * One Hypervisor over several providers: each call goes to the provider the VM's vm.toml names
 * (base images and the accelerator probe to the default). A provider name no layer serves is
 * the default's too; `create` refuses such names before a vm.toml carries one.
 */
export const routeHypervisor = (defaultProvider: HypervisorService, others: Readonly<Record<string, HypervisorService>>): HypervisorService => {
  const of = (vm: VmRef): HypervisorService => others[readPlacement(vm.dir).provider] ?? defaultProvider
  const ofDisk = (disk: DiskRef): HypervisorService => (isBaseImage(disk) ? defaultProvider : of(disk.vm))
  return Hypervisor.of({
    status: (vm) => of(vm).status(vm),
    start: (plan) => of(plan.vm).start(plan),
    awaitSshd: (vm, timeoutMs) => of(vm).awaitSshd(vm, timeoutMs),
    stop: (vm, options) => of(vm).stop(vm, options),
    probeAccelerator: defaultProvider.probeAccelerator,
    createDisk: (disk, size, backing) => of(disk.vm).createDisk(disk, size, backing),
    resizeDisk: (disk, size) => of(disk.vm).resizeDisk(disk, size),
    diskInfo: (disk) => ofDisk(disk).diskInfo(disk),
    listSnapshots: (disk) => of(disk.vm).listSnapshots(disk),
    saveSnapshot: (disk, tag) => of(disk.vm).saveSnapshot(disk, tag),
    restoreSnapshot: (disk, tag) => of(disk.vm).restoreSnapshot(disk, tag),
    deleteSnapshot: (disk, tag) => of(disk.vm).deleteSnapshot(disk, tag),
    snapshotOverlay: (source, tag, disk, backing) => of(disk.vm).snapshotOverlay(source, tag, disk, backing),
    screenshot: (vm) => of(vm).screenshot(vm),
    checkpoint: (vm, request) => of(vm).checkpoint(vm, request),
    resume: (checkpoint, plan) => of(plan.vm).resume(checkpoint, plan),
    rebaseDisk: (disk, backing) => of(disk.vm).rebaseDisk(disk, backing)
  })
}

/** The routing Hypervisor as a layer: the default provider's layer and the others', by provider name. */
export const routedHypervisorLayer = <E, R>(defaultLayer: Layer.Layer<Hypervisor, E, R>, others: Readonly<Record<string, Layer.Layer<Hypervisor, E, R>>>) =>
  Layer.effect(
    Hypervisor,
    Effect.gen(function* () {
      const base = yield* Effect.provide(Hypervisor, defaultLayer)
      const named: Record<string, HypervisorService> = {}
      for (const [name, layer] of Object.entries(others)) named[name] = yield* Effect.provide(Hypervisor, layer)
      return routeHypervisor(base, named)
    })
  )
