import { copyFile, link, open, readFile, rename, stat, unlink } from "node:fs/promises"
import { Clock, Duration, Effect, Redacted, Schedule } from "effect"
import {
  AlreadyRunning,
  diskFull,
  elapsedSince,
  pollUntil,
  Internal,
  isDiskFull,
  isProcessAlive,
  ControlRejected,
  NotRunning,
  ProviderStartFailed,
  ShareInvalid,
  writeFileAtomic,
  type BootPlan,
  type LimitReached,
  type RunState,
  type VmRef
} from "@stoat/core"
import { qemuArgs, vmFiles } from "./argv.js"
import { vmFilePath } from "./disks.js"
import { killRunning, ownsVm, readRunState } from "./process.js"
import { qmpExecute, withQmp } from "./qmp.js"
import { runChild } from "./child.js"
import { stderrMessage } from "./run.js"
import { TINY_SSHD_MARKER } from "./tiny/guest-files.js"
import { toDropbearKey, writeVmInitrd } from "./tiny/vm-initrd.js"

const POLL_MS = 50
/** How long the launching QEMU may take to daemonize (it forks once devices and sockets are set up). */
const DAEMONIZE_TIMEOUT_MS = 60_000

const errorText = (cause: unknown) => (cause instanceof Error ? cause.message : String(cause))

/**
 * A file a start writes into the VM folder (its initrd): a full file system is limit_reached with
 * the free space, since only freeing space helps; any other failure is qemu_start_failed.
 */
const writeForStart = <A>(
  vm: VmRef,
  path: string,
  what: string,
  write: () => Promise<A>
): Effect.Effect<A, ProviderStartFailed | LimitReached> =>
  Effect.catchAll(
    Effect.tryPromise({ try: write, catch: (cause) => cause }),
    (cause): Effect.Effect<never, ProviderStartFailed | LimitReached> =>
      isDiskFull(cause)
        ? Effect.flatMap(diskFull(`cannot ${what} for VM "${vm.name}"`, path), Effect.fail)
        : Effect.fail(new ProviderStartFailed({ message: `cannot ${what}: ${errorText(cause)}`, subject: vm.name }))
  )

/** Every folder shared over 9p must exist and be a directory (QEMU would only fail at the guest's mount). */
const checkShares = (plan: BootPlan): Effect.Effect<void, ShareInvalid> =>
  Effect.forEach(
    [
      { what: "work share", path: plan.workShare },
      ...(plan.hostShare !== undefined ? [{ what: "share", path: plan.hostShare }] : []),
      ...(plan.extraShares ?? []).map((share) => ({ what: `share "${share.tag}"`, path: share.host }))
    ],
    ({ what, path }) =>
      Effect.flatMap(
        Effect.promise(() =>
          stat(path).then(
            (info) => (info.isDirectory() ? "ok" : "not a directory"),
            () => "does not exist"
          )
        ),
        (problem) =>
          problem === "ok"
            ? Effect.void
            : Effect.fail(
                new ShareInvalid({
                  message: `${what} ${path} ${problem}; shares must be existing directories`,
                  subject: path
                })
              )
      ),
    { discard: true }
  )

/** Direct-boot guests get their identity in a per-VM initrd: the shared base plus keys and name. */
const writeIdentity = (plan: BootPlan): Effect.Effect<string | undefined, ProviderStartFailed | LimitReached> => {
  const identity = plan.guestIdentity
  if (plan.kernel === undefined || identity === undefined) return Effect.succeed(undefined)
  const files = vmFiles(plan.vm.dir)
  const base = plan.kernel.initrd
  return writeForStart(plan.vm, files.initrd, "prepare the guest's initrd", async () => {
    const hostKey = Redacted.value(identity.hostKey)
    await writeVmInitrd({
      baseInitrd: base,
      out: files.initrd,
      authorizedKeys: identity.authorizedKeys,
      hostKeyDropbear: await toDropbearKey(hostKey),
      hostKeyOpenssh: Buffer.from(hostKey),
      hostname: identity.hostname
    })
    return files.initrd
  })
}

