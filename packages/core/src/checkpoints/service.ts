import { rename } from "node:fs/promises"
import { basename, join, relative, sep } from "node:path"
import { Clock, Context, Duration, Effect, Either, Exit, Layer, Option, Schedule } from "effect"
import type { Checkpoint } from "@stoat/wire"
import { DataRoot } from "../platform/data-root.js"
import { advise, adviseFirst, Broken, InUse, NameTaken, NoDisk, NotFound, Timeout, type StoatError } from "../errors.js"
import { GuestDefinitions } from "../guest-definitions/definitions.js"
import { HostProbe } from "../platform/host.js"
import { Locks } from "../platform/locks.js"
import { validateVmName } from "../vm/names.js"
import * as fs from "../platform/fs.js"
import { elapsedSince } from "../platform/poll.js"
import { Hypervisor, type DiskInfo, type DiskRef, type VmRef } from "../ports/hypervisor.js"
import { GuestTransport } from "../ports/guest-transport.js"
import type { VmConfig } from "../vm/config.js"
import { addVms, checkMemory } from "../vm/folders.js"
import { isRunning, loadVm, requireRunning, sshTarget, vmRef, type OkRecord } from "../vm/records.js"
import { diskFile, diskPath, diskRefPath, firstDisk, newLayerFile, topPointerPath, vmDisk } from "../vm/disks.js"
import { VmStore } from "../vm/store.js"
import { mountShares, setForkIdentity, setGuestClock, unmountShares } from "./guest.js"
import { asRoot } from "../guest/root.js"
import { progressLine } from "../context/progress.js"
import {
  checkpointDir,
  checkpointNames,
  checkpointProblem,
  checkpointsDir,
  layersDir,
  metadataFile,
  readCheckpoint,
  TEMP_PREFIX,
  validateCheckpointName,
  type CheckpointFile
} from "./layout.js"

/** The most forks one call starts: they all boot at once on this host. */
export const MAX_FORKS_PER_CALL = 16

/** A checkpoint folder younger than this may be one another process is still taking. */
const TEMP_GRACE_MS = 10 * 60 * 1000

/** How long a fork may take by default from its QEMU starting to its sshd answering. */
export const FORK_READY_TIMEOUT_MS = 60_000

export interface Dependents {
  readonly checkpoints: ReadonlyArray<string>
  /** Other VMs whose disks read through files in this VM's folder (forks of its checkpoints, clones). */
  readonly vms: ReadonlyArray<{ readonly name: string; readonly running: boolean }>
}

export interface TakenCheckpoint {
  readonly checkpoint: Checkpoint
  readonly tookMs: number
  readonly remounted: ReadonlyArray<string>
}

export interface ForkedVms {
  readonly forks: ReadonlyArray<{ readonly record: OkRecord; readonly readyMs: number }>
  readonly tookMs: number
}

/** Checkpoints of running VMs and the warm forks started from them. */
export class Checkpoints extends Context.Tag("stoat/Checkpoints")<
  Checkpoints,
  {
    readonly create: (vm: string, name: string) => Effect.Effect<TakenCheckpoint, StoatError>
    /** Every checkpoint of one VM, or of every VM. */
    readonly list: (vm?: string) => Effect.Effect<ReadonlyArray<Checkpoint>, StoatError>
    /** Deletes a checkpoint's state; its disk layer stays part of the VM's disk, so forks keep working. */
    readonly remove: (vm: string, name: string) => Effect.Effect<void, StoatError>
    readonly fork: (
      vm: string,
      checkpoint: string,
      names: ReadonlyArray<string>,
      options?: { readonly readyTimeoutMs?: number }
    ) => Effect.Effect<ForkedVms, StoatError>
    /** What a VM's destruction would take with it or break. */
    readonly dependents: (record: OkRecord) => Effect.Effect<Dependents, StoatError>
    /** Copies into each (stopped) dependent VM's disk what it reads from this VM's folder; returns their names. */
    readonly detachDependents: (record: OkRecord) => Effect.Effect<ReadonlyArray<string>, StoatError>
    /** Checkpoint files nothing can use: abandoned temp folders, unusable checkpoints, layers no disk reads. */
    readonly orphans: Effect.Effect<ReadonlyArray<string>, StoatError>
  }
>() {}

/** One disk under a VM's disk: as the hypervisor names it, and the host file that is in this data root. */
interface ChainLayer {
  readonly disk: DiskRef
  readonly path: string
}
type Chain = ReadonlyArray<ChainLayer>

