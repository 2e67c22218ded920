import { dirname } from "node:path"
import { Effect, Schema } from "effect"
import {
  DoctorReport,
  GuestList,
  Guest,
  GuestShow,
  VersionInfo,
  VmGet,
  VmList,
  VmStatus,
  CONTRACT_VERSION,
  type HostCheck,
  type Vm
} from "@stoat/wire"
import { HintWording } from "../context/hint-wording.js"
import { hasProjectFile } from "../projects/file.js"
import { DataRoot } from "../platform/data-root.js"
import * as fs from "../platform/fs.js"
import { GuestDefinitions, type LoadedGuest } from "../guest-definitions/definitions.js"
import { HostProbe } from "../platform/host.js"
import { Hypervisor, type Acceleration } from "../ports/hypervisor.js"
import { STOAT_VERSION } from "../version.js"
import { VmStore, type VmRecord } from "../vm/store.js"
import { toVm, toVmStatus } from "../vm/view.js"
import { readSecrets, setSecretNames } from "../platform/secrets.js"
import { DoctorInput, hostDoctor } from "./host-doctor.js"
import { NoInput, VmName } from "./inputs.js"
import { defineOperation, READ } from "./operation.js"

/**
 * Live view of records: run state from the hypervisor, guests for the broken-os rule. One record
 * after another: a status is state the provider keeps at hand (the port says so), and a fiber per
 * record cost more than the status itself.
 */
export const viewVms = (
  records: ReadonlyArray<VmRecord>
): Effect.Effect<Vm[], never, DataRoot | Hypervisor | GuestDefinitions | HostProbe> =>
  records.length === 0 ? Effect.succeed([]) : viewSome(records)

const viewSome = (records: ReadonlyArray<VmRecord>) =>
  Effect.gen(function* () {
    const root = yield* DataRoot
    const hypervisor = yield* Hypervisor
    const guests = yield* Effect.orElseSucceed((yield* GuestDefinitions).list, () => [])
    const graphical = yield* (yield* HostProbe).graphical
    const { words } = yield* HintWording
    const byName = new Map<string, Guest>()
    for (const guest of guests) {
      byName.set(guest.name, guest)
      for (const alias of guest.aliases) if (!byName.has(alias)) byName.set(alias, guest)
    }
    // A few at a time: a VM on a remote host costs a round trip there, and hosts answer in parallel.
    const views: ReadonlyArray<Vm> = yield* Effect.forEach(
      records,
      (record) =>
        Effect.map(hypervisor.status(record), (state) =>
          toVm(
            record,
            {
              running: state.running,
              graphical,
              crashed: (state.leftovers?.length ?? 0) > 0,
              ...(state.unreachable !== undefined ? { unreachable: state.unreachable } : {})
            },
            byName,
            root,
            words
          )
        ),
      { concurrency: 4 }
    )
    // A project VM whose stoat.toml has gone: listed, flagged, still usable by name. One look per
    // project, however many of its VMs are listed.
    const present = new Map<string, boolean>()
    return views.map((vm) => {
      if (vm.project === "") return vm
      if (!present.has(vm.project)) present.set(vm.project, hasProjectFile(vm.project))
      return { ...vm, project_missing: !present.get(vm.project) }
    })
  })

export const listVms = defineOperation({
  key: "vm.list",
  tool: "list_vms",
  expose: { cli: "ls", mcp: true },
  title: "List VMs",
  description: "Every VM with its state (running, stopped or broken), size and SSH port.",
  kind: "query",
  input: NoInput,
  output: VmList,
  annotations: READ,
  access: null,
  // A chain, not a generator: every MCP list_vms runs this, and a generator's steps cost more than the listing.
  run: () =>
    Effect.flatMap(VmStore, (store) =>
      Effect.flatMap(store.list, (records) => Effect.map(viewVms(records), (vms) => ({ vms })))
    )
})