/** qcow2 or raw, from the image header; QEMU refuses to guess raw for writable disks without a warning. */
const diskFormatOf = (path: string): Effect.Effect<"qcow2" | "raw"> =>
  Effect.promise(async () => {
    const handle = await open(path, "r").catch(() => undefined)
    if (!handle) return path.endsWith(".qcow2") ? "qcow2" : "raw"
    try {
      const magic = Buffer.alloc(4)
      await handle.read(magic, 0, 4, 0)
      return magic.toString("latin1") === "QFI\xfb" ? "qcow2" : "raw"
    } finally {
      await handle.close()
    }
  })

/** Runs QEMU until it daemonizes; resolves with its exit code and stderr. Interrupting kills it. */
const launch = (
  qemu: string,
  args: ReadonlyArray<string>
): Effect.Effect<{ readonly code: number | null; readonly stderr: string }, string> =>
  // The daemon points its stderr at /dev/null before the launcher exits, so the run ends with the launcher.
  runChild(qemu, args, { detached: true, stdout: "ignore", timeoutMs: DAEMONIZE_TIMEOUT_MS }).pipe(
    Effect.mapError((failure) => failure.message),
    Effect.flatMap((exit) =>
      exit.timedOut
        ? Effect.fail(`QEMU did not finish starting within ${DAEMONIZE_TIMEOUT_MS / 1000} s`)
        : Effect.succeed({ code: exit.code, stderr: exit.stderr })
    )
  )

const removeStale = (paths: ReadonlyArray<string>) =>
  Effect.promise(() => Promise.all(paths.map((path) => unlink(path).catch(() => undefined))))

/** A saved RAM and device state to resume instead of booting, with the initrd the saved guest booted from. */
export interface ResumeFrom {
  readonly state: string
  readonly initrd?: string
}

/**
 * A hard link where the file system allows one (instant whatever the size), else a copy. Safe
 * because nothing rewrites these files in place: a new initrd replaces the old by rename.
 */
export const linkOrCopy = async (from: string, to: string): Promise<void> => {
  const temp = `${to}.tmp-${process.pid}`
  await unlink(temp).catch(() => undefined)
  await link(from, temp).catch(() => copyFile(from, temp))
  await rename(temp, to)
}

/** The VM's own initrd: written for its identity at a boot, or the saved guest's when resuming. */
const prepareInitrd = (
  plan: BootPlan,
  resume: ResumeFrom | undefined
): Effect.Effect<string | undefined, ProviderStartFailed | LimitReached> => {
  if (resume === undefined) return writeIdentity(plan)
  const saved = resume.initrd
  if (saved === undefined || plan.kernel === undefined) return Effect.succeed(undefined)
  const initrd = vmFiles(plan.vm.dir).initrd
  return writeForStart(plan.vm, initrd, `prepare the guest's initrd from ${saved}`, () =>
    linkOrCopy(saved, initrd).then(() => initrd)
  )
}

/**
 * Starts QEMU detached: it daemonizes once devices and sockets are ready, so by the time this
 * returns the pidfile and QMP socket exist. Stoat may exit; the pidfile is the only record.
 * With `resume`, QEMU loads a saved state instead of booting and is let run once it has.
 */
