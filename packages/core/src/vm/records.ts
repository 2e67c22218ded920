import { Effect } from "effect"
import type { DataRootPaths } from "../platform/data-root.js"
import type * as fs from "../platform/fs.js"
import { Broken, fixOrDelete, NotRunning, startIt } from "../errors.js"
import { Hypervisor, type VmRef } from "../ports/hypervisor.js"
import type { SshTarget } from "../ports/guest-transport.js"
import { VmStore, type VmRecord } from "./store.js"
import { unknownGuestReason } from "./view.js"
import { sshUserOf } from "./config.js"
import { GuestDefinitions } from "../guest-definitions/definitions.js"

/** A VM record whose vm.toml parsed (loadVm also checks that it names a known guest). */
export type OkRecord = Extract<VmRecord, { kind: "ok" }>

export const vmRef = (record: VmRecord): VmRef => ({ name: record.name, dir: record.dir })

/**
 * A VM that must parse and name a known guest: broken ones (as `ls` shows them) answer `broken`
 * with the reason, so nothing acts on — or rewrites — a VM that is not whole.
 */
export const loadVm = (name: string): Effect.Effect<OkRecord, Broken | fs.FsError, VmStore | GuestDefinitions> =>
  Effect.gen(function* () {
    const record = yield* (yield* VmStore).get(name)
    const reason =
      record.kind === "broken"
        ? record.reason
        : record.config.os === ""
          ? undefined
          : yield* Effect.flatMap(GuestDefinitions, (guests) => guests.get(record.config.os)).pipe(
              Effect.as(undefined),
              Effect.catchTag("NotFound", () => Effect.succeed(unknownGuestReason(record.config.os)))
            )
    if (reason === undefined) return record as OkRecord
    return yield* new Broken({ message: `VM "${name}" is broken: ${reason}`, subject: name, hint: fixOrDelete(name) })
  })

export const isRunning = (record: VmRecord) =>
  Effect.map(
    Effect.flatMap(Hypervisor, (h) => h.status(vmRef(record))),
    (s) => s.running
  )

export const requireRunning = (record: OkRecord): Effect.Effect<void, NotRunning, Hypervisor> =>
  Effect.flatMap(isRunning(record), (running) =>
    running
      ? Effect.void
      : Effect.fail(
          new NotRunning({
            message: `VM "${record.name}" is not running`,
            subject: record.name,
            hint: startIt(record.name)
          })
        )
  )

export const sshTarget = (root: DataRootPaths, record: OkRecord): SshTarget => ({
  vm: record.name,
  port: record.config.sshport,
  user: sshUserOf(record.config),
  privateKeyPath: root.clientKey
})
