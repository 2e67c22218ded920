import { stat, unlink } from "node:fs/promises"
import { resolve } from "node:path"
import { Effect } from "effect"
import {
  Internal,
  NoDisk,
  type ControlRejected,
  type ControlUnreachable,
  type ProviderMissing,
  type VmDisk,
  type VmRef
} from "@stoat/core"
import type { Snapshot } from "@stoat/wire"
import { DISK_ID, vmFiles } from "./argv.js"
import { hostPathOf } from "./disks.js"
import { readRunState } from "./process.js"
import * as img from "./qemu-img.js"
import { withQmp, type Qmp } from "./qmp.js"
import { parseSnapshotTable } from "./snapshot-table.js"

/*
 * The mechanisms of qcow2 internal snapshots; the rules (a tag replaced, restore only when
 * stopped, unknown tags) are core's Snapshots service's. A stopped VM's disk is handled with
 * qemu-img; a running VM's disk is open in QEMU, so snapshots are taken and deleted over QMP,
 * disk-only and crash-consistent (full RAM snapshots are refused while a 9p share is attached).
 */

type QmpError = ControlUnreachable | ControlRejected

/** qemu-img missing, or QEMU refusing a query, are not in these operations' contracts: internal, with the message. */
const asInternal = (error: ProviderMissing | ControlRejected) =>
  Effect.fail(
    new Internal({ message: error.message, ...(error.subject !== undefined ? { subject: error.subject } : {}) })
  )

/** The disk's file on this host, or no_disk when it does not exist. */
const requireDisk = (ref: VmDisk): Effect.Effect<string, NoDisk> =>
  Effect.suspend(() => {
    const disk = hostPathOf(ref)
    return Effect.flatMap(
      Effect.promise(() =>
        stat(disk).then(
          (info) => info.isFile(),
          () => false
        )
      ),
      (found) =>
        found
          ? Effect.succeed(disk)
          : Effect.fail(
              new NoDisk({
                message: `VM "${ref.vm.name}" has no disk to snapshot (${disk} does not exist)`,
                subject: ref.vm.name
              })
            )
    )
  })

const running = (vm: VmRef) =>
  Effect.map(
    Effect.sync(() => readRunState(vm)),
    (state) => state.running
  )

interface BlockInfo {
  readonly device: string
  readonly inserted?: {
    readonly file?: string
    readonly "node-name"?: string
    readonly image?: { readonly filename?: string; readonly snapshots?: ReadonlyArray<{ readonly name: string }> }
  }
}

/** The block device QEMU opened `disk` as, and the snapshot names it has now. */
const findDisk = (
  qmp: Qmp,
  vm: VmRef,
  disk: string
): Effect.Effect<{ readonly device: string; readonly tags: string[] }, QmpError | Internal> =>
  Effect.flatMap(qmp.execute<ReadonlyArray<BlockInfo>>("query-block"), (blocks) => {
    const path = resolve(disk)
    const block =
      blocks.find((entry) => entry.inserted?.file === path || entry.inserted?.image?.filename === path) ??
      blocks.find((entry) => entry.device === DISK_ID && entry.inserted !== undefined)
    const device = block?.device || block?.inserted?.["node-name"]
    if (block === undefined || device === undefined || device === "") {
      return Effect.fail(
        new Internal({ message: `VM "${vm.name}" is running without ${disk} attached`, subject: vm.name })
      )
    }
    return Effect.succeed({ device, tags: (block.inserted?.image?.snapshots ?? []).map((snapshot) => snapshot.name) })
  })

const liveQmp = <A, E>(vm: VmRef, use: (qmp: Qmp) => Effect.Effect<A, E>) =>
  withQmp(vmFiles(vm.dir).qmp, use, { subject: vm.name })

/** Whether the running QEMU writes to `disk`: a file below its top (a checkpoint's frozen layer) it only reads. */
const writesTo = (qmp: Qmp, disk: string) =>
  Effect.map(qmp.execute<ReadonlyArray<BlockInfo>>("query-block"), (blocks) => {
    const image = blocks.find((block) => block.device === DISK_ID)?.inserted
    const written = image?.file ?? image?.image?.filename
    return written !== undefined && resolve(written) === resolve(disk)
  })

export const listSnapshots = (
  ref: VmDisk
): Effect.Effect<ReadonlyArray<Snapshot>, Internal | NoDisk | ControlUnreachable> =>
  Effect.gen(function* () {
    const disk = yield* requireDisk(ref)
    // HMP lists the snapshots of the file QEMU writes; a frozen layer below it is read with qemu-img.
    if (
      (yield* running(ref.vm)) &&
      (yield* liveQmp(ref.vm, (qmp) => writesTo(qmp, disk)).pipe(Effect.catchTag("ControlRejected", asInternal)))
    ) {
      // HMP's table has the same columns as qemu-img's; one parser reads both.
      const text = yield* liveQmp(ref.vm, (qmp) =>
        qmp.execute<string>("human-monitor-command", { "command-line": "info snapshots" })
      ).pipe(Effect.catchTag("ControlRejected", asInternal))
      return parseSnapshotTable(text)
    }
    return yield* img.listSnapshots(disk).pipe(Effect.catchTag("ProviderMissing", asInternal))
  })

