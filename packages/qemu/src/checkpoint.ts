import { createWriteStream } from "node:fs"
import { readFile, stat, unlink } from "node:fs/promises"
import { createServer } from "node:net"
import { basename, dirname, isAbsolute, join, relative, resolve } from "node:path"
import { Clock, Duration, Effect, Schedule } from "effect"
import {
  elapsedSince,
  pollUntil,
  advise,
  CapabilityUnavailable,
  Internal,
  ControlRejected,
  NotRunning,
  ProviderStartFailed,
  writeFileAtomic,
  type BootPlan,
  type CheckpointRequest,
  type CheckpointTaken,
  type ControlUnreachable,
  type ProviderMissing,
  type DiskRef,
  type ResumePlan,
  type VmDisk,
  type VmRef
} from "@stoat/core"
import { hostPathOf, vmFilePath } from "./disks.js"
import { DISK_ID, vmFiles } from "./argv.js"
import { linkOrCopy, readBootRecord, launchQemu } from "./lifecycle.js"
import { readRunState } from "./process.js"
import * as img from "./qemu-img.js"
import { withQmp, type Qmp, type QmpError, type QmpEvent } from "./qmp.js"

/** What a checkpoint folder holds for QEMU, beside what core keeps there. */
export const checkpointFiles = (folder: string) => ({
  state: join(folder, "state"),
  initrd: join(folder, "initrd.img"),
  /** The plan and accelerator the saved QEMU ran with: a resume needs the same devices. */
  qemu: join(folder, "qemu.json")
})

interface SavedQemu {
  readonly plan: BootPlan
  readonly accel: "kvm" | "tcg"
}

const errorText = (cause: unknown) => (cause instanceof Error ? cause.message : String(cause))

/** Migration bandwidth while the guest is paused anyway: as fast as the host writes (bytes/s). */
const UNLIMITED_BANDWIDTH = 1024 ** 4
const MIGRATE_POLL_MS = 10
const MIGRATE_TIMEOUT_MS = 300_000
/** The pause QEMU aims for while the guest runs (its default), and how long it may try before it stops the guest for the rest. */
const TARGET_DOWNTIME_MS = 300
const PRECOPY_BUDGET_MS = 5_000
/** QEMU's largest downtime limit: with it the next iteration is the last. */
const MAX_DOWNTIME_MS = 2_000_000

/**
 * Receives one migration stream on a unix socket and writes it to `out`; completes once the file
 * holds all of it. Receiving it ourselves (rather than `exec:cat > file`) tells us exactly when
 * the state is on disk: QEMU does not wait for an exec child to finish writing.
 */
const receiveState = (socketPath: string, out: string) =>
  Effect.acquireRelease(
    Effect.async<{ readonly done: Promise<number>; readonly close: () => void }, Internal>((resume) => {
      let settle: { ok: (bytes: number) => void; fail: (error: Error) => void } | undefined
      const done = new Promise<number>((ok, fail) => (settle = { ok, fail }))
      // Unobserved until the caller awaits it; a failure before then must not be unhandled.
      done.catch(() => undefined)
      const server = createServer((socket) => {
        server.close()
        const file = createWriteStream(out, { mode: 0o600 })
        let bytes = 0
        socket.on("data", (chunk: Buffer) => (bytes += chunk.length))
        socket.on("error", (error) => settle?.fail(error))
        file.on("error", (error) => settle?.fail(error))
        file.on("close", () => settle?.ok(bytes))
        socket.pipe(file)
      })
      server.once("error", (error) =>
        resume(
          Effect.fail(
            new Internal({ message: `cannot listen on ${socketPath}: ${error.message}`, subject: socketPath })
          )
        )
      )
      unlink(socketPath)
        .catch(() => undefined)
        .then(() => server.listen(socketPath, () => resume(Effect.succeed({ done, close: () => server.close() }))))
      return Effect.sync(() => server.close())
    }),
    (receiver) => Effect.promise(() => (receiver.close(), unlink(socketPath).catch(() => undefined)))
  )

interface BlockInfo {
  readonly device: string
  readonly inserted?: { readonly file?: string; readonly image?: { readonly filename?: string } }
}

/**
 * Puts a fresh overlay on top of the disk and switches QEMU onto it. The old file keeps its
 * name: QEMU reopens a backing file by name (read-only) when its role changes, so a moved file
 * would be replaced under it by whatever now holds that name. A failure before the switch
 * removes the overlay; after it, the pointer names the new top before anything else happens.
 */
