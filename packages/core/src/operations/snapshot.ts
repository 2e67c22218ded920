import { type Context, Effect, Schema } from "effect"
import { SnapshotAction, SnapshotList, Snapshots } from "@stoat/wire"
import { AlreadyRunning, NoDisk, NotFound } from "../errors.js"
import { Locks } from "../platform/locks.js"
import { Hypervisor } from "../ports/hypervisor.js"
import { diskPath, loadVm, vmRef, type OkRecord } from "../vm/runtime.js"
import { VmName } from "./inputs.js"
import { defineOperation, DESTRUCTIVE, MUTATE, READ } from "./operation.js"

const Tag = Schema.String.pipe(Schema.pattern(/^\S+$/, { message: () => "snapshot tags are non-empty and contain no whitespace" }), Schema.maxLength(128))

const withDisk = (vm: string) =>
  Effect.flatMap(loadVm(vm), (record) =>
    record.config.mode === "live"
      ? Effect.fail(new NoDisk({ message: `VM "${vm}" is a live VM and has no disk to snapshot`, subject: vm }))
      : Effect.succeed(record)
  )

/** Applies one change to a VM's snapshots under its lock and answers with the resulting list. */
const changeSnapshots = <E, R>(vm: string, change: (record: OkRecord, hypervisor: Context.Tag.Service<Hypervisor>) => Effect.Effect<void, E, R>) =>
  Effect.gen(function* () {
    const record = yield* withDisk(vm)
    const hypervisor = yield* Hypervisor
    yield* (yield* Locks).withVmLock(vm, change(record, hypervisor))
    return { snapshots: yield* listOf(record) }
  })

const listOf = (record: OkRecord) => Effect.flatMap(Hypervisor, (h) => h.listSnapshots(vmRef(record), diskPath(record)))

/** Unknown tags answer not_found naming the tags that exist. */
const requireTag = (record: OkRecord, tag: string) =>
  Effect.flatMap(listOf(record), (snapshots) =>
    snapshots.some((snapshot) => snapshot.tag === tag)
      ? Effect.void
      : Effect.fail(
          new NotFound({
            message: `no snapshot "${tag}" on VM "${record.name}"; existing tags: ${snapshots.map((snapshot) => snapshot.tag).join(", ") || "(none)"}`,
            subject: tag
          })
        )
  )

/** `stoat snapshot <vm> <tag>` answers what it did, not the resulting list (reference §4). */
const snapshotAction =
  (action: (typeof SnapshotAction.Type)["action"]) =>
  (_: unknown, input: { readonly vm: string; readonly tag: string }): typeof SnapshotAction.Type => ({ vm: input.vm, tag: input.tag, action })

export const listSnapshots = defineOperation({
  key: "snapshot.list",
  tool: "list_snapshots",
  expose: { cli: "snapshot", mcp: true },
  title: "List snapshots",
  description: "List a VM's disk snapshots (tag, size, creation time). Works on running and stopped VMs.",
  kind: "query",
  input: Schema.Struct({ vm: VmName }),
  output: Snapshots,
  cliView: ({ snapshots }, { vm }): typeof SnapshotList.Type => ({ vm, snapshots }),
  annotations: READ,
  access: null,
  run: (input) => Effect.map(Effect.flatMap(withDisk(input.vm), listOf), (snapshots) => ({ snapshots }))
})

export const saveSnapshot = defineOperation({
  key: "snapshot.save",
  tool: "snapshot",
  expose: { cli: "snapshot", mcp: true },
  title: "Save a snapshot",
  description: "Save a disk snapshot under a tag (replacing one with the same tag). On a running VM it is disk-only and crash-consistent.",
  kind: "command",
  input: Schema.Struct({ vm: VmName, tag: Tag }),
  output: Snapshots,
  cliView: snapshotAction("save"),
  annotations: MUTATE,
  access: null,
  run: (input) =>
    changeSnapshots(input.vm, (record, hypervisor) =>
      Effect.gen(function* () {
        const existing = yield* listOf(record)
        if (existing.some((snapshot) => snapshot.tag === input.tag)) yield* hypervisor.deleteSnapshot(vmRef(record), diskPath(record), input.tag)
        yield* hypervisor.saveSnapshot(vmRef(record), diskPath(record), input.tag)
      })
    )
})

export const restoreSnapshot = defineOperation({
  key: "snapshot.restore",
  tool: "restore",
  expose: { cli: "snapshot", mcp: true },
  title: "Restore a snapshot",
  description: "Roll a stopped VM's disk back to a snapshot. Changes since the snapshot are lost. Unknown tags answer not_found with the existing tags.",
  kind: "command",
  input: Schema.Struct({ vm: VmName, tag: Tag }),
  output: Snapshots,
  cliView: snapshotAction("restore"),
  annotations: DESTRUCTIVE,
  access: null,
  run: (input) =>
    changeSnapshots(input.vm, (record, hypervisor) =>
      Effect.gen(function* () {
        if ((yield* hypervisor.status(vmRef(record))).running) {
          return yield* new AlreadyRunning({ message: `VM "${input.vm}" is running; stop it before restoring a snapshot`, subject: input.vm })
        }
        yield* requireTag(record, input.tag)
        yield* hypervisor.restoreSnapshot(vmRef(record), diskPath(record), input.tag)
      })
    )
})

export const deleteSnapshot = defineOperation({
  key: "snapshot.delete",
  tool: "delete_snapshot",
  expose: { cli: "snapshot", mcp: true },
  title: "Delete a snapshot",
  description: "Delete a disk snapshot by tag. Works on running and stopped VMs.",
  kind: "command",
  input: Schema.Struct({ vm: VmName, tag: Tag }),
  output: Snapshots,
  cliView: snapshotAction("delete"),
  annotations: DESTRUCTIVE,
  access: null,
  run: (input) =>
    changeSnapshots(input.vm, (record, hypervisor) =>
      Effect.zipRight(requireTag(record, input.tag), hypervisor.deleteSnapshot(vmRef(record), diskPath(record), input.tag))
    )
})
