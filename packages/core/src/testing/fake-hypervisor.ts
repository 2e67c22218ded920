import { readFile, writeFile } from "node:fs/promises"
import { join, relative } from "node:path"
import { Effect, type Context } from "effect"
import type { Snapshot } from "@stoat/wire"
import { AlreadyRunning, CapabilityUnavailable, DiskShrink, Internal, NoDisk, NotFound, NotRunning, QemuStartFailed } from "../errors.js"
import { Hypervisor, type BootPlan, type ResumePlan, type StartedVm } from "../ports/hypervisor.js"
import { diskSizeBytes } from "../vm/config.js"

/** What the in-memory hypervisor knows: running VMs, disks and their snapshots. Inspect it in tests. */
export class FakeHypervisorState {
  readonly running = new Map<string, { plan: BootPlan; startedAt: string }>()
  readonly disks = new Map<string, { size: number; backing?: string; snapshots: Snapshot[] }>()
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
  /** QEMU's refusal of this plan (e.g. a host forward it cannot bind), or undefined to start it. */
  startError: ((plan: BootPlan) => string | undefined) | undefined = undefined
  /** Set to hold every resume until the promise settles (to interrupt one part way). */
  resumeGate: Promise<void> | undefined = undefined
  /** Paused time a checkpoint reports. */
  checkpointPausedMs = 120
  /** Folder each resumed VM was resumed from, by VM folder. */
  readonly resumedFrom = new Map<string, string>()
  /** Disks rebased, with the backing file each was left on (undefined: it stands alone). */
  readonly rebased: Array<{ readonly path: string; readonly backing: string | undefined }> = []
  /** Every localImage call: which image, and the root disk it was pinned to (a VM's base). */
  readonly localImageCalls: Array<{ readonly id: string; readonly rootDisk?: string }> = []
}

/** The plan a resume runs: the checkpointed VM's, with the new VM's folder, disk, port and share. */
const resumedPlan = (saved: BootPlan, target: ResumePlan): BootPlan => ({ ...saved, vm: target.vm, sshPort: target.sshPort, disk: target.disk, workShare: target.workShare, forwards: [] })

