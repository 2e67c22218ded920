import { readFile, writeFile } from "node:fs/promises"
import { join } from "node:path"
import { Effect, type Context } from "effect"
import type { Snapshot } from "@stoat/wire"
import {
  AlreadyRunning,
  type CannotReach,
  CapabilityUnavailable,
  DiskShrink,
  Internal,
  NoDisk,
  NotFound,
  NotRunning,
  ProviderStartFailed
} from "../errors.js"
import type { BootPlan, DiskRef, GuestSignals, Hypervisor, ResumePlan, StartedVm, VmDisk } from "../ports/hypervisor.js"
import { diskSizeBytes } from "../vm/config.js"
import { diskRefPath } from "../vm/disks.js"

/** What the in-memory hypervisor knows: running VMs, disks and their snapshots. Inspect it in tests. */
export class FakeHypervisorState {
  readonly running = new Map<string, { plan: BootPlan; startedAt: string }>()
  /** By host path; `backing` is the backing disk's path, `backingRef` the reference diskInfo answers. */
  readonly disks = new Map<string, { size: number; backing?: string; backingRef?: DiskRef; snapshots: Snapshot[] }>()
  accel: "kvm" | "tcg" = "tcg"
  starts = 0
  /** Set to make every start report this notice (as the QEMU provider does after falling back to TCG). */
  startNotice: string | undefined = undefined
  /** Set to a message to make every createDisk fail with `internal` (a failing `qemu-img create`). */
  createDiskError: string | undefined = undefined
  /** Set to make checkpoints refuse as QEMU does while a 9p share is mounted (capability_unavailable). */
  migrationBlocker: string | undefined = undefined
  /** Set to make every resume fail with `qemu_start_failed` (after its folder and disk were made). */
  resumeError: string | undefined = undefined
  /** QEMU's refusal of this plan (`portInUse`: a host forward it cannot bind), or undefined to start it. */
  startError: ((plan: BootPlan) => { readonly message: string; readonly portInUse?: number } | undefined) | undefined =
    undefined
  /** VM folders whose host does not answer (a remote provider's): status says so, with this error. */
  readonly unreachable = new Map<string, CannotReach>()
  /** Set to hold every resume until the promise settles (to interrupt one part way). */
  resumeGate: Promise<void> | undefined = undefined
  /** Paused time a checkpoint reports. */
  checkpointPausedMs = 120
  /** Folder each resumed VM was resumed from, by VM folder. */
  readonly resumedFrom = new Map<string, string>()
  /** Disks rebased (host paths), with the backing file each was left on (undefined: it stands alone). */
  readonly rebased: Array<{ readonly path: string; readonly backing: string | undefined }> = []
}

/** The plan a resume runs: the checkpointed VM's, with the new VM's folder, disk, port and share. */
const resumedPlan = (saved: BootPlan, target: ResumePlan): BootPlan => ({
  ...saved,
  vm: target.vm,
  sshPort: target.sshPort,
  disk: target.disk,
  workShare: target.workShare,
  forwards: []
})

/** Disks are kept by host path, as QEMU's would be found. */

/** The smallest PNG header the display could give (8-byte signature, IHDR of 640x480). */
const FAKE_PNG = Uint8Array.from(
  Buffer.concat([Buffer.from("89504e470d0a1a0a0000000d49484452", "hex"), Buffer.from([0, 0, 2, 128, 0, 0, 1, 224])])
)

