import { Effect } from "effect"
import { DataRoot } from "../platform/data-root.js"
import { InvalidSpec, LimitReached } from "../errors.js"
import { HostProbe } from "../platform/host.js"
import { effectiveLimits } from "./limits.js"
import * as fs from "../platform/fs.js"
import { isRunning } from "./records.js"
import { VmStore } from "./store.js"

/** max_vms counts every VM in the data root, broken ones included. */
export const checkVmCount = (count: number, name: string) =>
  Effect.flatMap(Effect.flatMap(DataRoot, (root) => effectiveLimits(root.configToml)), (limits) =>
    limits.max_vms !== undefined && count >= limits.max_vms
      ? Effect.fail(new LimitReached({ message: `limit reached: max_vms = ${limits.max_vms}`, subject: name, needed_mb: 0, available_mb: 0 }))
      : Effect.void
  )

/** Makes a VM folder and fills it; a failure part way removes the folder, so a failed create or clone leaves nothing. */
export const makeVmFolder = <E, R>(name: string, fill: (dir: string) => Effect.Effect<void, E, R>) =>
  // Interruptible only while filling: an interrupt right after the folder appears would otherwise leave it behind.
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function* () {
      const root = yield* DataRoot
      const dir = root.vmDir(name)
      // Not recursive: a folder that already stands there is somebody's, and a failed create must not remove it.
      yield* fs.makeDirectory(dir, { recursive: false }).pipe(
        Effect.catchIf(
          (error) => error.errno === "EEXIST",
          () => new InvalidSpec({ message: `a folder named "${name}" already exists in the data root and is not a VM; move it away or pick another name`, subject: name })
        )
      )
      const filled = Effect.zipRight(fill(dir), fs.makeDirectory(root.sharedDir(name)))
      yield* Effect.onError(restore(filled), () => Effect.ignore(fs.remove(dir)))
    })
  )

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
      for (const other of all) if (other.kind === "ok" && other.name !== need.subject && (yield* isRunning(other))) used += other.config.ram
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
