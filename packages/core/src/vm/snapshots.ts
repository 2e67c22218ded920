import { join } from "node:path"
import { Context, Effect, Layer } from "effect"
import type { Snapshot } from "@stoat/wire"
import { AlreadyRunning, InUse, NoDisk, NotFound, type StoatError } from "../errors.js"
import { GuestDefinitions } from "../guest-definitions/definitions.js"
import * as fs from "../platform/fs.js"
import { Locks } from "../platform/locks.js"
import { Hypervisor, isBaseImage, type DiskRef, type VmDisk } from "../ports/hypervisor.js"
import { isRunning, loadVm, type OkRecord } from "./records.js"
import { firstDisk, layersDir, newLayerFile, topPointerPath, vmDisk } from "./disks.js"
import { VmStore } from "./store.js"

/**
 * A VM's disk snapshots. The rules live here once: a live VM has no disk to snapshot, saving a
 * tag replaces the snapshots of that tag, a VM is stopped before a restore, and an unknown tag
 * answers not_found naming the tags there are. The hypervisor only provides the mechanisms.
 * Every change runs under the VM's lock and answers with the list it left.
 *
 * A checkpoint freezes the file a VM wrote to and puts a new overlay on top, so a VM's disk may
 * be a chain of files in its folder. Its snapshots are those of every file in that chain (a tag
 * in a nearer file hides the same tag further down). New snapshots go into the top; one in a
 * frozen file below is restored by putting a new top over the current one that reads as that
 * snapshot, so no frozen file changes (checkpoints, their forks and clones read them), and a
 * snapshot there cannot be deleted.
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

/** One file of a VM's disk chain and the snapshots it holds. */
interface ChainFile {
  readonly disk: VmDisk
  readonly snapshots: ReadonlyArray<Snapshot>
}

const hasTag = (tag: string) => (file: ChainFile) => file.snapshots.some((snapshot) => snapshot.tag === tag)

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

  /** The files of the VM's disk that lie in its own folder, the top first; a base image or another VM's file ends it. */
  const layersOf = (record: OkRecord) =>
    Effect.gen(function* () {
      const layers: ChainFile[] = []
      let disk: VmDisk | undefined = vmDisk(record)
      while (disk !== undefined && layers.length < 64) {
        layers.push({ disk, snapshots: yield* hypervisor.listSnapshots(disk) })
        // The VM's first disk is the bottom of its own files: no need to ask what lies under it.
        if (disk.file === firstDisk(disk.vm).file) break
        const backing: DiskRef | undefined = (yield* hypervisor.diskInfo(disk)).backing
        disk = backing !== undefined && !isBaseImage(backing) && backing.vm.name === record.name ? backing : undefined
      }
      return layers
    })

  /** Oldest file first; a tag also held by a nearer file is left out. */
  const visible = (layers: ReadonlyArray<ChainFile>): ReadonlyArray<Snapshot> =>
    layers
      .map((file, at) => file.snapshots.filter((snapshot) => !layers.slice(0, at).some(hasTag(snapshot.tag))))
      .reverse()
      .flat()

  const listOf = (record: OkRecord) => Effect.map(layersOf(record), visible)

  /** The nearest file holding `tag`, and the chain, or not_found naming the tags there are. */
  const findTag = (record: OkRecord, tag: string) =>
    Effect.gen(function* () {
      const layers = yield* layersOf(record)
      const at = layers.findIndex(hasTag(tag))
      if (at >= 0) return { layers, at }
      return yield* new NotFound({
        message: `no snapshot "${tag}" on VM "${record.name}"; existing tags: ${[...new Set(visible(layers).map((snapshot) => snapshot.tag))].join(", ") || "(none)"}`,
        subject: tag
      })
    })

  /** A new top over the current one that reads as snapshot `tag` of the frozen file `source`. */
  const restoreBelow = (record: OkRecord, source: VmDisk, tag: string) =>
    Effect.gen(function* () {
      const top = vmDisk(record)
      const next: VmDisk = { vm: top.vm, file: newLayerFile() }
      yield* fs.makeDirectory(layersDir(record.dir))
      yield* hypervisor.snapshotOverlay(source, tag, next, top)
      yield* Effect.onError(fs.writeFileAtomic(topPointerPath(record.dir), `${next.file}\n`), () =>
        Effect.ignore(fs.remove(join(record.dir, next.file)))
      )
    })

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
          if ((yield* hypervisor.listSnapshots(vmDisk(record))).some((snapshot) => snapshot.tag === tag))
            yield* hypervisor.deleteSnapshot(vmDisk(record), tag)
          yield* hypervisor.saveSnapshot(vmDisk(record), tag)
        })
      ),
    restore: (vm, tag) =>
      change(vm, (record) =>
        Effect.gen(function* () {
          if (yield* isRunning(record))
            return yield* new AlreadyRunning({
              message: `VM "${vm}" is running; stop it before restoring a snapshot`,
              subject: vm
            })
          const { layers, at } = yield* findTag(record, tag)
          const source = layers[at]!.disk
          yield* at === 0 ? hypervisor.restoreSnapshot(source, tag) : restoreBelow(record, source, tag)
        })
      ),
    remove: (vm, tag) =>
      change(vm, (record) =>
        Effect.gen(function* () {
          const { layers, at } = yield* findTag(record, tag)
          if (at > 0) {
            return yield* new InUse({
              message: `snapshot "${tag}" of VM "${vm}" lies in ${layers[at]!.disk.file}, a disk layer a checkpoint froze (the VM's disk, its checkpoints and their forks read it), so it cannot be deleted; it goes with the VM`,
              subject: tag
            })
          }
          yield* hypervisor.deleteSnapshot(vmDisk(record), tag)
        })
      )
  })
})

/** Needs the VM store, guests, locks and the hypervisor. */
export const SnapshotsLive = Layer.effect(Snapshots, make)
