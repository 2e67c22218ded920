/**
 * Apply (reference §7): the provision lock, the host-side plan, then each recipe piped as stdin
 * to `sh -s` (or `python3 -`) in the guest with the prelude and its params, the apply log,
 * `[applied.*]` records, one reboot when a recipe asks for it, and health checks.
 *
 * Secrets reach the guest only inside the script text on stdin (never argv, never the log);
 * every line of guest output is masked before anyone sees it.
 */
import { randomBytes } from "node:crypto"
import { appendFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Clock, Duration, Effect, Exit } from "effect"
import type { Guest } from "@stoat/wire"
import { DataRoot } from "../platform/data-root.js"
import { adviseLookup, type Hint, InvalidSpec, NotRunning, startIt, type StoatError } from "../errors.js"
import { Locks } from "../platform/locks.js"
import { readSecrets, setSecretNames } from "../platform/secrets.js"
import { GuestTransport, type SshTarget } from "../ports/guest-transport.js"
import { isRunning, loadVm, sshTarget, type OkRecord } from "../vm/records.js"
import { VmStore } from "../vm/store.js"
import { recipeDetails } from "../vm/view.js"
import { durationMs } from "./manifest.js"
import { redact } from "./plan.js"
import { asRoot } from "../guest/root.js"
import { readFirstBootMarkers } from "./first-boot.js"
import { healthScript, planApply, recipeScript, type PlannedStep } from "./steps.js"
import { Progress } from "../context/progress.js"

/** How the apply log's last line begins when every recipe ran and a health check failed (the recipes stay applied). */
export const HEALTH_FAILED = "health check failed"

/** One run of a recipe's health check as the ssh user: exit 0 is ok; a recipe without a check is ok. */
const runHealthCheck = (target: SshTarget, guest: Guest, step: Pick<PlannedStep, "recipe" | "params">) =>
  Effect.gen(function* () {
    const health = step.recipe.manifest.health
    if (health === null) return { ok: true, exitCode: 0, output: "" }
    const check = yield* (yield* GuestTransport)
      .exec(target, ["sh", "-s"], {
        stdin: healthScript(guest, health.check, step.params),
        timeoutMs: durationMs(health.timeout)
      })
      .pipe(
        Effect.catchTag("Timeout", () =>
          Effect.succeed({ exitCode: -1, stdout: new Uint8Array(), stderr: new TextEncoder().encode("timed out") })
        )
      )
    const output = `${Buffer.from(check.stdout).toString("utf8")}${Buffer.from(check.stderr).toString("utf8")}`.trim()
    return { ok: check.exitCode === 0, exitCode: check.exitCode, output: redact(output, step.params.secretValues) }
  })

/**
 * `wait --healthy`: every applied recipe's check, run again every 300 ms until all pass or the
 * longest check timeout (or `deadline`) is reached; each outcome is stored as that recipe's health.
 * True only when all pass.
 */
export const waitHealthy = (vm: string, deadline: number) =>
  Effect.gen(function* () {
    const planned = yield* planApply(vm, undefined)
    const steps = planned.steps.filter((step) => planned.record.config.applied[step.recipe.manifest.name] !== undefined)
    const target = sshTarget(yield* DataRoot, planned.record)
    const longest = Math.max(
      0,
      ...steps.map((step) =>
        step.recipe.manifest.health === null ? 0 : durationMs(step.recipe.manifest.health.timeout)
      )
    )
    const until = Math.min(deadline, (yield* Clock.currentTimeMillis) + longest)
    const round = Effect.forEach(steps, (step) =>
      Effect.tap(runHealthCheck(target, planned.guest, step), (check) =>
        recordApplied(vm, step.recipe.manifest.name, (entry) => {
          const health = check.ok ? "ok" : "failed"
          return entry === undefined || entry.health === health ? entry : { ...entry, health }
        })
      )
    )
    const allOk = (checks: ReadonlyArray<{ readonly ok: boolean }>) => checks.every((check) => check.ok)
    const untilPass: Effect.Effect<boolean, StoatError, Effect.Effect.Context<typeof round>> = Effect.flatMap(
      round,
      (checks) =>
        allOk(checks)
          ? Effect.succeed(true)
          : Effect.delay(
              Effect.suspend(() => untilPass),
              Duration.millis(300)
            )
    )
    // The first round always runs, however little time is left; the next ones 300 ms apart.
    if (allOk(yield* round)) return true
    return yield* Effect.delay(untilPass, Duration.millis(300)).pipe(
      Effect.timeoutTo({
        duration: Duration.millis(Math.max(0, until - (yield* Clock.currentTimeMillis))),
        onTimeout: () => false,
        onSuccess: (ok) => ok
      })
    )
  })

