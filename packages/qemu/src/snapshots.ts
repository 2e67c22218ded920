import { stat } from "node:fs/promises"
import { resolve } from "node:path"
import { Effect } from "effect"
import { AlreadyRunning, Internal, NoDisk, NotFound, type MonitorRejected, type MonitorUnreachable, type QemuMissing, type VmRef } from "@stoat/core"
import type { Snapshot } from "@stoat/wire"
import { DISK_ID, vmFiles } from "./argv.js"
import { readRunState } from "./process.js"
import * as img from "./qemu-img.js"
import { withQmp, type Qmp } from "./qmp.js"
import { parseSnapshotTable } from "./snapshot-table.js"

/*
 * qcow2 internal snapshots. A stopped VM's disk is handled with qemu-img; a running VM's disk is
 * open in QEMU, so snapshots are taken and deleted over QMP, disk-only and crash-consistent (full
 * RAM snapshots are refused while a 9p share is attached). Restoring needs the VM stopped.
 */

type QmpError = MonitorUnreachable | MonitorRejected

/** qemu-img missing, or QEMU refusing a query, are not in these operations' contracts: internal, with the message. */
const asInternal = (error: QemuMissing | MonitorRejected) =>
  Effect.fail(new Internal({ message: error.message, ...(error.subject !== undefined ? { subject: error.subject } : {}) }))

const requireDisk = (vm: VmRef, disk: string): Effect.Effect<void, NoDisk> =>
  Effect.flatMap(
    Effect.promise(() => stat(disk).then((info) => info.isFile(), () => false)),
    (found) => (found ? Effect.void : Effect.fail(new NoDisk({ message: `VM "${vm.name}" has no disk to snapshot (${disk} does not exist)`, subject: vm.name })))
  )

const running = (vm: VmRef) => Effect.map(Effect.promise(() => readRunState(vm)), (state) => state.running)

const notFound = (vm: VmRef, tag: string, tags: ReadonlyArray<string>) =>
  new NotFound({ message: `no snapshot "${tag}" on VM "${vm.name}"; existing tags: ${[...new Set(tags)].join(", ") || "(none)"}`, subject: tag })

interface BlockInfo {
  readonly device: string
  readonly inserted?: {
    readonly file?: string
    readonly "node-name"?: string
    readonly image?: { readonly filename?: string; readonly snapshots?: ReadonlyArray<{ readonly name: string }> }
  }
}

/** The block device QEMU opened `disk` as, and the snapshot names it has now. */
const findDisk = (qmp: Qmp, vm: VmRef, disk: string): Effect.Effect<{ readonly device: string; readonly tags: string[] }, QmpError | Internal> =>
  Effect.flatMap(qmp.execute<ReadonlyArray<BlockInfo>>("query-block"), (blocks) => {
    const path = resolve(disk)
    const block =
      blocks.find((entry) => entry.inserted?.file === path || entry.inserted?.image?.filename === path) ??
      blocks.find((entry) => entry.device === DISK_ID && entry.inserted !== undefined)
    const device = block?.device || block?.inserted?.["node-name"]
    if (block === undefined || device === undefined || device === "") {
      return Effect.fail(new Internal({ message: `VM "${vm.name}" is running without ${disk} attached`, subject: vm.name }))
    }
    return Effect.succeed({ device, tags: (block.inserted?.image?.snapshots ?? []).map((snapshot) => snapshot.name) })
  })

const liveQmp = <A, E>(vm: VmRef, use: (qmp: Qmp) => Effect.Effect<A, E>) => withQmp(vmFiles(vm.dir).qmp, use, { subject: vm.name })