export const makeFakeHypervisor = (state: FakeHypervisorState): Context.Tag.Service<Hypervisor> => {
  const disk = (path: string) => {
    const found = state.disks.get(path)
    return found ? Effect.succeed(found) : Effect.fail(new NotFound({ message: `no disk ${path}`, subject: path }))
  }
  // Like the QEMU adapter: snapshot calls on a disk that does not exist answer no_disk.
  const snapshotDisk = (vm: { readonly name: string }, path: string) =>
    Effect.mapError(disk(path), () => new NoDisk({ message: `VM "${vm.name}" has no disk to snapshot (${path} does not exist)`, subject: vm.name }))
  return {
    status: (vm) =>
      Effect.sync(() => {
        const entry = state.running.get(vm.dir)
        return entry ? { running: true, pid: 4242, startedAt: entry.startedAt } : { running: false }
      }),
    start: (plan) =>
      Effect.suspend((): Effect.Effect<StartedVm, AlreadyRunning | QemuStartFailed> => {
        if (state.running.has(plan.vm.dir)) return Effect.fail(new AlreadyRunning({ message: `VM ${plan.vm.name} is already running`, subject: plan.vm.name }))
        const refused = state.startError?.(plan)
        if (refused !== undefined) return Effect.fail(new QemuStartFailed({ message: refused, subject: plan.vm.name }))
        state.starts++
        const startedAt = new Date().toISOString()
        state.running.set(plan.vm.dir, { plan, startedAt })
        return Effect.succeed({ running: true, pid: 4242, startedAt, accel: state.accel, ...(state.startNotice !== undefined ? { notice: state.startNotice } : {}) })
      }),
    // Fake guests print no console; readiness goes straight to the transport's probe.
    awaitSshd: () => Effect.succeed(false),
    stop: (vm) =>
      Effect.suspend(() =>
        state.running.delete(vm.dir) ? Effect.void : Effect.fail(new NotRunning({ message: `VM ${vm.name} is not running`, subject: vm.name }))
      ),
    probeAccelerator: Effect.sync(() => ({ accel: state.accel, detail: state.accel === "kvm" ? "KVM works" : "KVM unusable; using TCG" })),
    // Like qemu-img, an empty placeholder file appears at `path` (its folder must exist), so code
    // that checks for the disk on the host sees it; size, backing and snapshots live in `state.disks`.
    createDisk: (path, size, backing) =>
      Effect.suspend(() => {
        if (state.createDiskError !== undefined) return Effect.fail(new Internal({ message: state.createDiskError, subject: path }))
        return Effect.tryPromise({
          try: () => writeFile(path, ""),
          catch: (cause) => new Internal({ message: `cannot create ${path}: ${cause instanceof Error ? cause.message : String(cause)}`, subject: path })
        }).pipe(
          Effect.tap(() => {
            state.disks.set(path, { size: diskSizeBytes(size), snapshots: [], ...(backing ? { backing } : {}) })
          })
        )
      }),
    resizeDisk: (path, size) =>
      Effect.flatMap(disk(path), (found) =>
        diskSizeBytes(size) < found.size
          ? Effect.fail(new DiskShrink({ message: `disk can only grow`, subject: path }))
          : Effect.sync(() => {
              found.size = diskSizeBytes(size)
            })
      ).pipe(Effect.catchTag("NotFound", (error) => Effect.fail(new Internal({ message: error.message, subject: path })))),
    diskInfo: (path) =>
      Effect.map(disk(path), (found) => ({ virtualSize: found.size, actualSize: 0, format: "qcow2", ...(found.backing ? { backingFile: found.backing } : {}) })),
    listSnapshots: (vm, path) => Effect.map(snapshotDisk(vm, path), (found) => found.snapshots),
    saveSnapshot: (vm, path, tag) =>
      Effect.map(snapshotDisk(vm, path), (found) => {
        const now = new Date()
        found.snapshots = [
          ...found.snapshots.filter((snapshot) => snapshot.tag !== tag),
          {
            tag,
            vm_state: state.running.has(vm.dir) ? "running" : "stopped",
            size_display: "0 B",
            created_display: now.toISOString(),
            created: now.toISOString(),
            size_bytes: 0
          }
        ]
      }),
    restoreSnapshot: (vm, path, tag) =>
      Effect.flatMap(snapshotDisk(vm, path), (found): Effect.Effect<void, NotFound | AlreadyRunning> =>
        state.running.has(vm.dir)
          ? Effect.fail(new AlreadyRunning({ message: `stop VM ${vm.name} before restoring`, subject: vm.name }))
          : found.snapshots.some((snapshot) => snapshot.tag === tag)
            ? Effect.void
            : Effect.fail(new NotFound({ message: `no snapshot "${tag}"`, subject: tag }))
      ),
    deleteSnapshot: (vm, path, tag) =>
      Effect.flatMap(snapshotDisk(vm, path), (found) => {
        const before = found.snapshots.length
        found.snapshots = found.snapshots.filter((snapshot) => snapshot.tag !== tag)
        return before === found.snapshots.length ? Effect.fail(new NotFound({ message: `no snapshot "${tag}"`, subject: tag })) : Effect.void
      }),
    screenshot: (vm) =>
      state.running.has(vm.dir)
        ? Effect.succeed({ width: 640, height: 480, bytes: 0 })
        : Effect.fail(new NotRunning({ message: `VM ${vm.name} is not running`, subject: vm.name })),
    checkpoint: (vm, request) =>
      Effect.gen(function* () {
        const entry = state.running.get(vm.dir)
        if (!entry) return yield* new NotRunning({ message: `VM ${vm.name} is not running`, subject: vm.name })
        if (state.migrationBlocker !== undefined) {
          return yield* new CapabilityUnavailable({ message: `QEMU cannot save the state of VM "${vm.name}": ${state.migrationBlocker}`, subject: vm.name, reason: "migration_blocked" })
        }
        const current = yield* Effect.mapError(disk(request.disk), (error) => new Internal({ message: error.message, subject: vm.name }))
        yield* Effect.tryPromise({
          try: async () => {
            await writeFile(request.top, "")
            await writeFile(request.topPointer, `${relative(vm.dir, request.top)}\n`)
            await writeFile(join(request.folder, "state"), `fake state of ${vm.name}`)
            await writeFile(join(request.folder, "plan.json"), JSON.stringify(entry.plan))
          },
          catch: (cause) => new Internal({ message: `fake checkpoint: ${cause instanceof Error ? cause.message : String(cause)}`, subject: vm.name })
        })
        state.disks.set(request.top, { size: current.size, backing: request.disk, snapshots: [] })
        return { pausedMs: state.checkpointPausedMs, stateFile: join(request.folder, "state"), stateBytes: Buffer.byteLength(`fake state of ${vm.name}`), ramMb: entry.plan.ramMb, cpus: entry.plan.cpus }
      }),
    resume: (folder, target) =>
      Effect.gen(function* () {
        if (state.running.has(target.vm.dir)) return yield* new AlreadyRunning({ message: `VM ${target.vm.name} is already running`, subject: target.vm.name })
        const gate = state.resumeGate
        if (gate !== undefined) yield* Effect.promise(() => gate)
        if (state.resumeError !== undefined) return yield* new QemuStartFailed({ message: state.resumeError, subject: target.vm.name })
        const saved = yield* Effect.tryPromise({
          try: () => readFile(join(folder, "plan.json"), "utf8").then((text) => JSON.parse(text) as BootPlan),
          catch: () => new QemuStartFailed({ message: `checkpoint ${folder} has no saved plan`, subject: target.vm.name })
        })
        state.starts++
        const startedAt = new Date().toISOString()
        state.running.set(target.vm.dir, { plan: resumedPlan(saved, target), startedAt })
        state.resumedFrom.set(target.vm.dir, folder)
        return { running: true, pid: 4242, startedAt, accel: state.accel }
      }),
    rebaseDisk: (path, backing) =>
      Effect.flatMap(
        Effect.mapError(disk(path), (error) => new Internal({ message: error.message, subject: path })),
        (found) =>
          Effect.sync(() => {
            state.disks.set(path, { size: found.size, snapshots: found.snapshots, ...(backing !== undefined ? { backing } : {}) })
            state.rebased.push({ path, backing })
          })
      ),
    validate: () => Effect.void,
    // Like the QEMU adapter: debian-12-mini boots an overlay of a root disk; tiny is all initrd.
    localImage: (id, _onStage, options) =>
      Effect.sync(() => {
        state.localImageCalls.push({ id, ...(options?.rootDisk !== undefined ? { rootDisk: options.rootDisk } : {}) })
        return {
        kernel: `/fake/${id}/vmlinux`,
        initrd: `/fake/${id}/initrd.img`,
        append: "console=ttyS0",
        ...(id === "debian-12-mini" ? { rootDisk: `/fake/${id}/rootfs.qcow2` } : {})
        }
      })
  }
}