/** The apply log: truncated per run, one line at a time, also streamed as `log` events. */
const applyLog = (path: string, progress: Progress["Type"], secrets: () => ReadonlyArray<string>) => {
  writeFileSync(path, "")
  const line = (text: string) => {
    const masked = redact(text, secrets())
    appendFileSync(path, `${masked}\n`)
    progress.emit({ type: "log", data: { line: masked } })
  }
  /** A sink for guest output: complete lines go to the log, a partial line waits for its end. */
  const stream = () => {
    let pending = ""
    const decoder = new TextDecoder()
    return {
      write: (chunk: Uint8Array) => {
        pending += decoder.decode(chunk, { stream: true })
        const lines = pending.split("\n")
        pending = lines.pop() ?? ""
        for (const text of lines) line(text.replace(/\r$/, ""))
      },
      flush: () => {
        if (pending !== "") line(pending)
        pending = ""
      }
    }
  }
  return { line, stream }
}

const parseOutputs = (
  text: string,
  declared: ReadonlyArray<{ readonly name: string }>,
  secrets: ReadonlyArray<string>
) => {
  const names = new Set(declared.map((output) => output.name))
  const outputs: Record<string, string> = {}
  for (const row of text.split("\n")) {
    const at = row.indexOf("=")
    if (at <= 0) continue
    const name = row.slice(0, at).trim()
    if (names.has(name)) outputs[name] = redact(row.slice(at + 1), secrets)
  }
  return outputs
}

const detailOf = (vm: string) =>
  Effect.gen(function* () {
    const record = yield* loadVm(vm)
    const secrets = yield* readSecrets(record.dir)
    return recipeDetails(record, setSecretNames(secrets))
  })

type AppliedEntry = OkRecord["config"]["applied"][string]

/**
 * Read-modify-write of `[applied.<name>]` under the root lock, so a parallel update is not lost;
 * `change` answering the entry it was given (or none) writes nothing.
 */
const recordApplied = (
  vm: string,
  name: string,
  change: (entry: AppliedEntry | undefined) => AppliedEntry | undefined
) =>
  Effect.gen(function* () {
    const store = yield* VmStore
    yield* (yield* Locks).withRootLock(
      Effect.gen(function* () {
        const fresh = yield* loadVm(vm)
        const current = fresh.config.applied[name]
        const next = change(current)
        if (next === undefined || next === current) return
        yield* store.write(vm, { ...fresh.config, applied: { ...fresh.config.applied, [name]: next } })
      })
    )
  })

/** What apply needs from the lifecycle, with what the lifecycle's calls require (`R`). */
export interface ApplyHooks<R> {
  /** Waits until the guest answers ssh (the lifecycle's own wait). */
  readonly waitReachable: (record: OkRecord, timeoutMs: number) => Effect.Effect<unknown, StoatError, R>
  /** Stops and starts the VM and waits for ssh (for `reboot = true`). */
  readonly reboot: (record: OkRecord) => Effect.Effect<unknown, StoatError, R>
}

const SSH_WAIT_MS = 90_000
const RECIPE_TIMEOUT_MS = 60 * 60_000

/**
 * Runs the recipe on stdin in a process group of its own and writes the group's id to `$1`, so
 * an apply that is interrupted or times out can stop everything the script started (apt under
 * sudo, its dpkg), not only the session's first process. A background job's stdin is /dev/null,
 * so the script reaches it on fd 3.
 */
export const RECIPE_IN_OWN_GROUP = [
  "exec 3<&0",
  `run='echo $$ >"$1"; exec sh -s <&3 3<&-'`,
  'if command -v setsid >/dev/null 2>&1; then setsid sh -c "$run" stoat_recipe "$1" & else sh -c "$run" stoat_recipe "$1" & fi',
  'wait "$!"'
].join("\n")

