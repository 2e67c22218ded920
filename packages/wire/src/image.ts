import { Schema } from "effect"
import { Int } from "./primitives.js"

export const Image = Schema.Struct({
  id: Schema.String,
  os: Schema.String,
  variant: Schema.String,
  backend: Schema.String,
  /** Bare file name under the data root's isos/. */
  file: Schema.String,
  downloaded: Schema.Boolean,
  bytes: Int,
  bytes_exact: Schema.Boolean,
  byo: Schema.Boolean
})
export type Image = typeof Image.Type
export const ImageList = Schema.Struct({ images: Schema.Array(Image) })
export const PullResult = Schema.Struct({
  id: Schema.String,
  downloaded: Schema.Boolean,
  verified: Schema.Boolean,
  checksum_available: Schema.Boolean
})
export type PullResult = typeof PullResult.Type

export const Snapshot = Schema.Struct({
  tag: Schema.String,
  vm_state: Schema.String,
  /** Deprecated display strings; use `size_bytes` and `created`. */
  size_display: Schema.String,
  created_display: Schema.String,
  created: Schema.String,
  size_bytes: Int
})
export type Snapshot = typeof Snapshot.Type
export const SnapshotList = Schema.Struct({ vm: Schema.String, snapshots: Schema.Array(Snapshot) })
export const SnapshotAction = Schema.Struct({
  vm: Schema.String,
  tag: Schema.String,
  action: Schema.Literal("save", "restore", "delete")
})
/** MCP snapshot/restore/list_snapshots/delete_snapshot answer with the resulting list. */
export const Snapshots = Schema.Struct({ snapshots: Schema.Array(Snapshot) })

/** `crash_leftover`: a file a VM's QEMU left when it ended without a shutdown (its pidfile, sockets, boot record). */
export const PruneClass = Schema.Literal(
  "broken_vm",
  "partial_download",
  "orphaned_image",
  "orphaned_checkpoint",
  "crash_leftover"
)
export const PruneItem = Schema.Struct({ class: PruneClass, path: Schema.String })
export const PruneResult = Schema.Struct({ dry_run: Schema.Boolean, items: Schema.Array(PruneItem) })
