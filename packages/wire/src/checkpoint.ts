import { Schema } from "effect"
import { Int } from "./primitives.js"
import { Vm } from "./vm.js"

/** A saved instant of a running VM: its RAM and device state plus the disk as it was then. */
export const Checkpoint = Schema.Struct({
  vm: Schema.String,
  name: Schema.String,
  /** RFC3339. */
  created: Schema.String,
  ram_mb: Int,
  cpus: Int,
  /** Size of the saved RAM and device state. */
  state_bytes: Int,
  /** How long the source was paused while it was taken. */
  paused_ms: Int,
  /** VMs whose disks are built on this checkpoint's disk (forks, and clones of forks). */
  dependents: Schema.Array(Schema.String),
  /** False when its disk layer or state changed or vanished since; `problem` says which. */
  usable: Schema.Boolean,
  problem: Schema.optional(Schema.String)
})
export type Checkpoint = typeof Checkpoint.Type

export const CheckpointList = Schema.Struct({ checkpoints: Schema.Array(Checkpoint) })

export const CheckpointResult = Schema.Struct({
  checkpoint: Checkpoint,
  /** The whole call, shares unmounted and remounted included. */
  took_ms: Int,
  /** 9p mount points that were unmounted in the guest for the checkpoint and mounted again after it. */
  remounted: Schema.Array(Schema.String)
})

export const DeleteCheckpointResult = Schema.Struct({ vm: Schema.String, name: Schema.String, deleted: Schema.Boolean })

export const ForkedVm = Schema.Struct({
  vm: Vm,
  /** From starting its QEMU to its sshd answering and its identity (hostname, RNG) being fresh. */
  ready_ms: Int
})

export const ForkResult = Schema.Struct({
  source: Schema.String,
  checkpoint: Schema.String,
  forks: Schema.Array(ForkedVm),
  took_ms: Int
})
