import { Context, Effect } from "effect"
import type { DataRootPaths } from "../platform/data-root.js"
import type * as fs from "../platform/fs.js"
import { Broken, type CannotReach, fixOrDelete, NotRunning, startIt } from "../errors.js"
import { Hypervisor, type VmRef } from "../ports/hypervisor.js"
import type { SshTarget } from "../ports/guest-transport.js"
import { VmStore, type VmRecord } from "./store.js"
import { unknownGuestReason } from "./view.js"
import { sshUserOf } from "./config.js"
import { sshJumpOf } from "./placement.js"
import { GuestDefinitions, type LoadedGuest } from "../guest-definitions/definitions.js"

/** A VM record whose vm.toml parsed (loadVm also checks that it names a known guest). */
export type OkRecord = Extract<VmRecord, { kind: "ok" }>

export const vmRef = (record: VmRecord): VmRef => ({ name: record.name, dir: record.dir })

/** A VM loaded whole: its record and its guest definition (none for `os = ""`, a VM of no known guest). */
export interface LoadedVm {
  readonly record: OkRecord
  readonly guest: LoadedGuest | undefined
}

/**
 * The VMs this call has loaded already, by name: runOperation loads each target once for the
 * access check and hands them on here, so a guest operation reads its VM's vm.toml and guest
 * definition once per call. Empty outside such a call; a handler that changes vm.toml loads it itself.
 */
export class LoadedVms extends Context.Reference<LoadedVms>()("stoat/LoadedVms", {
  defaultValue: (): ReadonlyMap<string, LoadedVm> => new Map()
}) {}

/**
 * A VM that must parse and name a known guest, with that guest: broken ones (as `ls` shows them)
 * answer `broken` with the reason, so nothing acts on — or rewrites — a VM that is not whole.
 */
export const loadWholeVm = (name: string): Effect.Effect<LoadedVm, Broken | fs.FsError, VmStore | GuestDefinitions> =>
  Effect.gen(function* () {
    const record = yield* (yield* VmStore).get(name)
    if (record.kind === "broken") return yield* brokenVm(name, record.reason)
    if (record.config.os === "") return { record, guest: undefined }
    const guest = yield* Effect.flatMap(GuestDefinitions, (guests) => guests.get(record.config.os)).pipe(
      Effect.catchTag("NotFound", () => brokenVm(name, unknownGuestReason(record.config.os)))
    )
    return { record, guest }
  })

const brokenVm = (name: string, reason: string) =>
  Effect.fail(new Broken({ message: `VM "${name}" is broken: ${reason}`, subject: name, hint: fixOrDelete(name) }))

/** The record of `loadWholeVm`. */
export const loadVm = (name: string): Effect.Effect<OkRecord, Broken | fs.FsError, VmStore | GuestDefinitions> =>
  Effect.map(loadWholeVm(name), (loaded) => loaded.record)

/**
 * Whether the VM runs. cannot_reach when its provider could not learn that (its host did not
 * answer): an unknown state is never taken for "stopped", which would let rm delete the folder of
 * a VM still running there, or a clone copy a disk in use.
 */
export const isRunning = (record: VmRecord): Effect.Effect<boolean, CannotReach, Hypervisor> =>
  Effect.flatMap(
    Effect.flatMap(Hypervisor, (h) => h.status(vmRef(record))),
    (state) => (state.unreachable !== undefined ? Effect.fail(state.unreachable) : Effect.succeed(state.running))
  )

/** A running VM, else not_running; cannot_reach when the provider could not learn its state (its host did not answer). */
export const requireRunning = (record: OkRecord): Effect.Effect<void, NotRunning | CannotReach, Hypervisor> =>
  Effect.flatMap(isRunning(record), (running) =>
    running
      ? Effect.void
      : Effect.fail(
          new NotRunning({
            message: `VM "${record.name}" is not running`,
            subject: record.name,
            hint: startIt(record.name)
          })
        )
  )

/** How to reach the VM's sshd: its forwarded port, through its libvirt host for one on a qemu+ssh:// host. */
export const sshTarget = (root: DataRootPaths, record: OkRecord): SshTarget => {
  const jump = sshJumpOf(record.config.host ?? "")
  return {
    vm: record.name,
    port: record.config.sshport,
    user: sshUserOf(record.config),
    privateKeyPath: root.clientKey,
    ...(jump !== undefined ? { jump } : {})
  }
}