export const launchQemu = (
  plan: BootPlan,
  host: { readonly qemu: string; readonly accel: "kvm" | "tcg" },
  resume?: ResumeFrom
): Effect.Effect<RunState, ProviderStartFailed | AlreadyRunning | ShareInvalid | LimitReached> =>
  Effect.gen(function* () {
    const vm = plan.vm
    const files = vmFiles(vm.dir)
    const before = yield* Effect.sync(() => readRunState(vm))
    if (before.running)
      return yield* new AlreadyRunning({
        message: `VM "${vm.name}" is already running (pid ${before.pid})`,
        subject: vm.name
      })
    yield* checkShares(plan)
    const initrd = yield* prepareInitrd(plan, resume)
    const diskFormat = plan.disk !== undefined ? yield* diskFormatOf(vmFilePath(vm, plan.disk)) : undefined
    const args = qemuArgs(plan, {
      accel: host.accel,
      ...(initrd !== undefined ? { initrd } : {}),
      ...(diskFormat !== undefined ? { diskFormat } : {}),
      ...(resume !== undefined ? { incomingState: resume.state } : {})
    })
    yield* removeStale([files.pidfile, files.qmp, files.vnc, files.boot])
    const boot: BootRecord = {
      console_offset: yield* consoleSize(vm),
      // A resumed guest's sshd already listens: it prints no such line again.
      ...(plan.kernel !== undefined && resume === undefined ? { sshd_marker: TINY_SSHD_MARKER } : {}),
      plan,
      accel: host.accel
    }

    const failed = (message: string) => new ProviderStartFailed({ message, subject: vm.name })
    const result = yield* launch(host.qemu, args).pipe(
      Effect.mapError((why) => failed(`cannot run ${host.qemu}: ${why}`)),
      // An interrupted start must not leave a half-started daemon behind.
      Effect.onInterrupt(() => Effect.sync(() => killRunning(readRunState(vm))))
    )
    if (result.code !== 0) {
      const message = `QEMU failed to start VM "${vm.name}": ${stderrMessage(result.stderr, `exit ${String(result.code)}`)}`
      const portInUse = forwardNotBound(result.stderr)
      return yield* portInUse === undefined
        ? failed(message)
        : new ProviderStartFailed({ message, subject: vm.name, portInUse })
    }
    const state = yield* Effect.sync(() => readRunState(vm))
    if (!state.running) {
      const tail = yield* Effect.promise(() =>
        readFile(files.console, "utf8").then(
          (text) => text.trim().split("\n").slice(-3).join("; "),
          () => ""
        )
      )
      return yield* failed(`QEMU exited right after starting VM "${vm.name}"${tail ? `; console: ${tail}` : ""}`)
    }
    if (resume !== undefined) {
      yield* runResumed(vm).pipe(
        Effect.tapError(() => Effect.sync(() => killRunning(readRunState(vm)))),
        Effect.mapError((error) => failed(`VM "${vm.name}" did not resume from ${resume.state}: ${error.message}`))
      )
    }
    // Best effort: without the record, readiness just probes SSH without waiting for the console line
    // (a resumed guest prints none: its sshd already listens), and the VM cannot be checkpointed.
    yield* Effect.promise(() => writeFileAtomic(files.boot, JSON.stringify(boot)).catch(() => undefined))
    return state
  })

/**
 * The host port of a user-net forward QEMU could not set up ("Could not set up host forwarding
 * rule 'tcp:127.0.0.1:2200-:22'"): another program bound it first.
 */
export const forwardNotBound = (stderr: string): number | undefined => {
  const match = /host forwarding rule '?tcp:127\.0\.0\.1:(\d+)-/.exec(stderr)
  return match === null ? undefined : Number(match[1])
}

const RESUME_POLL_MS = 20

/** Waits until QEMU has loaded the incoming state, then lets the guest run (a checkpoint saves it paused). */
const runResumed = (vm: VmRef) =>
  withQmp(
    vmFiles(vm.dir).qmp,
    (qmp) => {
      const status = Effect.map(qmp.execute<{ readonly status: string }>("query-status"), (reply) => reply.status)
      return Effect.gen(function* () {
        const loaded = yield* pollUntil(status, {
          schedule: Schedule.spaced(Duration.millis(RESUME_POLL_MS)),
          until: (state) => state !== "inmigrate",
          within: Duration.seconds(120),
          onTimeout: () => new ControlRejected({ message: "loading the state took over 120 s", subject: vm.name })
        })
        if (loaded === "running") return
        if (loaded === "paused" || loaded === "postmigrate" || loaded === "prelaunch") return yield* qmp.execute("cont")
        const migration = yield* qmp.execute<{ readonly status?: string; readonly "error-desc"?: string }>(
          "query-migrate"
        )
        return yield* new ControlRejected({
          message: migration["error-desc"] ?? `the guest is ${loaded} after loading its state`,
          subject: vm.name
        })
      })
    },
    { subject: vm.name, commandTimeoutMs: 30_000 }
  )

/** Written by each start into the VM folder, read by `awaitSshd` and `checkpoint` (possibly in another process). */
export interface BootRecord {
  readonly console_offset: number
  /** The console line the guest prints once sshd listens; only guests Stoat assembles print one. */
  readonly sshd_marker?: string
  /** What this QEMU runs, so a checkpoint of it can be resumed with the very same devices. */
  readonly plan?: BootPlan
  readonly accel?: "kvm" | "tcg"
}

