import { Effect, Layer } from "effect"
import { DataRoot, findOnPath, HostChecks } from "@stoat/core"
import { cacheDirsFromEnv, defaultTinyCacheDir, probeKernel } from "@stoat/qemu"
import { shellWord } from "@stoat/core/ssh"
import type { HostCheck } from "@stoat/wire"
import { DEFAULT_CPU_MODEL, MACHINE_TYPE } from "./domain-xml.js"
import { learnAccel, probeDirIn, verdictsIn } from "./accel.js"
import { VIRSH, virsh, virshError, type VirshResult } from "./virsh.js"

/** A person may wait this long for doctor to hear from a host before it is reported as not answering. */
const CONNECT_TIMEOUT_MS = 30_000

const check = (
  name: string,
  ok: boolean,
  detail: string,
  fix: ReadonlyArray<string> = [],
  optional = false
): HostCheck => ({
  name,
  ok,
  detail,
  fix,
  optional
})

/** `Running hypervisor: QEMU 7.2.0` and `Using library: libvirt 9.0.0` of `virsh version`. */
const versions = (result: VirshResult): string => {
  const field = (label: string) => new RegExp(`^${label}:\\s*(.+)$`, "m").exec(result.stdout)?.[1]?.trim()
  return [field("Running hypervisor"), field("Using library")].filter((part) => part !== undefined).join(", ")
}

/**
 * The checks of one libvirt host, in order, each only once the ones it needs passed: virsh here,
 * the connection, what VMs start under there (KVM or TCG), and the QEMU, machine type and CPU
 * model the provider pins (saved state moves only between hosts that agree on them).
 */
const checkHost = (root: string, tinyCacheDir: string) => (uri: string) =>
  Effect.gen(function* () {
    const path = yield* Effect.promise(() => findOnPath(VIRSH))
    if (path === undefined)
      return [
        check("virsh", false, `${VIRSH} not found on PATH (stoat drives libvirt with it)`, [
          "sudo apt-get install -y libvirt-clients"
        ])
      ]
    const checks: HostCheck[] = [check("virsh", true, path)]
    const connected = yield* Effect.either(virsh(uri, ["version"], { timeoutMs: CONNECT_TIMEOUT_MS }))
    if (connected._tag === "Left" || connected.right.code !== 0) {
      const detail =
        connected._tag === "Left"
          ? connected.left.message
          : `virsh -c ${uri} version failed: ${virshError(connected.right)}`
      return [...checks, check("connection", false, detail, [`virsh -c ${shellWord(uri)} list  # libvirt's own error`])]
    }
    checks.push(check("connection", true, `${uri}: ${versions(connected.right) || "connected"}`))

    // A host that lists KVM is probed here as before its first VM: nested hosts list a KVM that cannot run a guest.
    const accel = yield* Effect.either(
      learnAccel(verdictsIn(root), uri, { probeDir: probeDirIn(root), kernel: probeKernel(undefined, tinyCacheDir) })
    )
    checks.push(
      accel._tag === "Right"
        ? check("kvm", accel.right.accel === "kvm", accel.right.detail, [], true)
        : // Demanded KVM the host lacks (STOAT_ACCEL=kvm) stops every start there: a failure, not a warning.
          check("kvm", false, accel.left.message, [], accel.left._tag !== "AcceleratorUnusable")
    )

    const emulator = yield* virsh(uri, ["domcapabilities", "--arch", "x86_64", "--virttype", "qemu"], {
      timeoutMs: CONNECT_TIMEOUT_MS
    })
    const emulatorPath = /<path>([^<]+)<\/path>/.exec(emulator.stdout)?.[1]
    if (emulator.code !== 0 || emulatorPath === undefined)
      return [
        ...checks,
        check("qemu", false, `no x86_64 QEMU on ${uri}: ${virshError(emulator)}`, [
          "sudo apt-get install -y qemu-system-x86  # on the host"
        ])
      ]
    checks.push(check("qemu", true, emulatorPath))

    const machine = yield* virsh(
      uri,
      ["domcapabilities", "--arch", "x86_64", "--virttype", "qemu", "--machine", MACHINE_TYPE],
      { timeoutMs: CONNECT_TIMEOUT_MS }
    )
    const cpuUsable = new RegExp(`<model usable='yes'[^>]*>${DEFAULT_CPU_MODEL}</model>`).test(machine.stdout)
    checks.push(
      machine.code !== 0
        ? check(
            "machine",
            false,
            `QEMU on ${uri} has no machine type ${MACHINE_TYPE}, which every domain is pinned to: ${virshError(machine)}`,
            ["a QEMU of 7.2 or later on the host (Debian 12's or newer)"]
          )
        : check(
            "machine",
            cpuUsable,
            cpuUsable
              ? `machine type ${MACHINE_TYPE} and CPU model ${DEFAULT_CPU_MODEL} are there`
              : `QEMU on ${uri} offers no usable CPU model ${DEFAULT_CPU_MODEL}, the one VMs get unless they name another`,
            [],
            // A VM naming its own cpu_model still starts: a warning.
            true
          )
    )
    return checks
  }).pipe(
    // virsh's own absence was checked first; anything else that fails is reported, never thrown.
    Effect.catchAll((error) => Effect.succeed([check("connection", false, error.message)]))
  )

/** HostChecks for libvirt hosts (`stoat doctor --host URI`), sharing the provider's KVM verdicts of the data root. */
export const LibvirtHostChecksLive = Layer.effect(
  HostChecks,
  Effect.map(DataRoot, (root) =>
    HostChecks.of({
      check: checkHost(root.root, cacheDirsFromEnv().tinyCacheDir ?? defaultTinyCacheDir(root.root))
    })
  )
)
