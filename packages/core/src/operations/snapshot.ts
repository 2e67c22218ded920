import { type Context, Effect, Schema } from "effect"
import { SnapshotAction, SnapshotList, Snapshots as SnapshotsResult, type Snapshot } from "@stoat/wire"
import { Snapshots } from "../vm/snapshots.js"
import { VmName } from "./inputs.js"
import { defineOperation, DESTRUCTIVE, MUTATE, READ } from "./operation.js"

/** One call of the Snapshots service, answered as the wire list. */
const answer = <E>(call: (snapshots: Context.Tag.Service<Snapshots>) => Effect.Effect<ReadonlyArray<Snapshot>, E>) =>
  Effect.map(Effect.flatMap(Snapshots, call), (snapshots) => ({ snapshots }))

const Tag = Schema.String.pipe(
  Schema.pattern(/^\S+$/, { message: () => "snapshot tags are non-empty and contain no whitespace" }),
  Schema.maxLength(128)
).annotations({
  description: "Snapshot tag: no whitespace, at most 128"
})

/** `stoat snapshot <vm> <tag>` answers what it did, not the resulting list (reference §4). */
const snapshotAction =
  (action: (typeof SnapshotAction.Type)["action"]) =>
  (_: unknown, input: { readonly vm: string; readonly tag: string }): typeof SnapshotAction.Type => ({
    vm: input.vm,
    tag: input.tag,
    action
  })

export const listSnapshots = defineOperation({
  key: "snapshot.list",
  tool: "list_snapshots",
  expose: { cli: "snapshot ls", mcp: true },
  title: "List snapshots",
  description: "A VM's disk snapshots: tag, size, creation time.",
  kind: "query",
  input: Schema.Struct({ vm: VmName }),
  output: SnapshotsResult,
  cliView: ({ snapshots }, { vm }): typeof SnapshotList.Type => ({ vm, snapshots }),
  annotations: READ,
  access: null,
  run: (input) => answer((snapshots) => snapshots.list(input.vm))
})

export const saveSnapshot = defineOperation({
  key: "snapshot.save",
  tool: "snapshot",
  expose: { cli: "snapshot", mcp: true },
  title: "Save a snapshot",
  description: "Save a disk snapshot under a tag (replacing the same tag); on a running VM it is crash-consistent.",
  kind: "command",
  input: Schema.Struct({ vm: VmName, tag: Tag }),
  output: SnapshotsResult,
  cliView: snapshotAction("save"),
  annotations: MUTATE,
  access: null,
  run: (input) => answer((snapshots) => snapshots.save(input.vm, input.tag))
})

export const restoreSnapshot = defineOperation({
  key: "snapshot.restore",
  tool: "restore",
  expose: { cli: "snapshot", mcp: true },
  title: "Restore a snapshot",
  description:
    "Roll a stopped VM's disk back to a snapshot; later changes are lost. Unknown tag: not_found listing the tags.",
  kind: "command",
  input: Schema.Struct({ vm: VmName, tag: Tag }),
  output: SnapshotsResult,
  cliView: snapshotAction("restore"),
  annotations: DESTRUCTIVE,
  touches: ["deletes"],
  access: null,
  run: (input) => answer((snapshots) => snapshots.restore(input.vm, input.tag))
})

export const deleteSnapshot = defineOperation({
  key: "snapshot.delete",
  tool: "delete_snapshot",
  expose: { cli: "snapshot rm", mcp: true },
  title: "Delete a snapshot",
  description: "Delete a disk snapshot by tag (running or stopped VM).",
  kind: "command",
  input: Schema.Struct({ vm: VmName, tag: Tag }),
  output: SnapshotsResult,
  cliView: snapshotAction("delete"),
  annotations: DESTRUCTIVE,
  touches: ["deletes"],
  access: null,
  run: (input) => answer((snapshots) => snapshots.remove(input.vm, input.tag))
})
