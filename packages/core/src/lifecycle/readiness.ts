/** Waiting for a VM state: sshd answering (and cloud-init done), stopped, or its recipes applied. */
import { readFile } from "node:fs/promises"
import { join } from "node:path"
import { Clock, Duration, Effect, Schedule } from "effect"
import { DataRoot } from "../platform/data-root.js"
import { adviseLookup, CannotReach, startIt, Timeout } from "../errors.js"
import { elapsedSince, pollUntil } from "../platform/poll.js"
import { GuestSignals, Hypervisor, type VmRef } from "../ports/hypervisor.js"
import { GuestTransport } from "../ports/guest-transport.js"
import { HEALTH_FAILED } from "../recipes/apply.js"
import { sshJumpOf, readPlacement } from "../vm/placement.js"
import { isRunning, sshTarget, vmRef, type OkRecord } from "../vm/records.js"

/**
 * A cloud guest is ready once cloud-init has finished: `status: done` (recoverable warnings
 * included). Before the user exists ssh refuses the key; that counts as not yet.
 */
const cloudInitDone = (record: OkRecord) =>
  Effect.gen(function* () {
    const root = yield* DataRoot
    const run = yield* Effect.either(
      (yield* GuestTransport).exec(sshTarget(root, record), ["cloud-init", "status"], { timeoutMs: 15_000 })
    )
    if (run._tag === "Left") return false
    const status = /status:\s*(\S+)/.exec(Buffer.from(run.right.stdout).toString("utf8"))?.[1]
    if (status === "error") {
      return yield* new CannotReach({
        message: `cloud-init failed in VM "${record.name}"`,
        subject: record.name,
        hint: adviseLookup("vm.logs", { vm: record.name })
      })
    }
    return status === "done" || status === "disabled"
  })

/**
 * Waits until the sshd of a VM's guest answers on `port` and `ready` holds (cloud-init done, say),
 * failing at once if the VM stops: first the guest's own signal, then one banner probe at a time.
 * The one readiness path: `up --wait` and @stoat/qemu's `withVm` both wait here.
 */
export const awaitSsh = <E = never, R = never>(
  vm: VmRef,
  port: number,
  timeoutMs: number,
  ready: Effect.Effect<boolean, E, R> = Effect.succeed(true)
) =>
  Effect.gen(function* () {
    const transport = yield* GuestTransport
    const hypervisor = yield* Hypervisor
    const started = yield* Clock.currentTimeMillis
    const jump = sshJumpOf(readPlacement(vm.dir).host)
    yield* (yield* GuestSignals).awaitSshd(vm, timeoutMs)
    const attempt = Effect.gen(function* () {
      if (!(yield* hypervisor.status(vm)).running) {
        return yield* new CannotReach({
          message: `VM "${vm.name}" is not running`,
          subject: vm.name,
          hint: startIt(vm.name)
        })
      }
      // One long attempt at a time: an abandoned connection lingers in QEMU's user-mode network and
      // reaches sshd later as a stray, and dropbear refuses a guest's sixth unauthenticated connection.
      const left = timeoutMs - (yield* elapsedSince(started))
      if (!(yield* transport.probe(port, Math.min(10_000, Math.max(1000, left)), jump))) return false
      return yield* ready
    })
    yield* pollUntil(attempt, {
      schedule: Schedule.spaced(Duration.millis(150)),
      until: (answered) => answered,
      within: Duration.millis(Math.max(0, timeoutMs - (yield* elapsedSince(started)))),
      onTimeout: () =>
        new Timeout({
          message: `VM "${vm.name}" did not answer ssh within ${Math.round(timeoutMs / 1000)} s`,
          subject: vm.name
        })
    })
    return yield* elapsedSince(started)
  })

/** Waits until the guest's sshd answers (and, for cloud guests, cloud-init is done), failing at once if the VM stops. */
export const waitReachable = (record: OkRecord, timeoutMs: number) =>
  awaitSsh(
    vmRef(record),
    record.config.sshport,
    timeoutMs,
    record.config.backend === "cloudinit" ? cloudInitDone(record) : Effect.succeed(true)
  )

export const waitStopped = (record: OkRecord, timeoutMs: number) =>
  Effect.gen(function* () {
    const started = yield* Clock.currentTimeMillis
    yield* pollUntil(isRunning(record), {
      schedule: Schedule.spaced(Duration.millis(200)),
      until: (running) => !running,
      within: Duration.millis(timeoutMs),
      onTimeout: () =>
        new Timeout({
          message: `VM "${record.name}" still running after ${Math.round(timeoutMs / 1000)} s`,
          subject: record.name
        })
    })
    return yield* elapsedSince(started)
  })

/**
 * `applied` keys off the apply log's final `done` line; a VM with no recipes has nothing to apply.
 * For `--healthy` a run whose health check failed counts as applied too: the checks are run again.
 */
export const waitApplied = (record: OkRecord, timeoutMs: number, healthFailureIsApplied = false) =>
  Effect.gen(function* () {
    const started = yield* Clock.currentTimeMillis
    const waited = yield* waitReachable(record, timeoutMs)
    if (record.config.recipes.length === 0) return waited
    const log = join(record.dir, "last-provision.log")
    const lastLine = Effect.map(
      Effect.promise(() => readFile(log, "utf8").catch(() => "")),
      (text) => text.trimEnd().split("\n").pop() ?? ""
    )
    const last = yield* pollUntil(lastLine, {
      schedule: Schedule.spaced(Duration.millis(300)),
      until: (line) => line === "done" || line.startsWith("FAILED:") || line.startsWith("CANCELLED:"),
      within: Duration.millis(Math.max(0, timeoutMs - (yield* elapsedSince(started)))),
      onTimeout: () =>
        new Timeout({ message: `recipes not applied within ${Math.round(timeoutMs / 1000)} s`, subject: record.name })
    })
    const applied = last === "done" || (healthFailureIsApplied && last.startsWith(`FAILED: ${HEALTH_FAILED}`))
    if (!applied) return yield* new CannotReach({ message: `recipes did not apply: ${last}`, subject: record.name })
    return yield* elapsedSince(started)
  })