/** Stops the group RECIPE_IN_OWN_GROUP recorded in `$1`: TERM (apt and dpkg release their locks), then KILL after 3 s. */
export const STOP_RECIPE_GROUP = [
  'p=$(cat "$1" 2>/dev/null); rm -f "$1"',
  'case $p in ""|*[!0-9]*) exit 0 ;; esac',
  'kill -TERM "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null || exit 0',
  'for i in 1 2 3; do kill -0 "-$p" 2>/dev/null || kill -0 "$p" 2>/dev/null || exit 0; sleep 1; done',
  'kill -KILL "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null; exit 0'
].join("\n")

/** The whole apply of one VM. A second apply while one runs answers `applied: []` with the reason. */
export const applyVm = <R>(vm: string, only: ReadonlyArray<string> | undefined, hooks: ApplyHooks<R>) =>
  Effect.gen(function* () {
    const first = yield* loadVm(vm)
    const lockPath = join(first.dir, "provision.lock")
    const busy = {
      vm,
      applied: [] as string[],
      skipped_reason: "provision in progress",
      recipes_detail: yield* detailOf(vm)
    }
    return yield* (yield* Locks).tryLock(lockPath, `provision of VM "${vm}"`, runApply(vm, only, hooks)).pipe(
      Effect.catchIf(
        (error) => error._tag === "InUse" && error.subject === lockPath,
        () => Effect.succeed(busy)
      )
    )
  })

