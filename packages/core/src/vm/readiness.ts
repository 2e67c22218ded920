/** Waiting for a VM state: sshd answering (and cloud-init done), stopped, or its recipes applied. */
import { readFile } from "node:fs/promises"
import { join } from "node:path"
import { Clock, Duration, Effect, Schedule } from "effect"
import { DataRoot } from "../platform/data-root.js"
import { adviseLookup, CannotReach, startIt, Timeout } from "../errors.js"
import { elapsedSince, pollUntil } from "../platform/poll.js"
import { Hypervisor } from "../ports/hypervisor.js"
import { GuestTransport } from "../ports/guest-transport.js"
import { HEALTH_FAILED } from "../recipes/apply.js"
import { isRunning, sshTarget, vmRef, type OkRecord } from "./records.js"

/**
 * A cloud guest is ready once cloud-init has finished: `status: done` (recoverable warnings
 * included). Before the user exists ssh refuses the key; that counts as not yet.
 */
const cloudInitDone = (record: OkRecord) =>
  Effect.gen(function* () {
    const root = yield* DataRoot
    const run = yield* Effect.either((yield* GuestTransport).exec(sshTarget(root, record), ["cloud-init", "status"], { timeoutMs: 15_000 }))
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

/** Waits until the guest's sshd answers (and, for cloud guests, cloud-init is done), failing at once if the VM stops. */
export const waitReachable = (record: OkRecord, timeoutMs: number) =>
  Effect.gen(function* () {
    const transport = yield* GuestTransport
    const started = yield* Clock.currentTimeMillis
    yield* (yield* Hypervisor).awaitSshd(vmRef(record), timeoutMs)
    const attempt = Effect.gen(function* () {
      if (!(yield* isRunning(record))) {
        return yield* new CannotReach({ message: `VM "${record.name}" is not running`, subject: record.name, hint: startIt(record.name) })
      }
      // One long attempt at a time: an abandoned connection lingers in QEMU's user-mode network and
      // reaches sshd later as a stray, and dropbear refuses a guest's sixth unauthenticated connection.
      const left = timeoutMs - (yield* elapsedSince(started))
      if (!(yield* transport.probe(record.config.sshport, Math.min(10_000, Math.max(1000, left))))) return false
      return record.config.backend === "cloudinit" ? yield* cloudInitDone(record) : true
    })
    yield* pollUntil(attempt, {
      schedule: Schedule.spaced(Duration.millis(150)),
      until: (ready) => ready,
      within: Duration.millis(Math.max(0, timeoutMs - (yield* elapsedSince(started)))),
      onTimeout: () => new Timeout({ message: `VM "${record.name}" did not answer ssh within ${Math.round(timeoutMs / 1000)} s`, subject: record.name })
    })
    return yield* elapsedSince(started)
  })

export const waitStopped = (record: OkRecord, timeoutMs: number) =>
  Effect.gen(function* () {
    const started = yield* Clock.currentTimeMillis
    yield* pollUntil(isRunning(record), {
      schedule: Schedule.spaced(Duration.millis(200)),
      until: (running) => !running,
      within: Duration.millis(timeoutMs),
      onTimeout: () => new Timeout({ message: `VM "${record.name}" still running after ${Math.round(timeoutMs / 1000)} s`, subject: record.name })
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
    const lastLine = Effect.map(Effect.promise(() => readFile(log, "utf8").catch(() => "")), (text) => text.trimEnd().split("\n").pop() ?? "")
    const last = yield* pollUntil(lastLine, {
      schedule: Schedule.spaced(Duration.millis(300)),
      until: (line) => line === "done" || line.startsWith("FAILED:") || line.startsWith("CANCELLED:"),
      within: Duration.millis(Math.max(0, timeoutMs - (yield* elapsedSince(started)))),
      onTimeout: () => new Timeout({ message: `recipes not applied within ${Math.round(timeoutMs / 1000)} s`, subject: record.name })
    })
    const applied = last === "done" || (healthFailureIsApplied && last.startsWith(`FAILED: ${HEALTH_FAILED}`))
    if (!applied) return yield* new CannotReach({ message: `recipes did not apply: ${last}`, subject: record.name })
    return yield* elapsedSince(started)
  })