export const saveSnapshot = (
  ref: VmDisk,
  tag: string
): Effect.Effect<void, Internal | NoDisk | ControlUnreachable | ControlRejected> =>
  Effect.gen(function* () {
    const disk = yield* requireDisk(ref)
    if (yield* running(ref.vm)) {
      return yield* liveQmp(ref.vm, (qmp) =>
        Effect.flatMap(findDisk(qmp, ref.vm, disk), ({ device }) =>
          qmp.execute("blockdev-snapshot-internal-sync", { device, name: tag }, { timeoutMs: 60_000 })
        )
      )
    }
    yield* img.createSnapshot(disk, tag).pipe(Effect.catchTag("ProviderMissing", asInternal))
  })

/** Applies a snapshot with qemu-img: the disk must not be open in QEMU. */
export const restoreSnapshot = (ref: VmDisk, tag: string): Effect.Effect<void, Internal | NoDisk> =>
  Effect.gen(function* () {
    const disk = yield* requireDisk(ref)
    yield* Effect.gen(function* () {
      // `qemu-img snapshot -a` looks the argument up as an id first.
      if ((yield* img.snapshotRows(disk)).some((row) => row.id === tag && row.snapshot.tag !== tag)) {
        return yield* new Internal({
          message: `snapshot tag "${tag}" is also the id of another snapshot on VM "${ref.vm.name}"; qemu-img cannot tell them apart`,
          subject: tag
        })
      }
      yield* img.applySnapshot(disk, tag)
    }).pipe(Effect.catchTag("ProviderMissing", asInternal))
  })

export const deleteSnapshot = (
  ref: VmDisk,
  tag: string
): Effect.Effect<void, Internal | NoDisk | ControlUnreachable | ControlRejected> =>
  Effect.gen(function* () {
    const disk = yield* requireDisk(ref)
    if (yield* running(ref.vm)) {
      return yield* liveQmp(ref.vm, (qmp) =>
        Effect.gen(function* () {
          const { device, tags } = yield* findDisk(qmp, ref.vm, disk)
          for (const _ of tags.filter((name) => name === tag))
            yield* qmp.execute("blockdev-snapshot-delete-internal-sync", { device, name: tag })
        })
      )
    }
    yield* Effect.gen(function* () {
      for (const _ of (yield* img.listSnapshots(disk)).filter((snapshot) => snapshot.tag === tag))
        yield* img.deleteSnapshot(disk, tag)
    }).pipe(Effect.catchTag("ProviderMissing", asInternal))
  })

/**
 * Makes `disk` a new overlay of `backing` that reads as snapshot `tag` of `source`, a file below
 * `backing` in its chain; no existing file changes, so whatever else reads them (a checkpoint's
 * forks, a clone) is unaffected. The snapshot is copied out as an overlay of `source`'s own
 * backing, then rebased in safe mode onto `backing`, which copies in what differs between the two.
 */
export const snapshotOverlay = (
  source: VmDisk,
  tag: string,
  disk: VmDisk,
  backing: VmDisk
): Effect.Effect<void, Internal | NoDisk> =>
  Effect.gen(function* () {
    const from = yield* requireDisk(source)
    const over = yield* requireDisk(backing)
    const path = hostPathOf(disk)
    yield* Effect.gen(function* () {
      const below = (yield* img
        .diskInfo(from)
        .pipe(Effect.catchTag("NotFound", (error) => new Internal({ message: error.message, subject: from }))))
        .backingPath
      const belowFormat =
        below === undefined
          ? undefined
          : (yield* img
              .diskInfo(below)
              .pipe(Effect.catchTag("NotFound", (error) => new Internal({ message: error.message, subject: below }))))
              .format
      yield* Effect.onError(
        Effect.zipRight(
          img.qemuImg(
            [
              "convert",
              "-q",
              "-f",
              "qcow2",
              "-l",
              `snapshot.name=${tag.replaceAll(",", ",,")}`,
              "-O",
              "qcow2",
              ...(below !== undefined ? ["-B", below, "-F", belowFormat ?? "qcow2"] : []),
              from,
              path
            ],
            path
          ),
          img.qemuImg(["rebase", "-q", "-f", "qcow2", "-b", over, "-F", "qcow2", path], path)
        ),
        () => Effect.promise(() => unlink(path).catch(() => undefined))
      )
    }).pipe(Effect.catchTag("ProviderMissing", asInternal))
  })
