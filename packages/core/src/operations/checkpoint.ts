import { Effect, Schema } from "effect"
import { CheckpointList, CheckpointResult, DeleteCheckpointResult, ForkResult } from "@stoat/wire"
import { CheckpointName, Checkpoints, MAX_FORKS_PER_CALL } from "../checkpoints/index.js"
import { VmName } from "./inputs.js"
import { IntRange } from "../vm/limits.js"
import { DESTRUCTIVE, defineOperation, MUTATE, READ } from "./operation.js"
import { viewVms } from "./read.js"

export const takeCheckpoint = defineOperation({
  key: "checkpoint.create",
  tool: "checkpoint",
  longRunning: true,
  expose: { cli: "checkpoint", mcp: true },
  title: "Checkpoint a running VM",
  description:
    "Save a running VM's RAM, device state and disk under a name, to fork warm copies from (see fork). The VM pauses for well under a second; a 9p share in use refuses with capability_unavailable.",
  kind: "command",
  input: Schema.Struct({ vm: VmName, name: CheckpointName }),
  output: CheckpointResult,
  annotations: MUTATE,
  // Lifecycle, like snapshot: the only guest commands are stoat's own (shares, identity), never an agent's.
  access: null,
  run: (input) =>
    Effect.map(
      Effect.flatMap(Checkpoints, (checkpoints) => checkpoints.create(input.vm, input.name)),
      (taken) => ({ checkpoint: taken.checkpoint, took_ms: taken.tookMs, remounted: [...taken.remounted] })
    )
})

export const listCheckpoints = defineOperation({
  key: "checkpoint.list",
  tool: "list_checkpoints",
  expose: { cli: "checkpoint ls", mcp: true },
  title: "List checkpoints",
  description:
    "Checkpoints of one VM or every VM: when taken, RAM and state size, the VMs built on each, and whether it can still be forked (usable).",
  kind: "query",
  input: Schema.Struct({ vm: Schema.optional(VmName).annotations({ description: "One VM; omit for every VM" }) }),
  output: CheckpointList,
  annotations: READ,
  access: null,
  run: (input) =>
    Effect.map(
      Effect.flatMap(Checkpoints, (checkpoints) => checkpoints.list(input.vm)),
      (found) => ({ checkpoints: [...found] })
    )
})

export const deleteCheckpoint = defineOperation({
  key: "checkpoint.delete",
  tool: "delete_checkpoint",
  expose: { cli: "checkpoint rm", mcp: true },
  title: "Delete a checkpoint",
  description: "Delete a checkpoint's saved state; VMs forked from it keep working.",
  kind: "command",
  input: Schema.Struct({ vm: VmName, name: CheckpointName }),
  output: DeleteCheckpointResult,
  annotations: DESTRUCTIVE,
  touches: ["deletes"],
  access: null,
  confirm: (input) => `${input.vm}@${input.name}`,
  run: (input) =>
    Effect.as(
      Effect.flatMap(Checkpoints, (checkpoints) => checkpoints.remove(input.vm, input.name)),
      { vm: input.vm, name: input.name, deleted: true }
    )
})

export const forkCheckpoint = defineOperation({
  key: "checkpoint.fork",
  tool: "fork",
  longRunning: true,
  expose: { cli: "fork", mcp: true },
  title: "Fork warm VMs from a checkpoint",
  description:
    "Start new VMs from a checkpoint, warm: each resumes its saved RAM on its own copy-on-write disk, with its own SSH port and hostname, and is returned once SSH answers. All or nothing.",
  kind: "command",
  input: Schema.Struct({
    vm: VmName,
    checkpoint: CheckpointName,
    name: Schema.String.annotations({ description: "New VM name (with count: the prefix of name-1…name-N)" }),
    count: Schema.optional(IntRange(1, MAX_FORKS_PER_CALL)).annotations({
      description: `How many forks (1..${MAX_FORKS_PER_CALL}); named name-1…name-N`
    }),
    timeout_seconds: Schema.optional(IntRange(1, 600)).annotations({
      description: "Seconds each fork may take to answer SSH (default 60)"
    })
  }),
  output: ForkResult,
  annotations: MUTATE,
  access: null,
  run: (input) =>
    Effect.gen(function* () {
      const names =
        input.count === undefined
          ? [input.name]
          : Array.from({ length: input.count }, (_, index) => `${input.name}-${index + 1}`)
      const forked = yield* (yield* Checkpoints).fork(input.vm, input.checkpoint, names, {
        ...(input.timeout_seconds !== undefined ? { readyTimeoutMs: input.timeout_seconds * 1000 } : {})
      })
      const views = yield* viewVms(forked.forks.map((fork) => fork.record))
      return {
        source: input.vm,
        checkpoint: input.checkpoint,
        forks: forked.forks.map((fork, index) => ({ vm: views[index]!, ready_ms: fork.readyMs })),
        took_ms: forked.tookMs
      }
    })
})
