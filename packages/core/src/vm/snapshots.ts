import { Context, Effect, Layer } from "effect"
import type { Snapshot } from "@stoat/wire"
import { AlreadyRunning, NoDisk, NotFound, type StoatError } from "../errors.js"
import { GuestDefinitions } from "../guest/definitions.js"
import { Locks } from "../platform/locks.js"
import { Hypervisor } from "../ports/hypervisor.js"
import { isRunning, loadVm, type OkRecord } from "./records.js"
import { vmDisk } from "./disks.js"
import { VmStore } from "./store.js"

/**
 * A VM's disk snapshots. The rules live here once: a live VM has no disk to snapshot, saving a
 * tag replaces the snapshots of that tag, a VM is stopped before a restore, and an unknown tag
 * answers not_found naming the tags there are. The hypervisor only provides the mechanisms.
 * Every change runs under the VM's lock and answers with the list it left.
 */
export class Snapshots extends Context.Tag("stoat/Snapshots")<
  Snapshots,
  {
    readonly list: (vm: string) => Effect.Effect<ReadonlyArray<Snapshot>, StoatError>
    readonly save: (vm: string, tag: string) => Effect.Effect<ReadonlyArray<Snapshot>, StoatError>
    readonly restore: (vm: string, tag: string) => Effect.Effect<ReadonlyArray<Snapshot>, StoatError>
    readonly remove: (vm: string, tag: string) => Effect.Effect<ReadonlyArray<Snapshot>, StoatError>
  }
>() {}

const make = Effect.gen(function* () {
  const context = yield* Effect.context<VmStore | GuestDefinitions | Hypervisor>()
  const hypervisor = yield* Hypervisor
  const locks = yield* Locks

  const withDisk = (vm: string) =>
    Effect.flatMap(loadVm(vm), (record) =>
      record.config.mode === "live"
        ? Effect.fail(new NoDisk({ message: `VM "${vm}" is a live VM and has no disk to snapshot`, subject: vm }))
        : Effect.succeed(record)
    )

  const listOf = (record: OkRecord) => hypervisor.listSnapshots(vmDisk(record))

  const requireTag = (record: OkRecord, tag: string) =>
    Effect.flatMap(listOf(record), (snapshots) =>
      snapshots.some((snapshot) => snapshot.tag === tag)
        ? Effect.void
        : Effect.fail(
            new NotFound({
              message: `no snapshot "${tag}" on VM "${record.name}"; existing tags: ${[...new Set(snapshots.map((snapshot) => snapshot.tag))].join(", ") || "(none)"}`,
              subject: tag
            })
          )
    )

  const change = <E>(vm: string, apply: (record: OkRecord) => Effect.Effect<void, E, Hypervisor>) =>
    Effect.gen(function* () {
      const record = yield* withDisk(vm)
      yield* locks.withVmLock(vm, apply(record))
      return yield* listOf(record)
    }).pipe(Effect.provide(context))

  return Snapshots.of({
    list: (vm) => Effect.flatMap(withDisk(vm), listOf).pipe(Effect.provide(context)),
    save: (vm, tag) =>
      change(vm, (record) =>
        Effect.gen(function* () {
          // The hypervisor would keep a second snapshot of the same name beside the first.
          if ((yield* listOf(record)).some((snapshot) => snapshot.tag === tag)) yield* hypervisor.deleteSnapshot(vmDisk(record), tag)
          yield* hypervisor.saveSnapshot(vmDisk(record), tag)
        })
      ),
    restore: (vm, tag) =>
      change(vm, (record) =>
        Effect.gen(function* () {
          if (yield* isRunning(record)) return yield* new AlreadyRunning({ message: `VM "${vm}" is running; stop it before restoring a snapshot`, subject: vm })
          yield* requireTag(record, tag)
          yield* hypervisor.restoreSnapshot(vmDisk(record), tag)
        })
      ),
    remove: (vm, tag) => change(vm, (record) => Effect.zipRight(requireTag(record, tag), hypervisor.deleteSnapshot(vmDisk(record), tag)))
  })
})

/** Needs the VM store, guests, locks and the hypervisor. */
export const SnapshotsLive = Layer.effect(Snapshots, make)