const switchDisk = (qmp: Qmp, request: CheckpointRequest, vm: VmRef, virtualSize: number, format: string) =>
  Effect.gen(function* () {
    yield* Effect.onError(
      Effect.zipRight(
        img.qemuImg(
          ["create", "-q", "-f", "qcow2", "-F", format, "-b", request.disk, "-u", request.top, String(virtualSize)],
          request.top
        ),
        qmp.execute("blockdev-snapshot-sync", {
          device: DISK_ID,
          "snapshot-file": request.top,
          format: "qcow2",
          mode: "existing"
        })
      ),
      () => Effect.promise(() => unlink(request.top).catch(() => undefined))
    )
    yield* Effect.tryPromise({
      try: () => writeFileAtomic(request.topPointer, `${relative(vm.dir, request.top)}\n`),
      catch: (cause) =>
        new Internal({
          message: `VM "${vm.name}" now writes to ${request.top} but ${request.topPointer} cannot say so: ${errorText(cause)}`,
          subject: vm.name
        })
    })
  })

type MigrationStatus = { readonly status?: string; readonly "error-desc"?: string }

/**
 * Polls query-migrate until the migration reaches `wanted`; a failed, cancelled or endless one is
 * monitor_rejected. `slow` runs once if it takes longer than its `afterMs`.
 */
const migrationReaches = (
  qmp: Qmp,
  vm: VmRef,
  wanted: string,
  slow?: { readonly afterMs: number; readonly then: Effect.Effect<unknown, QmpError> }
) =>
  Effect.gen(function* () {
    const started = yield* Clock.currentTimeMillis
    let hurried = false
    const look = Effect.gen(function* () {
      const info = yield* qmp.execute<MigrationStatus>("query-migrate")
      if (info.status === wanted) return true
      if (slow !== undefined && !hurried && (yield* elapsedSince(started)) > slow.afterMs) {
        hurried = true
        yield* slow.then
      }
      if (info.status === "failed" || info.status === "cancelled") {
        return yield* new ControlRejected({
          message: `saving the state of VM "${vm.name}" failed: ${info["error-desc"] ?? info.status}`,
          subject: vm.name
        })
      }
      return false
    })
    yield* pollUntil(look, {
      schedule: Schedule.spaced(Duration.millis(MIGRATE_POLL_MS)),
      until: (reached) => reached,
      within: Duration.millis(MIGRATE_TIMEOUT_MS),
      onTimeout: () =>
        new ControlRejected({
          message: `saving the state of VM "${vm.name}" took over ${MIGRATE_TIMEOUT_MS / 1000} s`,
          subject: vm.name
        })
    })
  })

/** QEMU's own time of an event (host clock, microseconds), in milliseconds. */
const eventMs = (event: QmpEvent) =>
  event.timestamp === undefined ? undefined : event.timestamp.seconds * 1000 + event.timestamp.microseconds / 1000

/** The file QEMU writes the VM's disk to now (the top of its chain). */
const writtenDisk = (qmp: Qmp) =>
  Effect.map(qmp.execute<ReadonlyArray<BlockInfo>>("query-block"), (blocks) => {
    const image = blocks.find((block) => block.device === DISK_ID)?.inserted
    return image?.file ?? image?.image?.filename
  })

/** Why QEMU would refuse to migrate this VM now (a mounted 9p share, for one), or undefined. */
const migrationBlocker = (qmp: Qmp) =>
  Effect.map(qmp.execute<{ readonly "blocked-reasons"?: ReadonlyArray<string> }>("query-migrate"), (info) => {
    const reasons = info["blocked-reasons"] ?? []
    return reasons.length > 0 ? reasons.join("; ") : undefined
  })

/**
 * The checkpoint: QMP `stop`, the disk switched onto a new overlay (the old image becomes the
 * checkpoint's frozen disk), RAM and device state migrated into the folder, `cont`. Everything between
 * `stop` and `cont` runs uninterruptibly, and `cont` always runs, so the source never stays paused.
 */
export const checkpointVm = (
  vm: VmRef,
  names: CheckpointRequest
): Effect.Effect<
  CheckpointTaken,
  NotRunning | CapabilityUnavailable | ControlUnreachable | ControlRejected | Internal | ProviderMissing