export const listSnapshots = (vm: VmRef, disk: string): Effect.Effect<ReadonlyArray<Snapshot>, Internal | NoDisk | MonitorUnreachable> =>
  Effect.gen(function* () {
    yield* requireDisk(vm, disk)
    if (yield* running(vm)) {
      // HMP's table has the same columns as qemu-img's; one parser reads both.
      const text = yield* liveQmp(vm, (qmp) => qmp.execute<string>("human-monitor-command", { "command-line": "info snapshots" })).pipe(
        Effect.catchTag("MonitorRejected", asInternal)
      )
      return parseSnapshotTable(text)
    }
    return yield* img.listSnapshots(disk).pipe(Effect.catchTag("QemuMissing", asInternal))
  })

/** Saves `tag`, replacing an existing snapshot of that name. */
export const saveSnapshot = (vm: VmRef, disk: string, tag: string): Effect.Effect<void, Internal | NoDisk | MonitorUnreachable | MonitorRejected> =>
  Effect.gen(function* () {
    yield* requireDisk(vm, disk)
    if (yield* running(vm)) {
      return yield* liveQmp(vm, (qmp) =>
        Effect.gen(function* () {
          const { device, tags } = yield* findDisk(qmp, vm, disk)
          for (const _ of tags.filter((name) => name === tag)) {
            yield* qmp.execute("blockdev-snapshot-delete-internal-sync", { device, name: tag })
          }
          yield* qmp.execute("blockdev-snapshot-internal-sync", { device, name: tag }, { timeoutMs: 60_000 })
        })
      )
    }
    yield* Effect.gen(function* () {
      // qemu-img would happily create a second snapshot with the same name.
      for (const _ of (yield* img.listSnapshots(disk)).filter((snapshot) => snapshot.tag === tag)) yield* img.deleteSnapshot(disk, tag)
      yield* img.createSnapshot(disk, tag)
    }).pipe(Effect.catchTag("QemuMissing", asInternal))
  })

export const restoreSnapshot = (vm: VmRef, disk: string, tag: string): Effect.Effect<void, Internal | NoDisk | NotFound | AlreadyRunning> =>
  Effect.gen(function* () {
    yield* requireDisk(vm, disk)
    if (yield* running(vm)) return yield* new AlreadyRunning({ message: `VM "${vm.name}" is running; stop it before restoring a snapshot`, subject: vm.name })
    yield* Effect.gen(function* () {
      const rows = yield* img.snapshotRows(disk)
      if (!rows.some((row) => row.snapshot.tag === tag)) return yield* notFound(vm, tag, rows.map((row) => row.snapshot.tag))
      // `qemu-img snapshot -a` looks the argument up as an id first.
      if (rows.some((row) => row.id === tag && row.snapshot.tag !== tag)) {
        return yield* new Internal({ message: `snapshot tag "${tag}" is also the id of another snapshot on VM "${vm.name}"; qemu-img cannot tell them apart`, subject: tag })
      }
      yield* img.applySnapshot(disk, tag)
    }).pipe(Effect.catchTag("QemuMissing", asInternal))
  })

/** Deletes every snapshot named `tag`. */
export const deleteSnapshot = (
  vm: VmRef,
  disk: string,
  tag: string
): Effect.Effect<void, Internal | NoDisk | NotFound | MonitorUnreachable | MonitorRejected> =>
  Effect.gen(function* () {
    yield* requireDisk(vm, disk)
    if (yield* running(vm)) {
      return yield* liveQmp(vm, (qmp) =>
        Effect.gen(function* () {
          const { device, tags } = yield* findDisk(qmp, vm, disk)
          const matching = tags.filter((name) => name === tag)
          if (matching.length === 0) return yield* notFound(vm, tag, tags)
          for (const _ of matching) yield* qmp.execute("blockdev-snapshot-delete-internal-sync", { device, name: tag })
        })
      )
    }
    yield* Effect.gen(function* () {
      const snapshots = yield* img.listSnapshots(disk)
      const matching = snapshots.filter((snapshot) => snapshot.tag === tag)
      if (matching.length === 0) return yield* notFound(vm, tag, snapshots.map((snapshot) => snapshot.tag))
      for (const _ of matching) yield* img.deleteSnapshot(disk, tag)
    }).pipe(Effect.catchTag("QemuMissing", asInternal))
  })
