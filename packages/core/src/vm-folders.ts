import { Effect } from "effect"
import { DataRoot } from "./data-root.js"
import { InvalidSpec, LimitReached } from "./errors.js"
import { readLimits } from "./limits.js"
import * as fs from "./platform/fs.js"

/** max_vms counts every VM in the data root, broken ones included. */
export const checkVmCount = (count: number, name: string) =>
  Effect.flatMap(Effect.flatMap(DataRoot, (root) => readLimits(root.configToml)), (limits) =>
    limits.max_vms !== undefined && count >= limits.max_vms
      ? Effect.fail(new LimitReached({ message: `limit reached: max_vms = ${limits.max_vms}`, subject: name, needed_mb: 0, available_mb: 0 }))
      : Effect.void
  )

/** Makes a VM folder and fills it; a failure part way removes the folder, so a failed create or clone leaves nothing. */
export const makeVmFolder = <E, R>(name: string, fill: (dir: string) => Effect.Effect<void, E, R>) =>
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
    yield* Effect.onError(filled, () => Effect.ignore(fs.remove(dir)))
  })