const runApply = <R>(vm: string, only: ReadonlyArray<string> | undefined, hooks: ApplyHooks<R>) =>
  Effect.gen(function* () {
    const record = yield* loadVm(vm)
    if (!(yield* isRunning(record)))
      return yield* new NotRunning({ message: `VM "${vm}" is not running`, subject: vm, hint: startIt(vm) })
    let planned = yield* planApply(vm, only)
    if (planned.steps.length === 0)
      return { vm, applied: [], skipped_reason: "no recipes configured", recipes_detail: [] }
    const { guest } = planned
    const secrets = planned.steps.flatMap((step) => step.params.secretValues)
    const root = yield* DataRoot
    const transport = yield* GuestTransport
    const target = sshTarget(root, record)
    // Recipes run as root: the words that make a command root here, refused before anything runs when the guest has none.
    const escalate = yield* asRoot(target, guest, [], "applying recipes")
    const rootArgv = (argv: ReadonlyArray<string>) => [...escalate, ...argv]
    const progress = yield* Progress
    const log = applyLog(join(record.dir, "last-provision.log"), progress, () => secrets)
    let ended = false
    const failed = (line: string, message: string, subject: string, hint?: Hint) =>
      Effect.zipRight(
        Effect.sync(() => {
          ended = true
          log.line(`FAILED: ${line}`)
        }),
        Effect.fail(new InvalidSpec({ message: redact(message, secrets), subject, ...(hint ? { hint } : {}) }))
      )

    const body = Effect.gen(function* () {
      log.line(`waiting for ssh on port ${record.config.sshport}…`)
      yield* hooks.waitReachable(record, SSH_WAIT_MS)
      // A cloud VM's first boot may have run its recipes already: record those, then plan again.
      if (record.config.mode === "cloud" && Object.keys(record.config.applied).length === 0) {
        const markers = yield* readFirstBootMarkers(
          target,
          planned.steps.map((step) => step.recipe.manifest.name),
          rootArgv
        )
        for (const marker of markers) {
          const step = planned.steps.find((s) => s.recipe.manifest.name === marker.name)!
          yield* recordApplied(vm, marker.name, () => ({
            version: step.recipe.manifest.version,
            hash: marker.hash,
            script_hash: marker.scriptHash,
            at: new Date().toISOString(),
            health: "unknown",
            outputs: parseOutputs(marker.outputs, step.recipe.manifest.outputs, secrets)
          }))
          log.line(`recorded ${marker.name} from first boot`)
        }
        if (markers.length > 0) planned = yield* planApply(vm, only)
      }
      const steps = planned.steps
      const ran: string[] = []
      for (const step of steps) {
        const name = step.recipe.manifest.name
        if (step.decision.action === "skip") {
          log.line(`skipped ${name}: ${step.decision.reason}`)
          continue
        }
        log.line(`=== recipe ${name} ===`)
        progress.emit({ type: "stage", data: { recipe: name } })
        const outputPath = `/tmp/stoat-output.${name}.${randomBytes(6).toString("hex")}`
        const stdout = log.stream()
        const stderr = log.stream()
        const groupFile = `${outputPath}.group`
        const stopGroup = transport
          .exec(target, rootArgv(["sh", "-c", STOP_RECIPE_GROUP, "stoat_stop", groupFile]), { timeoutMs: 10_000 })
          .pipe(Effect.ignore)
        const result = yield* transport
          .exec(target, rootArgv(["sh", "-c", RECIPE_IN_OWN_GROUP, "stoat_recipe", groupFile]), {
            stdin: recipeScript(guest, step, outputPath),
            timeoutMs: RECIPE_TIMEOUT_MS,
            onStdout: stdout.write,
            onStderr: stderr.write
          })
          .pipe(
            Effect.onExit((exit) => (Exit.isSuccess(exit) ? Effect.void : stopGroup)),
            Effect.catchTag("Timeout", () => failed(`${name} timed out`, `recipe "${name}" timed out`, name))
          )
        stdout.flush()
        stderr.flush()
        // What the script left: its outputs, read and removed, and the group file.
        const collect = transport.exec(
          target,
          rootArgv(["sh", "-c", 'cat "$1" 2>/dev/null; rm -f "$1" "$2"', "stoat_output", outputPath, groupFile]),
          {
            timeoutMs: 30_000
          }
        )
        if (result.exitCode !== 0) {
          yield* Effect.ignore(collect)
          const last = Buffer.from(result.stderr).toString("utf8").trim().split("\n").pop() ?? ""
          return yield* failed(
            `${name} exited ${result.exitCode}`,
            `recipe "${name}" failed with exit code ${result.exitCode}${last ? `: ${last}` : ""}`,
            name,
            adviseLookup("vm.logs", { vm, which: "apply" })
          )
        }
        const collected = yield* collect
        const outputs = parseOutputs(
          Buffer.from(collected.stdout).toString("utf8"),
          step.recipe.manifest.outputs,
          secrets
        )
        yield* recordApplied(vm, name, () => ({
          version: step.recipe.manifest.version,
          hash: step.hash,
          script_hash: step.scriptHash,
          at: new Date().toISOString(),
          health: "unknown",
          outputs
        }))
        ran.push(name)
      }
      const rebooter = steps.find((step) => ran.includes(step.recipe.manifest.name) && step.recipe.manifest.reboot)
      if (rebooter !== undefined && record.config.mode === "disk") {
        log.line(`rebooting ${vm} to finish ${rebooter.recipe.manifest.name}...`)
        yield* hooks.reboot(record)
      }
      // Health of every applied target: a recipe without a check is ok once applied.
      const unhealthy: string[] = []
      for (const step of steps) {
        const name = step.recipe.manifest.name
        const current = (yield* loadVm(vm)).config.applied[name]
        if (current === undefined) continue
        const check = yield* runHealthCheck(target, guest, step)
        if (!check.ok) {
          log.line(`health check of ${name} failed (exit ${check.exitCode})${check.output ? `: ${check.output}` : ""}`)
          unhealthy.push(`${name}${check.output ? ` (${check.output.split("\n").pop()})` : ""}`)
        }
        yield* recordApplied(vm, name, (entry) => ({ ...(entry ?? current), health: check.ok ? "ok" : "failed" }))
      }
      if (unhealthy.length > 0) {
        return yield* failed(
          `${HEALTH_FAILED}: ${unhealthy.join(", ")}`,
          `health check failed for ${unhealthy.join(", ")}; the recipes stay applied`,
          unhealthy[0]!.split(" ")[0]!
        )
      }
      log.line("done")
      return { vm, applied: ran, skipped_reason: "", recipes_detail: yield* detailOf(vm) }
    })
    return yield* body.pipe(
      Effect.onInterrupt(() => Effect.sync(() => log.line("CANCELLED: interrupted"))),
      // A failure not already logged (ssh never came up, a guest call failed) still ends the log.
      Effect.tapError((error) => Effect.sync(() => (ended ? undefined : log.line(`FAILED: ${error.message}`))))
    )
  })