const readsThrough = (chain: Chain | undefined, path: string): boolean =>
  chain?.some((layer) => layer.path === path) ?? false

const make = Effect.gen(function* () {
  const context = yield* Effect.context<
    DataRoot | VmStore | GuestDefinitions | Hypervisor | GuestTransport | Locks | HostProbe
  >()
  const root = yield* DataRoot
  const store = yield* VmStore
  const hypervisor = yield* Hypervisor
  const transport = yield* GuestTransport
  const locks = yield* Locks

  const exists = (path: string) => Effect.orElseSucceed(fs.exists(path), () => false)

  const inFolder = (folder: string) => (path: string) =>
    path.startsWith(folder.endsWith(sep) ? folder : `${folder}${sep}`)

  /** The disks under a VM's disk, nearest first; undefined when some layer cannot be read. */
  const backingChain = (record: OkRecord): Effect.Effect<Chain | undefined> =>
    Effect.gen(function* () {
      const chain: ChainLayer[] = []
      let current: DiskRef = vmDisk(record)
      for (let depth = 0; depth < 64; depth++) {
        const info: Either.Either<DiskInfo, StoatError> = yield* Effect.either(hypervisor.diskInfo(current))
        if (Either.isLeft(info)) return undefined
        const backing: DiskRef | undefined = info.right.backing
        if (backing === undefined) return chain
        chain.push({ disk: backing, path: diskRefPath(backing) })
        current = backing
      }
      return undefined
    })

  /** Every VM with a disk and the backing chain of that disk. */
  const chains = Effect.gen(function* () {
    const records = yield* store.list
    const found: Array<{ readonly record: OkRecord; readonly chain: Chain | undefined }> = []
    for (const record of records) {
      if (record.kind !== "ok" || !(yield* exists(diskPath(record)))) continue
      found.push({ record, chain: yield* backingChain(record) })
    }
    return found
  })

  const view = (
    record: OkRecord,
    name: string,
    all: ReadonlyArray<{ readonly record: OkRecord; readonly chain: Chain | undefined }>
  ) =>
    Effect.gen(function* () {
      const read = yield* readCheckpoint(checkpointDir(record.dir, name))
      if (Either.isLeft(read)) {
        return {
          vm: record.name,
          name,
          created: "",
          ram_mb: 0,
          cpus: 0,
          state_bytes: 0,
          paused_ms: 0,
          dependents: [],
          usable: false,
          problem: read.left
        } satisfies Checkpoint
      }
      const file = read.right
      const problem = yield* checkpointProblem(file)
      return {
        vm: record.name,
        name,
        created: file.created,
        ram_mb: file.ram_mb,
        cpus: file.cpus,
        state_bytes: file.state_bytes,
        paused_ms: file.paused_ms,
        dependents: all
          .filter((entry) => entry.record.name !== record.name && readsThrough(entry.chain, file.layer))
          .map((entry) => entry.record.name),
        usable: problem === undefined,
        ...(problem !== undefined ? { problem } : {})
      } satisfies Checkpoint
    })

  const notFoundCheckpoint = (record: OkRecord, name: string) =>
    Effect.flatMap(checkpointNames(record.dir), (names) =>
      Effect.fail(
        new NotFound({
          message: `VM "${record.name}" has no checkpoint "${name}"; its checkpoints: ${names.join(", ") || "(none)"}`,
          subject: name
        })
      )
    )

  /** The VM's ssh target and its guest's words for root (capability_unavailable when it has none and the user is not root). */
  const rootShell = (record: OkRecord, what: string) =>
    Effect.gen(function* () {
      const target = sshTarget(root, record)
      const guest = yield* (yield* GuestDefinitions).get(record.config.os)
      return { target, escalate: yield* asRoot(target, guest, [], what) }
    })

  const withDisk = (vm: string) =>
    Effect.flatMap(loadVm(vm), (record) =>
      record.config.mode === "live"
        ? Effect.fail(new NoDisk({ message: `VM "${vm}" is a live VM: it has no disk to checkpoint`, subject: vm }))
        : Effect.succeed(record)
    )

  const create = (vm: string, name: string) =>
    Effect.gen(function* () {
      const invalid = validateCheckpointName(name)
      if (invalid) return yield* invalid
      const started = yield* Clock.currentTimeMillis
      const record = yield* withDisk(vm)
      yield* requireRunning(record)
      const shell = yield* rootShell(record, "checkpoint")
      const file = yield* locks.withVmLock(
        vm,
        Effect.scoped(
          Effect.gen(function* () {
            const folder = checkpointDir(record.dir, name)
            if (yield* exists(folder)) {
              return yield* new NameTaken({
                message: `VM "${vm}" already has a checkpoint "${name}"`,
                subject: name,
                hint: adviseFirst("delete it", { operation: "checkpoint.delete", input: { vm, name } })
              })
            }
            yield* fs.makeDirectory(checkpointsDir(record.dir))
            yield* fs.makeDirectory(layersDir(record.dir))
            const top = newLayerFile()
            const id = basename(top, ".qcow2")
            // Taken in a temp folder and renamed into place: a failure or Ctrl-C leaves no half-made checkpoint.
            const temp = yield* Effect.acquireRelease(
              Effect.as(
                fs.makeDirectory(join(checkpointsDir(record.dir), `${TEMP_PREFIX}${name}-${id}`)),
                join(checkpointsDir(record.dir), `${TEMP_PREFIX}${name}-${id}`)
              ),
              (path) => Effect.ignore(fs.remove(path))
            )
            const layer = diskPath(record)
            const mounts = yield* unmountShares(shell)
            if (mounts.length > 0)
              yield* progressLine(
                `unmounted ${mounts.map((mount) => mount.dir).join(", ")} in the guest (QEMU cannot save a guest with a 9p share mounted)`
              )
            const remount = mountShares(shell, mounts).pipe(
              Effect.catchAll((error) => progressLine(`warning: ${error.message}`))
            )
            const request = {
              disk: diskFile(record),
              top,
              topPointer: relative(record.dir, topPointerPath(record.dir)),
              folder: relative(record.dir, temp)
            }
            const taken = yield* Effect.ensuring(hypervisor.checkpoint(vmRef(record), request), remount)
            yield* progressLine(
              `checkpoint ${vm}@${name}: paused ${taken.pausedMs} ms, ${taken.stateBytes} bytes of state`
            )
            const layerInfo = yield* fs.statIfExists(layer)
            if (Option.isNone(layerInfo))
              return yield* Effect.die(new Error(`the hypervisor left no disk layer at ${layer}`))
            const saved: CheckpointFile = {
              version: 1,
              vm,
              name,
              created: new Date(yield* Clock.currentTimeMillis).toISOString(),
              layer,
              layer_bytes: layerInfo.value.size,
              layer_mtime_ms: layerInfo.value.mtimeMs,
              state: join(folder, basename(taken.stateFile)),
              state_bytes: taken.stateBytes,
              paused_ms: taken.pausedMs,
              ram_mb: taken.ramMb,
              cpus: taken.cpus,
              disk: record.config.disk,
              mounts
            }
            yield* fs.writeFileAtomic(metadataFile(temp), `${JSON.stringify(saved, null, 2)}\n`)
            yield* fs.attempt("rename", temp, () => rename(temp, folder))
            return { saved, remounted: mounts.map((mount) => mount.dir) }
          })
        )
      )
      const checkpoint = yield* view(record, name, yield* chains)
      return { checkpoint, tookMs: yield* elapsedSince(started), remounted: file.remounted }
    })

  const list = (vm?: string) =>
    Effect.gen(function* () {
      const records =
        vm === undefined
          ? (yield* store.list).filter((record): record is OkRecord => record.kind === "ok")
          : [yield* loadVm(vm)]
      const all = yield* chains
      const views: Checkpoint[] = []
      for (const record of records)
        for (const name of yield* checkpointNames(record.dir)) views.push(yield* view(record, name, all))
      return views
    })

  const remove = (vm: string, name: string) =>
    Effect.gen(function* () {
      const record = yield* loadVm(vm)
      yield* locks.withVmLock(
        vm,
        Effect.gen(function* () {
          const folder = checkpointDir(record.dir, name)
          if (validateCheckpointName(name) !== undefined || !(yield* exists(folder)))
            return yield* notFoundCheckpoint(record, name)
          yield* fs.remove(folder)
        })
      )
    })

  /** A usable checkpoint's record, or why not. */
  const usableCheckpoint = (record: OkRecord, name: string) =>
    Effect.gen(function* () {
      const folder = checkpointDir(record.dir, name)
      if (validateCheckpointName(name) !== undefined || !(yield* exists(folder)))
        return yield* notFoundCheckpoint(record, name)
      const read = yield* readCheckpoint(folder)
      const problem = Either.isLeft(read) ? read.left : yield* checkpointProblem(read.right)
      if (problem !== undefined || Either.isLeft(read)) {
        return yield* new Broken({
          message: `checkpoint "${name}" of VM "${record.name}" cannot be forked: ${problem}`,
          subject: `${record.name}@${name}`,
          hint: advise(
            "delete it and take a new one",
            { operation: "checkpoint.delete", input: { vm: record.name, name } },
            { operation: "checkpoint.create", input: { vm: record.name, name } }
          )
        })
      }
      return { folder, file: read.right }
    })

  /** Stops (at once) and deletes VMs made by a fork call that did not finish. */
  const discard = (names: ReadonlyArray<string>) =>
    Effect.forEach(
      names,
      (name) =>
        Effect.gen(function* () {
          const ref = { name, dir: root.vmDir(name) }
          yield* Effect.ignore(hypervisor.stop(ref, { graceMs: 0 }))
          yield* transport.release(name)
          yield* Effect.ignore(locks.withRootLock(store.remove(name)))
        }),
      { discard: true }
    )

  const fork = (
    vm: string,
    checkpoint: string,
    names: ReadonlyArray<string>,
    options: { readonly readyTimeoutMs?: number } = {}
  ) =>
    Effect.gen(function* () {
      for (const name of names) {
        const invalid = validateVmName(name)
        if (invalid) return yield* invalid
      }
      const started = yield* Clock.currentTimeMillis
      const source = yield* withDisk(vm)
      const { folder, file } = yield* usableCheckpoint(source, checkpoint)
      const made: string[] = []
      const program = Effect.gen(function* () {
        const { applied, forwards: _forwards, ...copied } = source.config
        const layer = { vm: vmRef(source), file: relative(source.dir, file.layer) }
        const added = yield* locks.withRootLock(
          Effect.zipRight(
            checkMemory(
              {
                subject: names[0] ?? vm,
                neededMb: file.ram_mb * names.length,
                what: `forking ${names.length} VM${names.length > 1 ? "s" : ""} of ${file.ram_mb} MiB`,
                fix: "fork fewer"
              },
              false
            ),
            addVms(
              names.map((name) => ({
                name,
                // Applied recipes stay applied: the fork is the source's guest as it was.
                config: (sshport: number): VmConfig => ({
                  ...copied,
                  applied,
                  name,
                  sshport,
                  forwards: [],
                  project: "",
                  key: "",
                  ram: file.ram_mb,
                  cpus: file.cpus,
                  disk: file.disk
                }),
                fill: (dir: string) => hypervisor.createDisk(firstDisk({ name, dir }), "", layer)
              })),
              (name) => made.push(name)
            )
          )
        )
        const timeoutMs = options.readyTimeoutMs ?? FORK_READY_TIMEOUT_MS
        const saved = { vm: vmRef(source), folder: relative(source.dir, folder) }
        return yield* Effect.forEach(
          added,
          (record) => startFork(record, saved, file, `${vm}@${checkpoint}`, timeoutMs),
          { concurrency: "unbounded" }
        )
      })
      // All or nothing: one fork that fails (or a Ctrl-C) takes the others of this call with it.
      const forks = yield* Effect.onExit(program, (exit) => (Exit.isSuccess(exit) ? Effect.void : discard(made)))
      return { forks, tookMs: yield* elapsedSince(started) }
    })

  const startFork = (
    record: OkRecord,
    saved: { readonly vm: VmRef; readonly folder: string },
    file: CheckpointFile,
    from: string,
    timeoutMs: number
  ) =>
    Effect.gen(function* () {
      const { name } = record
      const started = yield* Clock.currentTimeMillis
      yield* locks.withVmLock(
        name,
        hypervisor.resume(saved, {
          vm: vmRef(record),
          sshPort: record.config.sshport,
          disk: diskFile(record),
          workShare: root.sharedDir(name)
        })
      )
      yield* progressLine(`fork ${name}: running from ${from} (${yield* elapsedSince(started)} ms)`)
      // A resumed guest's network is up already: connect at once (no separate banner probe), and
      // try again only while its sshd is not answering yet.
      const shell = yield* rootShell(record, "fork")
      yield* setForkIdentity(shell, file.mounts).pipe(
        Effect.retry({
          schedule: Schedule.spaced(Duration.millis(100)),
          while: (error) => error._tag === "CannotReach"
        }),
        // Its clock still reads the checkpoint's time.
        Effect.zipRight(setGuestClock(shell)),
        Effect.timeoutFail({
          duration: Duration.millis(timeoutMs),
          onTimeout: () =>
            new Timeout({
              message: `fork "${name}" did not answer ssh within ${Math.round(timeoutMs / 1000)} s`,
              subject: name
            })
        })
      )
      const readyMs = yield* elapsedSince(started)
      yield* progressLine(`fork ${name}: ready with its own hostname, shares and clock (${readyMs} ms)`)
      return { record, readyMs }
    })

  const dependentVms = (record: OkRecord) =>
    Effect.gen(function* () {
      const under = inFolder(record.dir)
      const found: Array<{ readonly record: OkRecord; readonly chain: Chain }> = []
      for (const entry of yield* chains) {
        if (
          entry.record.name === record.name ||
          entry.chain === undefined ||
          !entry.chain.some((layer) => under(layer.path))
        )
          continue
        found.push({ record: entry.record, chain: entry.chain })
      }
      return found
    })

  const dependents = (record: OkRecord) =>
    Effect.gen(function* () {
      const vms: Array<{ name: string; running: boolean }> = []
      for (const entry of yield* dependentVms(record))
        vms.push({ name: entry.record.name, running: yield* isRunning(entry.record) })
      return { checkpoints: yield* checkpointNames(record.dir), vms }
    })

  const detachDependents = (record: OkRecord) =>
    Effect.gen(function* () {
      const under = inFolder(record.dir)
      const first = yield* dependentVms(record)
      const running: string[] = []
      for (const entry of first) if (yield* isRunning(entry.record)) running.push(entry.record.name)
      if (running.length > 0) {
        return yield* new InUse({
          message: `VM${running.length > 1 ? "s" : ""} ${running.join(", ")} run on disks built on VM "${record.name}"; stop ${running.length > 1 ? "them" : "it"} first`,
          subject: running[0]!
        })
      }
      const detached: string[] = []
      // One at a time, nearest first: detaching a fork may free a clone of it as well.
      for (let left = first.length; left > 0; left--) {
        const remaining = yield* dependentVms(record)
        const next =
          remaining.find((entry) => entry.chain[0] !== undefined && under(entry.chain[0].path)) ?? remaining[0]
        if (next === undefined) break
        const lastInside = next.chain.findLastIndex((layer) => under(layer.path))
        yield* hypervisor.rebaseDisk(vmDisk(next.record), next.chain[lastInside + 1]?.disk)
        detached.push(next.record.name)
      }
      return detached
    })

  const orphans = Effect.gen(function* () {
    const all = yield* chains
    const now = yield* Clock.currentTimeMillis
    const found: string[] = []
    for (const record of (yield* store.list).filter((entry): entry is OkRecord => entry.kind === "ok")) {
      const entries = yield* Effect.orElseSucceed(fs.listDirectoryEntries(checkpointsDir(record.dir)), () => [])
      for (const entry of entries) {
        const path = join(checkpointsDir(record.dir), entry.name)
        if (entry.name.startsWith(TEMP_PREFIX)) {
          const info = yield* Effect.orElseSucceed(fs.statIfExists(path), () => Option.none())
          if (Option.isSome(info) && now - info.value.mtimeMs >= TEMP_GRACE_MS) found.push(path)
          continue
        }
        const read = yield* readCheckpoint(path)
        if (Either.isLeft(read) || (yield* checkpointProblem(read.right)) !== undefined) found.push(path)
      }
      // A layer is needed while any disk reads through it; when some chain cannot be read, keep them all.
      if (all.some((entry) => entry.chain === undefined)) continue
      const layers = yield* Effect.orElseSucceed(fs.listDirectory(layersDir(record.dir)), () => [])
      for (const layer of layers) {
        const path = join(layersDir(record.dir), layer)
        if (!all.some((entry) => diskPath(entry.record) === path || readsThrough(entry.chain, path))) found.push(path)
      }
    }
    return found.sort()
  })

  const provided = <A, E>(
    effect: Effect.Effect<A, E, DataRoot | VmStore | GuestDefinitions | Hypervisor | GuestTransport | Locks | HostProbe>
  ) => Effect.provide(effect, context)
  return Checkpoints.of({
    create: (vm, name) => provided(create(vm, name)),
    list: (vm) => provided(list(vm)),
    remove: (vm, name) => provided(remove(vm, name)),
    fork: (vm, checkpoint, names, options) => provided(fork(vm, checkpoint, names, options)),
    dependents: (record) => provided(dependents(record)),
    detachDependents: (record) => provided(detachDependents(record)),
    orphans: provided(orphans)
  })
})

/** Needs the data root, the VM store, guests, the hypervisor, the guest transport, locks and the host probe. */
export const CheckpointsLive = Layer.effect(Checkpoints, make)
