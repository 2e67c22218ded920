import { join } from "node:path"
import { Context, Effect, Either, Layer } from "effect"
import { GuestSignals, Hypervisor, isBaseImage, type DiskRef, type VmRef } from "../ports/hypervisor.js"
import type { SshJump } from "../ports/guest-transport.js"
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

/**
 * The host a VM's guest ssh goes through: the libvirt host of a `qemu+ssh://` URI, whose loopback
 * holds the VM's forwarded port (user-mode networking binds it where QEMU runs). Undefined for
 * this machine's VMs (no host, or a local URI). The URI's `keyfile` and `no_verify` apply to the
 * jump as they apply to virsh's own ssh; the rest of its ssh settings come from ~/.ssh/config.
 */
export const sshJumpOf = (host: string): SshJump | undefined => {
  if (!host.startsWith("qemu+ssh://")) return undefined
  let url: URL
  try {
    url = new URL(host)
  } catch {
    return undefined
  }
  const name = url.hostname.replace(/^\[(.*)\]$/, "$1")
  if (name === "") return undefined
  const keyfile = url.searchParams.get("keyfile")
  return {
    host: name,
    ...(url.username !== "" ? { user: decodeURIComponent(url.username) } : {}),
    ...(url.port !== "" ? { port: Number(url.port) } : {}),
    ...(keyfile !== null && keyfile !== "" ? { identityFile: keyfile } : {}),
    ...(url.searchParams.get("no_verify") === "1" ? { noVerify: true } : {})
  }
}

type HypervisorService = Hypervisor["Type"]
type GuestSignalsService = GuestSignals["Type"]

/** The service of the provider a VM's vm.toml names; the default's for a name none serves. */
const providerOf =
  <S>(defaultProvider: S, others: Readonly<Record<string, S>>) =>
  (vm: VmRef): S =>
    others[readPlacement(vm.dir).provider] ?? defaultProvider

/**
 * One Hypervisor over several providers: each call goes to the provider the VM's vm.toml names
 * (base images and the acceleration query to the default). A provider name no layer serves is
 * the default's too; `create` refuses such names before a vm.toml carries one.
 */
export const routeHypervisor = (
  defaultProvider: HypervisorService,
  others: Readonly<Record<string, HypervisorService>>
): HypervisorService => {
  const of = providerOf(defaultProvider, others)
  const ofDisk = (disk: DiskRef): HypervisorService => (isBaseImage(disk) ? defaultProvider : of(disk.vm))
  return Hypervisor.of({
    status: (vm) => of(vm).status(vm),
    start: (plan) => of(plan.vm).start(plan),
    stop: (vm, options) => of(vm).stop(vm, options),
    acceleration: defaultProvider.acceleration,
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

/** One GuestSignals over several providers: each VM's readiness signals come from the provider its vm.toml names. */
export const routeGuestSignals = (
  defaultProvider: GuestSignalsService,
  others: Readonly<Record<string, GuestSignalsService>>
): GuestSignalsService => {
  const of = providerOf(defaultProvider, others)
  return GuestSignals.of({ awaitSshd: (vm, timeoutMs) => of(vm).awaitSshd(vm, timeoutMs) })
}

/** A provider's ports that differ per VM: its Hypervisor and its GuestSignals. */
type ProviderPorts = Hypervisor | GuestSignals

/** The routing Hypervisor and GuestSignals as one layer: the default provider's ports and the others', by provider name. */
export const routedProviderLayer = <E, R>(
  defaultLayer: Layer.Layer<ProviderPorts, E, R>,
  others: Readonly<Record<string, Layer.Layer<ProviderPorts, E, R>>>
) =>
  Layer.effectContext(
    Effect.gen(function* () {
      const portsOf = (layer: Layer.Layer<ProviderPorts, E, R>) =>
        Effect.provide(Effect.all([Hypervisor, GuestSignals]), layer)
      const [baseHypervisor, baseSignals] = yield* portsOf(defaultLayer)
      const hypervisors: Record<string, HypervisorService> = {}
      const signals: Record<string, GuestSignalsService> = {}
      for (const [name, layer] of Object.entries(others)) [hypervisors[name], signals[name]] = yield* portsOf(layer)
      return Context.make(Hypervisor, routeHypervisor(baseHypervisor, hypervisors)).pipe(
        Context.add(GuestSignals, routeGuestSignals(baseSignals, signals))
      )
    })
  )