export const makeFakeHypervisor = (state: FakeHypervisorState): Context.Tag.Service<Hypervisor> => {
  const disk = (ref: DiskRef) => {
    const path = diskRefPath(ref)
    const found = state.disks.get(path)
    return found ? Effect.succeed(found) : Effect.fail(new NotFound({ message: `no disk ${path}`, subject: path }))
  }
  // Like the QEMU adapter: snapshot calls on a disk that does not exist answer no_disk.
  const snapshotDisk = (ref: VmDisk) =>
    Effect.mapError(
      disk(ref),
      () =>
        new NoDisk({
          message: `VM "${ref.vm.name}" has no disk to snapshot (${diskRefPath(ref)} does not exist)`,
          subject: ref.vm.name
        })
    )
  return {
    status: (vm) =>
      Effect.sync(() => {
        const entry = state.running.get(vm.dir)
        const unreachable = state.unreachable.get(vm.dir)
        if (unreachable !== undefined) return { running: false, unreachable }
        return entry ? { running: true, pid: 4242, startedAt: entry.startedAt } : { running: false }
      }),
    start: (plan) =>
      Effect.suspend((): Effect.Effect<StartedVm, AlreadyRunning | ProviderStartFailed> => {
        if (state.running.has(plan.vm.dir))
          return Effect.fail(
            new AlreadyRunning({ message: `VM ${plan.vm.name} is already running`, subject: plan.vm.name })
          )
        const refused = state.startError?.(plan)
        if (refused !== undefined) return Effect.fail(new ProviderStartFailed({ ...refused, subject: plan.vm.name }))
        state.starts++
        const startedAt = new Date().toISOString()
        state.running.set(plan.vm.dir, { plan, startedAt })
        return Effect.succeed({
          running: true,
          pid: 4242,
          startedAt,
          accel: state.accel,
          ...(state.startNotice !== undefined ? { notice: state.startNotice } : {})
        })
      }),
    stop: (vm) =>
      Effect.suspend(() =>
        state.running.delete(vm.dir)
          ? Effect.void
          : Effect.fail(new NotRunning({ message: `VM ${vm.name} is not running`, subject: vm.name }))
      ),
    acceleration: Effect.sync(() => ({
      accel: state.accel,
      detail: state.accel === "kvm" ? "KVM works" : "KVM unusable; using TCG"
    })),
    // Like qemu-img, an empty placeholder file appears at `path` (its folder must exist), so code
    // that checks for the disk on the host sees it; size, backing and snapshots live in `state.disks`.
    createDisk: (ref, size, backing) =>
      Effect.suspend(() => {
        const path = diskRefPath(ref)
        if (state.createDiskError !== undefined)
          return Effect.fail(new Internal({ message: state.createDiskError, subject: path }))
        return Effect.tryPromise({
          try: () => writeFile(path, ""),
          catch: (cause) =>
            new Internal({
              message: `cannot create ${path}: ${cause instanceof Error ? cause.message : String(cause)}`,
              subject: path
            })
        }).pipe(
          Effect.tap(() => {
            state.disks.set(path, {
              size: diskSizeBytes(size),
              snapshots: [],
              ...(backing ? { backing: diskRefPath(backing), backingRef: backing } : {})
            })
          })
        )
      }),
    resizeDisk: (ref, size) =>
      Effect.flatMap(disk(ref), (found) =>
        diskSizeBytes(size) < found.size
          ? Effect.fail(new DiskShrink({ message: `disk can only grow`, subject: diskRefPath(ref) }))
          : Effect.sync(() => {
              found.size = diskSizeBytes(size)
            })
      ).pipe(
        Effect.catchTag("NotFound", (error) =>
          Effect.fail(new Internal({ message: error.message, subject: diskRefPath(ref) }))
        )
      ),
    diskInfo: (ref) =>
      Effect.map(disk(ref), (found) => ({
        virtualSize: found.size,
        actualSize: 0,
        format: "qcow2",
        ...(found.backingRef ? { backing: found.backingRef } : {})
      })),
    listSnapshots: (ref) => Effect.map(snapshotDisk(ref), (found) => found.snapshots),
    // Mechanisms only, as the port asks: saving adds one more of a tag, restore checks nothing.
    saveSnapshot: (ref, tag) =>
      Effect.map(snapshotDisk(ref), (found) => {
        const now = new Date()
        found.snapshots = [
          ...found.snapshots,
          {
            tag,
            vm_state: state.running.has(ref.vm.dir) ? "running" : "stopped",
            size_display: "0 B",
            created_display: now.toISOString(),
            created: now.toISOString(),
            size_bytes: 0
          }
        ]
      }),
    restoreSnapshot: (ref) => Effect.asVoid(snapshotDisk(ref)),
    deleteSnapshot: (ref, tag) =>
      Effect.map(snapshotDisk(ref), (found) => {
        found.snapshots = found.snapshots.filter((snapshot) => snapshot.tag !== tag)
      }),
    // A new empty file over `backing`, as the QEMU provider leaves one (its content is not modelled).
    snapshotOverlay: (source, _tag, ref, backing) =>
      Effect.gen(function* () {
        yield* snapshotDisk(source)
        const over = yield* snapshotDisk(backing)
        const path = diskRefPath(ref)
        yield* Effect.promise(() => writeFile(path, ""))
        state.disks.set(path, { size: over.size, snapshots: [], backing: diskRefPath(backing), backingRef: backing })
      }),
    screenshot: (vm) =>
      state.running.has(vm.dir)
        ? Effect.succeed({ png: FAKE_PNG, width: 640, height: 480 })
        : Effect.fail(new NotRunning({ message: `VM ${vm.name} is not running`, subject: vm.name })),
    checkpoint: (vm, request) =>
      Effect.gen(function* () {
        const entry = state.running.get(vm.dir)
        if (!entry) return yield* new NotRunning({ message: `VM ${vm.name} is not running`, subject: vm.name })
        if (state.migrationBlocker !== undefined) {
          return yield* new CapabilityUnavailable({
            message: `QEMU cannot save the state of VM "${vm.name}": ${state.migrationBlocker}`,
            subject: vm.name,
            reason: "migration_blocked"
          })
        }
        const current = yield* Effect.mapError(
          disk({ vm, file: request.disk }),
          (error) => new Internal({ message: error.message, subject: vm.name })
        )
        const folder = join(vm.dir, request.folder)
        yield* Effect.tryPromise({
          try: async () => {
            await writeFile(join(vm.dir, request.top), "")
            await writeFile(join(vm.dir, request.topPointer), `${request.top}\n`)
            await writeFile(join(folder, "state"), `fake state of ${vm.name}`)
            await writeFile(join(folder, "plan.json"), JSON.stringify(entry.plan))
          },
          catch: (cause) =>
            new Internal({
              message: `fake checkpoint: ${cause instanceof Error ? cause.message : String(cause)}`,
              subject: vm.name
            })
        })
        state.disks.set(join(vm.dir, request.top), {
          size: current.size,
          backing: join(vm.dir, request.disk),
          backingRef: { vm, file: request.disk },
          snapshots: []
        })
        return {
          pausedMs: state.checkpointPausedMs,
          stateFile: join(request.folder, "state"),
          stateBytes: Buffer.byteLength(`fake state of ${vm.name}`),
          ramMb: entry.plan.ramMb,
          cpus: entry.plan.cpus
        }
      }),
    resume: (checkpoint, target) =>
      Effect.gen(function* () {
        const folder = join(checkpoint.vm.dir, checkpoint.folder)
        if (state.running.has(target.vm.dir))
          return yield* new AlreadyRunning({
            message: `VM ${target.vm.name} is already running`,
            subject: target.vm.name
          })
        const gate = state.resumeGate
        if (gate !== undefined) yield* Effect.promise(() => gate)
        if (state.resumeError !== undefined)
          return yield* new ProviderStartFailed({ message: state.resumeError, subject: target.vm.name })
        const saved = yield* Effect.tryPromise({
          try: () => readFile(join(folder, "plan.json"), "utf8").then((text) => JSON.parse(text) as BootPlan),
          catch: () =>
            new ProviderStartFailed({ message: `checkpoint ${folder} has no saved plan`, subject: target.vm.name })
        })
        state.starts++
        const startedAt = new Date().toISOString()
        state.running.set(target.vm.dir, { plan: resumedPlan(saved, target), startedAt })
        state.resumedFrom.set(target.vm.dir, folder)
        return { running: true, pid: 4242, startedAt, accel: state.accel }
      }),
    rebaseDisk: (ref, backing) =>
      Effect.flatMap(
        Effect.mapError(disk(ref), (error) => new Internal({ message: error.message, subject: diskRefPath(ref) })),
        (found) =>
          Effect.sync(() => {
            const path = diskRefPath(ref)
            state.disks.set(path, {
              size: found.size,
              snapshots: found.snapshots,
              ...(backing !== undefined ? { backing: diskRefPath(backing), backingRef: backing } : {})
            })
            state.rebased.push({ path, backing: backing === undefined ? undefined : diskRefPath(backing) })
          })
      )
  }
}

/** Fake guests print no console: readiness goes straight to the transport's probe. */
export const fakeGuestSignals: Context.Tag.Service<GuestSignals> = { awaitSshd: () => Effect.succeed(false) }