> =>
  Effect.gen(function* () {
    const files = vmFiles(vm.dir)
    // From here on every name of the request is its file on this host.
    const request: CheckpointRequest = {
      disk: vmFilePath(vm, names.disk),
      top: vmFilePath(vm, names.top),
      topPointer: vmFilePath(vm, names.topPointer),
      folder: vmFilePath(vm, names.folder)
    }
    const saved = checkpointFiles(request.folder)
    if (!(yield* Effect.sync(() => readRunState(vm))).running) {
      return yield* new NotRunning({
        message: `VM "${vm.name}" is not running; only a running VM can be checkpointed`,
        subject: vm.name
      })
    }
    const record = yield* readBootRecord(vm)
    const plan = record?.plan
    if (plan === undefined || record?.accel === undefined) {
      return yield* new CapabilityUnavailable({
        message: `VM "${vm.name}" was started by an older stoat without the devices a checkpoint needs`,
        subject: vm.name,
        hint: advise(
          "restart it",
          { operation: "vm.stop", input: { vm: vm.name } },
          { operation: "vm.start", input: { vm: vm.name } }
        ),
        reason: "restart_required"
      })
    }
    if (plan.disk === undefined) {
      return yield* new CapabilityUnavailable({
        message: `VM "${vm.name}" runs without a disk; only a VM with one can be checkpointed`,
        subject: vm.name,
        reason: "disk_required"
      })
    }
    const disk = yield* img
      .diskInfo(request.disk)
      .pipe(Effect.catchTag("NotFound", (error) => new Internal({ message: error.message, subject: vm.name })))
    const fail = (what: string) => (cause: unknown) =>
      new Internal({ message: `${what}: ${errorText(cause)}`, subject: vm.name })
    if (plan.kernel !== undefined) {
      yield* Effect.tryPromise({
        try: () => linkOrCopy(files.initrd, saved.initrd),
        catch: fail(`cannot keep the initrd of VM "${vm.name}"`)
      })
    }
    const qemuRecord: SavedQemu = { plan, accel: record.accel }
    yield* Effect.tryPromise({
      try: () => writeFileAtomic(saved.qemu, JSON.stringify(qemuRecord)),
      catch: fail("cannot write the checkpoint's QEMU record")
    })

    const pausedMs = yield* Effect.scoped(
      Effect.gen(function* () {
        const receiver = yield* receiveState(files.migration, saved.state)
        return yield* withQmp(
          files.qmp,
          (qmp) =>
            Effect.gen(function* () {
              const current = yield* writtenDisk(qmp)
              if (current === undefined || resolve(current) !== resolve(request.disk)) {
                return yield* new Internal({
                  message: `VM "${vm.name}" writes to ${current ?? "no disk"}, not ${request.disk}; its disk.top does not match the running QEMU`,
                  subject: vm.name
                })
              }
              const blocker = yield* migrationBlocker(qmp)
              if (blocker !== undefined) {
                return yield* new CapabilityUnavailable({
                  message: `QEMU cannot save the state of VM "${vm.name}": ${blocker}`,
                  subject: vm.name,
                  reason: "migration_blocked"
                })
              }
              yield* qmp.execute("migrate-set-parameters", {
                "max-bandwidth": UNLIMITED_BANDWIDTH,
                "downtime-limit": TARGET_DOWNTIME_MS
              })
              // Pre-copy: RAM is sent while the guest runs; QEMU stops it only for what is left,
              // and waits (pre-switchover) so the disk is switched at that very instant.
              yield* qmp.execute("migrate-set-capabilities", {
                capabilities: [{ capability: "pause-before-switchover", state: true }]
              })
              const { status } = yield* qmp.execute<{ readonly status: string }>("query-status")
              const issued = Date.now()
              const saving = Effect.gen(function* () {
                yield* qmp.execute("migrate", { uri: `unix:${files.migration}` })
                // A guest that dirties RAM faster than it is saved would never converge: after a while, stop it for the rest.
                yield* migrationReaches(qmp, vm, "pre-switchover", {
                  afterMs: PRECOPY_BUDGET_MS,
                  then: qmp.execute("migrate-set-parameters", { "downtime-limit": MAX_DOWNTIME_MS })
                })
                yield* switchDisk(qmp, request, vm, disk.virtualSize, disk.format)
                yield* qmp.execute("migrate-continue", { state: "pre-switchover" })
                yield* migrationReaches(qmp, vm, "completed")
                yield* Effect.tryPromise({ try: () => receiver.done, catch: fail("the state did not reach its file") })
              })
              // A failure part way cancels the migration; a guest someone else paused stays paused, a running one always runs on.
              const resume = status === "running" ? Effect.ignore(qmp.execute("cont")) : Effect.void
              yield* Effect.uninterruptible(
                Effect.ensuring(
                  Effect.tapError(saving, () => Effect.ignore(qmp.execute("migrate_cancel"))),
                  resume
                )
              )
              // How long the guest stood still, by QEMU's own clock: its STOP to its RESUME event.
              const stopped = (yield* qmp.events).find((event) => event.event === "STOP")
              const resumed = status === "running" ? yield* Effect.option(qmp.waitForEvent("RESUME", 5_000)) : undefined
              const from = stopped === undefined ? undefined : eventMs(stopped)
              const to = resumed !== undefined && resumed._tag === "Some" ? eventMs(resumed.value) : undefined
              return from !== undefined && to !== undefined ? Math.max(0, Math.round(to - from)) : Date.now() - issued
            }),
          { subject: vm.name, commandTimeoutMs: 60_000 }
        )
      })
    )
    const stateBytes = yield* Effect.promise(() =>
      stat(saved.state).then(
        (info) => info.size,
        () => 0
      )
    )
    return { pausedMs, stateFile: relative(vm.dir, saved.state), stateBytes, ramMb: plan.ramMb, cpus: plan.cpus }
  })

