import { Effect } from "effect"
import { DataRoot } from "../platform/data-root.js"
import type { StoatError } from "../errors.js"
import type { GuestDefinitions, LoadedGuest } from "../guest-definitions/definitions.js"
import type { Hypervisor } from "../ports/hypervisor.js"
import type { SshTarget } from "../ports/guest-transport.js"
import { LoadedVms, loadWholeVm, requireRunning, sshTarget } from "../vm/records.js"
import type { VmStore } from "../vm/store.js"

/** What a guest operation needs to know about its VM: how to reach it and what kind of guest it is. */
export interface GuestSession {
  readonly vm: string
  readonly target: SshTarget
  readonly guest: LoadedGuest
}

/** A VM without a known guest (`os = ""`): plain POSIX, nothing the definitions add. */
const UNKNOWN_GUEST: LoadedGuest = {
  name: "",
  init: "rc",
  shell: "/bin/sh",
  installer: "",
  default_backend: "ssh",
  default_ssh_user: "root",
  escalate: [],
  capabilities: [],
  aliases: [],
  filename_hints: [],
  seed_packages: [],
  pkg: { setup: "", install: [], env: {}, runtime_packages: {} },
  svc: { enable: "", start: "", stop: "", restart: "", status: "" },
  cmd: {},
  backend: {},
  source: "bundled"
}

/** The running VM `vm`, as this call loaded it already (see `LoadedVms`) or loaded now. */
const runningVm = (vm: string) =>
  Effect.gen(function* () {
    const { record, guest } = (yield* LoadedVms).get(vm) ?? (yield* loadWholeVm(vm))
    yield* requireRunning(record)
    return { record, guest, target: sshTarget(yield* DataRoot, record) }
  })

/** How to reach the running VM `vm`: `not_found`, `broken` or `not_running` otherwise. */
export const runningTarget = (
  vm: string
): Effect.Effect<SshTarget, StoatError, VmStore | GuestDefinitions | Hypervisor | DataRoot> =>
  Effect.map(runningVm(vm), ({ target }) => target)

/** The running VM `vm` as a guest session: `not_found`, `broken` or `not_running` otherwise. */
export const guestSession = (
  vm: string
): Effect.Effect<GuestSession, StoatError, VmStore | GuestDefinitions | Hypervisor | DataRoot> =>
  Effect.map(runningVm(vm), ({ record, guest, target }) => ({ vm: record.name, target, guest: guest ?? UNKNOWN_GUEST }))
