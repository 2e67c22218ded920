import { join } from "node:path"
import { Effect, Either, Option, Schema } from "effect"
import { InvalidSpec } from "../errors.js"
import * as fs from "../platform/fs.js"
export { layersDir } from "../vm/disks.js"

/**
 * Where checkpoints live in a VM's folder:
 *
 *   disk.qcow2, layers/<id>.qcow2 the VM's disk chain: a checkpoint freezes the file the VM
 *                                 writes to and puts a new overlay in layers/ on top (disk.top
 *                                 names it); frozen files stay as long as the VM, deleting a
 *                                 checkpoint does not touch them
 *   checkpoints/<name>/           checkpoint.json (this file's schema), the provider's state
 *   checkpoints/.tmp-<name>-<id>/ a checkpoint being taken; renamed into place once whole
 */
export const checkpointsDir = (vmDir: string) => join(vmDir, "checkpoints")
export const checkpointDir = (vmDir: string, name: string) => join(checkpointsDir(vmDir), name)
export const metadataFile = (folder: string) => join(folder, "checkpoint.json")
export const TEMP_PREFIX = ".tmp-"

/** Checkpoint names: like VM names, so `<vm>@<checkpoint>` is unambiguous and every name is a plain folder. */
export const CHECKPOINT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/

export const CheckpointName = Schema.String.pipe(
  Schema.pattern(CHECKPOINT_NAME, {
    message: () => "checkpoint names are 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
  })
).annotations({ description: "Checkpoint name" })

export const validateCheckpointName = (name: string): InvalidSpec | undefined =>
  CHECKPOINT_NAME.test(name)
    ? undefined
    : new InvalidSpec({
        message: `invalid checkpoint name ${JSON.stringify(name.slice(0, 80))}: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit`,
        subject: "name"
      })

/** checkpoint.json: what core needs to list, verify and fork a checkpoint. */
export const CheckpointFile = Schema.Struct({
  version: Schema.Literal(1),
  vm: Schema.String,
  name: Schema.String,
  created: Schema.String,
  /** The frozen disk layer forks are built on, and what it looked like when taken (to notice a change). */
  layer: Schema.String,
  layer_bytes: Schema.Number,
  layer_mtime_ms: Schema.Number,
  /** The provider's state file and its size. */
  state: Schema.String,
  state_bytes: Schema.Number,
  paused_ms: Schema.Number,
  ram_mb: Schema.Number,
  cpus: Schema.Number,
  /** The VM's disk size setting at the time (a fork's vm.toml gets it). */
  disk: Schema.String,
  /** 9p mounts the guest had (tag, mount point, options): a fork mounts its own shares there. */
  mounts: Schema.Array(Schema.Struct({ tag: Schema.String, dir: Schema.String, options: Schema.String }))
})
export type CheckpointFile = typeof CheckpointFile.Type
export type GuestMount = CheckpointFile["mounts"][number]

const decode = Schema.decodeUnknownEither(Schema.parseJson(CheckpointFile))

/** A checkpoint folder's metadata; Left with the reason when it is missing or unreadable. */
export const readCheckpoint = (folder: string): Effect.Effect<Either.Either<CheckpointFile, string>> =>
  Effect.map(Effect.either(fs.readFileStringIfExists(metadataFile(folder))), (read) => {
    if (Either.isLeft(read)) return Either.left(`checkpoint.json cannot be read: ${read.left.message}`)
    if (Option.isNone(read.right)) return Either.left("checkpoint.json is missing")
    return Either.mapLeft(decode(read.right.value), () => "checkpoint.json is not a checkpoint record")
  })

/** The checkpoint folders of a VM (names, sorted), temp folders of checkpoints being taken left out. */
export const checkpointNames = (vmDir: string): Effect.Effect<ReadonlyArray<string>> =>
  Effect.map(
    Effect.orElseSucceed(fs.listDirectoryEntries(checkpointsDir(vmDir)), () => []),
    (entries) =>
      entries
        .filter((entry) => entry.isDirectory() && !entry.name.startsWith("."))
        .map((entry) => entry.name)
        .sort()
  )

/** Why a checkpoint can no longer be forked (its disk layer or state changed or vanished), or undefined. */
export const checkpointProblem = (checkpoint: CheckpointFile): Effect.Effect<string | undefined> =>
  Effect.gen(function* () {
    const stat = (path: string) =>
      Effect.map(
        Effect.orElseSucceed(fs.statIfExists(path), () => Option.none()),
        Option.getOrUndefined
      )
    const layer = yield* stat(checkpoint.layer)
    if (layer === undefined) return `its disk layer ${checkpoint.layer} vanished`
    if (layer.size !== checkpoint.layer_bytes || Math.abs(layer.mtimeMs - checkpoint.layer_mtime_ms) > 1) {
      return `its disk layer ${checkpoint.layer} changed since the checkpoint (was ${checkpoint.layer_bytes} bytes, now ${layer.size})`
    }
    const state = yield* stat(checkpoint.state)
    if (state === undefined) return `its saved state ${checkpoint.state} vanished`
    if (state.size !== checkpoint.state_bytes)
      return `its saved state ${checkpoint.state} changed (was ${checkpoint.state_bytes} bytes, now ${state.size})`
    return undefined
  })