export const readBootRecord = (vm: VmRef): Effect.Effect<Partial<BootRecord> | undefined> =>
  Effect.promise(() =>
    readFile(vmFiles(vm.dir).boot, "utf8")
      .then((text) => JSON.parse(text) as Partial<BootRecord> | null)
      .then((record) => record ?? undefined)
      .catch(() => undefined)
  )

/** How often the console is read for the sshd line: every wait for it is `up --wait` time (a read costs microseconds). */
const SSHD_POLL_MS = 10

/** What a console log holds past `offset` (at most 1 MiB at a time); nothing when it is missing. Also the libvirt provider's reader of its domains' consoles. */
export const readConsoleFrom = (path: string, offset: number): Effect.Effect<Buffer> =>
  Effect.promise(async () => {
    const handle = await open(path, "r").catch(() => undefined)
    if (!handle) return Buffer.alloc(0)
    try {
      const { size } = await handle.stat()
      if (size <= offset) return Buffer.alloc(0)
      const buffer = Buffer.alloc(Math.min(size - offset, 1 << 20))
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, offset)
      return buffer.subarray(0, bytesRead)
    } finally {
      await handle.close()
    }
  })

/**
 * Waits until this boot's console shows the guest's "sshd listening" line. True once it does;
 * false at once for guests that print none, and when the VM stops or the time runs out (the
 * caller's SSH probe then decides). Connecting before that line would find no guest network,
 * and user-mode networking would retry that SYN with back-off for seconds.
 */
export const awaitSshd = (vm: VmRef, timeoutMs: number): Effect.Effect<boolean> =>
  Effect.gen(function* () {
    const files = vmFiles(vm.dir)
    const record = yield* readBootRecord(vm)
    const marker = record?.sshd_marker
    if (typeof marker !== "string" || typeof record?.console_offset !== "number") return false
    let offset = record.console_offset
    let pending = ""
    const look = Effect.gen(function* () {
      const chunk = yield* readConsoleFrom(files.console, offset)
      offset += chunk.length
      pending += chunk.toString("utf8")
      if (pending.includes(marker)) return "said"
      pending = pending.slice(pending.lastIndexOf("\n") + 1)
      return readRunState(vm).running ? "booting" : "stopped"
    })
    const outcome = yield* pollUntil(look, {
      schedule: Schedule.spaced(Duration.millis(SSHD_POLL_MS)),
      until: (state) => state !== "booting",
      within: Duration.millis(timeoutMs),
      onTimeout: () => "timed out"
    }).pipe(Effect.merge)
    return outcome === "said"
  })

/** Size of the console log now: what a start appends comes after it. */
export const consoleSize = (vm: VmRef): Effect.Effect<number> =>
  Effect.promise(() =>
    stat(vmFiles(vm.dir).console).then(
      (info) => info.size,
      () => 0
    )
  )

/**
 * How long a VM just started under KVM may keep its serial console silent before it is taken
 * for a guest KVM cannot run (a kvm-pvm host hangs a 64-bit kernel silently at 100% CPU).
 * Only guests known to talk on the serial console are judged by silence: a direct kernel boot
 * (its own `console=ttyS0`) or a cloud image. Every guest is watched for a QMP run state of
 * `internal-error` or `guest-panicked`.
 */
const KVM_SILENCE_MS = { directKernel: 4_000, cloudImage: 8_000, otherwise: 3_000 } as const

const WATCH_POLL_MS = 100
const WATCH_QMP_EVERY = 5

