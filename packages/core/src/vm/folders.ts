import { Effect } from "effect"
import { DataRoot } from "../platform/data-root.js"
import { internalError, InvalidSpec, LimitReached, NameTaken, type StoatError } from "../errors.js"
import { HostProbe } from "../platform/host.js"
import { effectiveLimits } from "./limits.js"
import * as fs from "../platform/fs.js"
import type { VmConfig } from "./config.js"
import { allocateSshPort } from "./network.js"
import { isRunning, loadVm, type OkRecord } from "./records.js"
import { VmStore, type VmRecord } from "./store.js"

/** max_vms counts every VM in the data root, broken ones included. */
const checkVmCount = (count: number, name: string) =>
  Effect.flatMap(
    Effect.flatMap(DataRoot, (root) => effectiveLimits(root.configToml)),
    (limits) =>
      limits.max_vms !== undefined && count >= limits.max_vms
        ? Effect.fail(
            new LimitReached({
              message: `limit reached: max_vms = ${limits.max_vms}`,
              subject: name,
              needed_mb: 0,
              available_mb: 0
            })
          )
        : Effect.void
  )

/** Makes a VM folder and fills it; a failure part way removes the folder, so a failed create or clone leaves nothing. */
const makeVmFolder = <E, R>(name: string, fill: (dir: string) => Effect.Effect<void, E, R>) =>
  // Interruptible only while filling: an interrupt right after the folder appears would otherwise leave it behind.
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function* () {
      const root = yield* DataRoot
      const dir = root.vmDir(name)
      // Not recursive: a folder that already stands there is somebody's, and a failed create must not remove it.
      yield* fs.makeDirectory(dir, { recursive: false }).pipe(
        Effect.catchIf(
          (error) => error.errno === "EEXIST",
          () =>
            new InvalidSpec({
              message: `a folder named "${name}" already exists in the data root and is not a VM; move it away or pick another name`,
              subject: name
            })
        )
      )
      const filled = Effect.zipRight(fill(dir), fs.makeDirectory(root.sharedDir(name)))
      yield* Effect.onError(restore(filled), () => Effect.ignore(fs.remove(dir)))
    })
  )

/** The first ssh port no VM of `all` claims and that binds now. Call under the root lock. */
export const freeSshPort = (all: ReadonlyArray<VmRecord>) =>
  Effect.tryPromise({ try: () => allocateSshPort(all), catch: internalError("cannot allocate an ssh port") })

/** One VM to add: its name, its vm.toml once it has a port, and what its folder holds besides. */
export interface NewVm<R> {
  readonly name: string
  readonly config: (sshport: number) => VmConfig
  readonly fill: (dir: string, config: VmConfig) => Effect.Effect<void, StoatError, R>
}

/**
 * Adds VMs to the data root, for create, clone and fork alike; call under the root lock. Every
 * name must be free and all of them must fit within max_vms; then each in turn gets a free ssh
 * port and its folder with `fill` and vm.toml (a failure removes that folder). `onAdded` hears of
 * each VM as it stands, so a caller adding several can take them back.
 */
export const addVms = <R>(vms: ReadonlyArray<NewVm<R>>, onAdded: (name: string) => void = () => undefined) =>
  Effect.gen(function* () {
    const store = yield* VmStore
    const all: VmRecord[] = [...(yield* store.list)]
    const taken = vms.find((vm) => all.some((record) => record.name === vm.name))
    if (taken !== undefined)
      return yield* new NameTaken({ message: `VM "${taken.name}" already exists`, subject: taken.name })
    yield* checkVmCount(all.length + vms.length - 1, vms[0]?.name ?? "")
    const added: OkRecord[] = []
    for (const vm of vms) {
      const config = vm.config(yield* freeSshPort(all))
      yield* makeVmFolder(vm.name, (dir) => Effect.zipRight(vm.fill(dir, config), store.write(vm.name, config)))
      onAdded(vm.name)
      const record = yield* loadVm(vm.name)
      // Claimed from now on: the next VM of this call gets another port.
      all.push(record)
      added.push(record)
    }
    return added
  })

export interface MemoryNeed {
  /** The VM (or first VM) the refusal is about. */
  readonly subject: string
  readonly neededMb: number
  /** "starting \"dev\"", "forking 3 VMs": how the message names the request. */
  readonly what: string
  /** What a person can change instead, e.g. "lower ram_mb with update". */
  readonly fix: string
  /** The same when the host lacks memory (where an override exists, it is named here). */
  readonly floorFix?: string
}

/**
 * Checks the RAM limit (max_ram_mb, against the VMs running now other than the subject) and the
 * host-memory floor, which only a person may override (`up -y`).
 */
export const checkMemory = (need: MemoryNeed, overrideFloor: boolean) =>
  Effect.gen(function* () {
    const root = yield* DataRoot
    const limits = yield* effectiveLimits(root.configToml)
    const needed = need.neededMb
    if (limits.max_ram_mb !== undefined) {
      const all = yield* (yield* VmStore).list
      let used = 0
      for (const other of all) {
        if (other.kind !== "ok" || other.name === need.subject) continue
        // A VM whose host does not answer may be running: it keeps its share of the limit.
        if (yield* isRunning(other).pipe(Effect.orElseSucceed(() => true))) used += other.config.ram
      }
      if (used + needed > limits.max_ram_mb) {
        return yield* new LimitReached({
          message: `${need.what} needs ${needed} MiB but max_ram_mb = ${limits.max_ram_mb} leaves ${Math.max(0, limits.max_ram_mb - used)} MiB; ${need.fix}`,
          subject: need.subject,
          needed_mb: needed,
          available_mb: Math.max(0, limits.max_ram_mb - used)
        })
      }
    }
    const available = yield* (yield* HostProbe).memAvailableMb
    if (needed > available && !overrideFloor) {
      return yield* new LimitReached({
        message: `${need.what} needs ${needed} MiB but the host has ${available} MiB available; ${need.floorFix ?? need.fix}`,
        subject: need.subject,
        needed_mb: needed,
        available_mb: available
      })
    }
  })