export const getVm = defineOperation({
  key: "vm.get",
  tool: "vm_status",
  expose: { cli: "get", mcp: true },
  title: "Show a VM",
  description: "One VM: configuration, state, recipes with applied state and health.",
  kind: "query",
  input: Schema.Struct({ vm: VmName }),
  output: VmStatus,
  cliView: (vm): typeof VmGet.Type => ({ vm }),
  annotations: READ,
  access: null,
  run: ({ vm }) =>
    Effect.gen(function* () {
      const record = yield* (yield* VmStore).get(vm)
      const [view] = yield* viewVms([record])
      // Only which secrets are set: a refused (too wide) secrets.toml just shows none.
      const secrets = yield* Effect.orElseSucceed(readSecrets(record.dir), () => ({}))
      return toVmStatus(record, view!, setSecretNames(secrets))
    })
})

/** The wire Guest (contract v3) of a loaded definition: `log_path` is core's own, used by tail_log. */
const toWireGuest = ({ log_path: _logPath, ...guest }: LoadedGuest): Guest => guest

export const listGuests = defineOperation({
  key: "guest.list",
  tool: "list_guests",
  expose: { cli: "guest ls", mcp: true },
  title: "List guest definitions",
  description: "The loaded guest OS definitions.",
  kind: "query",
  input: NoInput,
  output: GuestList,
  annotations: READ,
  access: null,
  run: () =>
    Effect.map(
      Effect.flatMap(GuestDefinitions, (guests) => guests.list),
      (guests) => ({ guests: guests.map(toWireGuest) })
    )
})

export const guestInfo = defineOperation({
  key: "guest.get",
  tool: "guest_info",
  expose: { cli: "guest show", mcp: true },
  title: "Show a guest definition",
  description: "One guest definition: init system, package manager, service templates.",
  kind: "query",
  input: Schema.Struct({
    name: Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9-]*$/)).annotations({
      description: "Guest definition name from list_guests"
    })
  }),
  output: Guest,
  cliView: (guest): typeof GuestShow.Type => ({ guest }),
  annotations: READ,
  access: null,
  run: ({ name }) =>
    Effect.map(
      Effect.flatMap(GuestDefinitions, (guests) => guests.get(name)),
      toWireGuest
    )
})

const APT = "sudo apt-get install -y"

export const doctor = defineOperation({
  key: "host.doctor",
  tool: "doctor",
  expose: { cli: "doctor", mcp: true },
  title: "Check host prerequisites",
  description:
    "Check the host: qemu, qemu-img and ssh (required), git (optional), whether KVM really works (else VMs run under TCG), the data root's free space, and VMs that crashed or lost their pidfile.",
  kind: "query",
  input: DoctorInput,
  output: DoctorReport,
  annotations: READ,
  access: null,
  run: (input) =>
    Effect.gen(function* () {
      if (input.host !== undefined) return yield* hostDoctor(input.host)
      const host = yield* HostProbe
      const hypervisor = yield* Hypervisor
      const program = (name: string, pkg: string, optional: boolean, why: string) =>
        Effect.map(
          host.which(name),
          (path): HostCheck => ({
            name,
            ok: path !== undefined,
            detail: path ?? `${name} not found on PATH (${why})`,
            fix: path ? [] : [`${APT} ${pkg}`],
            optional
          })
        )
      const checks = yield* Effect.all(
        [
          program("qemu-system-x86_64", "qemu-system-x86", false, "runs the VMs"),
          program("qemu-img", "qemu-utils", false, "creates disks and snapshots"),
          program("ssh", "openssh-client", false, "stoat ssh"),
          program("git", "git", true, "remote recipes")
        ],
        { concurrency: "unbounded" }
      )
      const qemuPresent = checks[0]?.ok === true
      const kvm: HostCheck = qemuPresent
        ? yield* Effect.match(hypervisor.acceleration, {
            onFailure: (error) => ({ name: "kvm", ok: false, detail: error.message, fix: [], optional: true }),
            onSuccess: (probe) => ({
              name: "kvm",
              ok: probe.accel === "kvm",
              detail: probe.detail,
              fix: kvmFixes(probe),
              optional: true
            })
          })
        : { name: "kvm", ok: false, detail: "not probed: qemu-system-x86_64 is missing", fix: [], optional: true }
      const all = [...checks, kvm, yield* dataRootCheck, yield* vmRunsCheck]
      return { healthy: all.every((check) => check.ok || check.optional), checks: all }
    })
})