const readSaved = (folder: string, vm: VmRef): Effect.Effect<SavedQemu, ProviderStartFailed> =>
  Effect.tryPromise({
    try: () => readFile(checkpointFiles(folder).qemu, "utf8").then((text) => JSON.parse(text) as SavedQemu),
    catch: (cause) =>
      new ProviderStartFailed({
        message: `checkpoint ${folder} cannot be resumed: its QEMU record is unreadable (${errorText(cause)})`,
        subject: vm.name
      })
  })

/**
 * The seed a saved plan names. Plans saved before the seed became a VM file name it by its host
 * path, `<VM folder>/ovl/seed.iso` of the VM that first booted with it.
 */
export const savedSeed = (
  seed: VmDisk | string | undefined,
  target: VmRef
): Effect.Effect<VmDisk | undefined, ProviderStartFailed> => {
  if (typeof seed !== "string") return Effect.succeed(seed)
  const dir = dirname(dirname(seed))
  return isAbsolute(seed) && relative(dir, seed) === LEGACY_SEED_FILE
    ? Effect.succeed({ vm: { name: basename(dir), dir }, file: LEGACY_SEED_FILE })
    : new ProviderStartFailed({
        message: `the checkpoint's QEMU record names an unknown seed file ${seed}`,
        subject: target.name
      })
}
const LEGACY_SEED_FILE = "ovl/seed.iso"

/** A new VM from a checkpoint: the saved plan with its own folder, disk, SSH port and share; no port forwards. */
export const resumeVm = (
  qemu: string,
  checkpoint: { readonly vm: VmRef; readonly folder: string },
  target: ResumePlan
) =>
  Effect.gen(function* () {
    const folder = vmFilePath(checkpoint.vm, checkpoint.folder)
    const saved = yield* readSaved(folder, target.vm)
    // The guest already booted with its identity: the saved initrd carries it, the plan need not.
    const { guestIdentity: _identity, seedIso, ...plan } = saved.plan
    const seed = yield* savedSeed(seedIso, target.vm)
    const files = checkpointFiles(folder)
    const resumed: BootPlan = {
      ...plan,
      ...(seed !== undefined ? { seedIso: seed } : {}),
      vm: target.vm,
      sshPort: target.sshPort,
      disk: target.disk,
      workShare: target.workShare,
      forwards: []
    }
    const state = yield* launchQemu(
      resumed,
      { qemu, accel: saved.accel },
      { state: files.state, ...(plan.kernel !== undefined ? { initrd: files.initrd } : {}) }
    )
    return { ...state, accel: saved.accel }
  })

/** `qemu-img rebase` in safe mode: what the disk reads through the dropped layers is copied into it. */
export const rebaseDisk = (
  disk: VmDisk,
  backingDisk: DiskRef | undefined
): Effect.Effect<void, Internal | ProviderMissing> =>
  Effect.gen(function* () {
    const path = hostPathOf(disk)
    const backing = backingDisk === undefined ? undefined : hostPathOf(backingDisk)
    const format =
      backing === undefined
        ? undefined
        : (yield* img
            .diskInfo(backing)
            .pipe(Effect.catchTag("NotFound", (error) => new Internal({ message: error.message, subject: path }))))
            .format
    yield* img.qemuImg(
      ["rebase", "-q", "-f", "qcow2", "-b", backing ?? "", ...(format !== undefined ? ["-F", format] : []), path],
      path
    )
  })