/** The reason a VM started under KVM is not running, or undefined once it shows it is. */
export const watchKvmStart = (plan: BootPlan, consoleOffset: number): Effect.Effect<string | undefined> =>
  Effect.gen(function* () {
    const vm = plan.vm
    const files = vmFiles(vm.dir)
    const talks = plan.kernel !== undefined || plan.seedIso !== undefined
    const budget =
      plan.kernel !== undefined
        ? KVM_SILENCE_MS.directKernel
        : talks
          ? KVM_SILENCE_MS.cloudImage
          : KVM_SILENCE_MS.otherwise
    const runState = qmpExecute<{ readonly status?: string }>(files.qmp, "query-status", undefined, {
      subject: vm.name,
      connectTimeoutMs: 1_000,
      commandTimeoutMs: 1_000
    }).pipe(
      Effect.map((reply) => reply.status),
      Effect.orElseSucceed(() => undefined)
    )
    const started = yield* Clock.currentTimeMillis
    let tick = 0
    /** The reason it is not running (undefined: it runs), or "watching" while it is too early to say. */
    const look = Effect.gen(function* () {
      const overdue = (yield* elapsedSince(started)) >= budget
      if (tick++ % WATCH_QMP_EVERY === 0 || overdue) {
        const status = yield* runState
        if (status === "internal-error") return "KVM internal error"
        if (status === "guest-panicked") return "the guest panicked under KVM"
      }
      if (!readRunState(vm).running) return "QEMU exited under KVM"
      if ((yield* consoleSize(vm)) > consoleOffset) return undefined
      if (overdue) return talks ? `no console output in ${Math.round(budget / 1000)} s` : undefined
      return "watching"
    })
    // Bounded by the silence budget inside `look` (and each look by QMP's own timeouts), not by `within`.
    return yield* pollUntil(look, {
      schedule: Schedule.spaced(Duration.millis(WATCH_POLL_MS)),
      until: (verdict) => verdict !== "watching",
      within: Duration.infinity,
      onTimeout: () => "never"
    }).pipe(Effect.merge)
  })

/** Polls until the process no longer runs this VM (gone, a zombie, or a reused pid); false on timeout. */
export const waitForExit = (pid: number, vm: VmRef, timeoutMs: number): Effect.Effect<boolean> =>
  pollUntil(
    Effect.sync(() => !isProcessAlive(pid) || !ownsVm(pid, vm)),
    {
      schedule: Schedule.spaced(Duration.millis(POLL_MS)),
      until: (gone) => gone,
      within: Duration.millis(timeoutMs),
      onTimeout: () => false
    }
  ).pipe(Effect.merge)

const signal = (pid: number, name: NodeJS.Signals) =>
  Effect.sync(() => {
    try {
      process.kill(pid, name)
    } catch {
      // already gone
    }
  })

/**
 * ACPI power button over QMP, up to graceMs for the guest to power off, then SIGTERM (QEMU exits
 * cleanly), then SIGKILL. Returns only once the process is gone; leaves no pidfile or sockets.
 */
export const stopQemu = (vm: VmRef, options: { readonly graceMs?: number } = {}): Effect.Effect<void, NotRunning> =>
  Effect.gen(function* () {
    const files = vmFiles(vm.dir)
    const state = yield* Effect.sync(() => readRunState(vm))
    if (!state.running || state.pid === undefined)
      return yield* new NotRunning({ message: `VM "${vm.name}" is not running`, subject: vm.name })
    const pid = state.pid
    const graceMs = options.graceMs ?? 10_000

    let gone = false
    if (graceMs > 0) {
      const asked = yield* qmpExecute(files.qmp, "system_powerdown", undefined, {
        subject: vm.name,
        connectTimeoutMs: 2_000,
        commandTimeoutMs: 2_000
      }).pipe(
        Effect.as(true),
        Effect.orElseSucceed(() => false)
      )
      if (asked) gone = yield* waitForExit(pid, vm, graceMs)
    }
    if (!gone) {
      yield* signal(pid, "SIGTERM")
      gone = yield* waitForExit(pid, vm, 5_000)
    }
    if (!gone) {
      yield* signal(pid, "SIGKILL")
      gone = yield* waitForExit(pid, vm, 10_000)
    }
    if (!gone)
      return yield* Effect.die(
        new Internal({ message: `QEMU (pid ${pid}) for VM "${vm.name}" survived SIGKILL`, subject: vm.name })
      )

    // QEMU removes these on a clean exit, not after SIGKILL, nor a pidfile someone overwrote.
    // Kept when a QEMU of this VM runs again meanwhile: they are its files then.
    if (!(yield* Effect.sync(() => readRunState(vm))).running)
      yield* removeStale([files.pidfile, files.qmp, files.vnc, files.migration])
  })