/** Below this much free space a start, a disk write or a download soon fails. */
const MIN_FREE_MB = 256

const sizeText = (mb: number) => (mb >= 10 * 1024 ? `${Math.round(mb / 1024)} GiB` : `${mb} MiB`)

/** The data root's free space: a full file system fails every write, and rm and prune are the way back. */
const dataRootCheck = Effect.gen(function* () {
  const root = (yield* DataRoot).root
  const space = (yield* fs.spaceOf(root)) ?? (yield* fs.spaceOf(dirname(root)))
  if (space === undefined)
    return {
      name: "data-root",
      ok: false,
      detail: `cannot tell the free space of ${root}`,
      fix: [],
      optional: true
    } satisfies HostCheck
  const low = space.freeMb < MIN_FREE_MB
  return {
    name: "data-root",
    ok: !low,
    detail: `${root}: ${sizeText(space.freeMb)} free of ${sizeText(space.totalMb)}${low ? `; under ${MIN_FREE_MB} MiB, VMs cannot start or write` : ""}`,
    fix: low
      ? [
          "stoat prune --apply --broken --images  # partial downloads, broken VMs, images no VM uses",
          "stoat rm <vm>  # a VM you no longer need"
        ]
      : [],
    optional: false
  } satisfies HostCheck
})

/** VMs whose run the provider found amiss: a QEMU without its pidfile, one that ended without a shutdown, one running under a broken vm.toml. */
const vmRunsCheck = Effect.gen(function* () {
  const hypervisor = yield* Hypervisor
  const records = yield* Effect.orElseSucceed((yield* VmStore).list, () => [])
  const problems: string[] = []
  const fix: string[] = []
  for (const record of records) {
    const state = yield* hypervisor.status(record)
    if (state.running && record.kind === "broken") {
      problems.push(`${record.name} runs but its vm.toml is broken (${record.reason})`)
      fix.push(`stoat down ${record.name}`)
    } else if (state.orphaned === true) {
      problems.push(`${record.name}'s QEMU (pid ${state.pid}) runs without a pidfile naming it`)
      fix.push(`stoat down ${record.name}  # then stoat up ${record.name}`)
    } else if ((state.leftovers?.length ?? 0) > 0) {
      problems.push(`${record.name}'s QEMU ended without a shutdown (killed or crashed)`)
      if (!fix.includes("stoat prune --apply")) fix.push("stoat prune --apply")
    }
  }
  const count = `${records.length} VM${records.length === 1 ? "" : "s"}`
  return {
    name: "vms",
    ok: problems.length === 0,
    detail:
      problems.length === 0 ? `${count}; none crashed, orphaned or running with a broken vm.toml` : problems.join("; "),
    fix,
    optional: true
  } satisfies HostCheck
})

/** What a person can do about the accelerator verdict: nothing when KVM works or TCG was chosen on purpose. */
const kvmFixes = (probe: Acceleration): ReadonlyArray<string> => {
  if (probe.accel === "kvm" || probe.detail.startsWith("STOAT_ACCEL=")) return []
  // KVM opens but cannot run a 64-bit guest (nested kvm-pvm): no group or firmware switch helps.
  if (probe.detail.includes("does not run")) return ["export STOAT_ACCEL=tcg  # skip the KVM probe on this host"]
  return [
    "sudo usermod -aG kvm $USER  # then log in again",
    "enable virtualisation (VT-x/AMD-V) in firmware or nested virtualisation in the host"
  ]
}

export const version = defineOperation({
  key: "host.version",
  tool: "version",
  expose: { cli: "version", mcp: true },
  title: "Version",
  description: "Stoat's version and JSON contract version.",
  kind: "query",
  input: NoInput,
  output: VersionInfo,
  annotations: READ,
  access: null,
  run: () => Effect.succeed({ version: STOAT_VERSION, contract: CONTRACT_VERSION })
})
