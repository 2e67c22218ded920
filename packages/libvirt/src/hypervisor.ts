import { existsSync, readFileSync, statSync } from "node:fs"
import { open, readFile, stat, unlink } from "node:fs/promises"
import { randomBytes } from "node:crypto"
import { join } from "node:path"
import { Clock, Effect, Layer, Option, Redacted, Schedule } from "effect"
import {
  pollWithin,
  AlreadyRunning,
  CannotReach,
  checkHostAt,
  DataRoot,
  GuestSignals,
  Hypervisor,
  Internal,
  InvalidSpec,
  ControlRejected,
  ControlUnreachable,
  NotRunning,
  ProviderMissing,
  ProviderStartFailed,
  readSmallFileSync,
  ScreenshotFailed,
  ShareInvalid,
  writeFileAtomic,
  type Acceleration,
  type BootPlan,
  type RunState,
  type StartedVm,
  type VmDisk,
  type VmRef
} from "@stoat/core"
import {
  cacheDirsFromEnv,
  defaultTinyCacheDir,
  makeQemuHypervisor,
  probeKernel,
  parseSnapshotTable,
  pngSize,
  readConsoleFrom
} from "@stoat/qemu"
import { TINY_SSHD_MARKER, toDropbearKey, writeVmInitrd } from "@stoat/qemu/tiny"
import { domainName, domainXml, libvirtFiles } from "./domain-xml.js"
import { DEFAULT_URI, isNoDomain, virsh, type VirshUnavailable } from "./virsh.js"
import { decideAccel, learnAccel, probeDirIn, verdictsIn } from "./accel.js"
import { createTransientDomain, destroyDomain, monitor, uriOf } from "./domain.js"
import { checkpointDomain, resumeDomain } from "./checkpoint.js"

/** Written at each start into the VM folder: how to find the domain and its console's sshd line later (another process). */
interface BootRecord {
  readonly uri: string
  readonly domain: string
  readonly console_offset: number
  readonly sshd_marker?: string
  readonly accel: "kvm" | "tcg"
}

const SHUTDOWN_POLL_MS = 100
/** A state query is one round trip: a host that takes longer is taken for one that does not answer (status must stay cheap). */
const STATE_TIMEOUT_MS = 15_000
/** How long a VM started under KVM may keep a talking guest's console silent before it is taken for a KVM that cannot run it. */
const KVM_SILENCE_MS = 4_000
/** awaitSshd reads the console every poll (microseconds) but asks libvirt whether the VM still runs only every so many polls (a virsh call). */
const SSHD_POLL_MS = 10
const SSHD_STATE_EVERY = 100

/** Where the local system daemon keeps the pidfile of each running domain (world-readable; removed when it stops). */
const LOCAL_DOMAIN_RUN_DIR = "/run/libvirt/qemu"

/**
 * A domain's run state on the local system daemon from its pidfile, as the QEMU provider reads
 * its own: microseconds instead of a virsh call, which every status, listing and guest command
 * would otherwise pay. Running = the pid lives and runs QEMU for this domain (guards against
 * a reused pid or a pidfile left by a crashed daemon). Undefined when the daemon's folder cannot
 * be read here: then libvirt is asked.
 */
export const localRunState = (domain: string): RunState | undefined => {
  if (!existsSync(LOCAL_DOMAIN_RUN_DIR)) return undefined
  const pidfile = join(LOCAL_DOMAIN_RUN_DIR, `${domain}.pid`)
  let text: string
  try {
    text = readSmallFileSync(pidfile, 64)
  } catch (error) {
    return (error as { code?: string }).code === "ENOENT" ? { running: false } : undefined
  }
  const pid = Number.parseInt(text.trim(), 10)
  if (!Number.isInteger(pid) || pid <= 0) return { running: false }
  let argv: ReadonlyArray<string>
  try {
    argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")
  } catch {
    return { running: false }
  }
  const named = argv[argv.indexOf("-name") + 1] ?? ""
  if (!named.startsWith(`guest=${domain},`) && named !== `guest=${domain}`) return { running: false }
  try {
    return { running: true, pid, startedAt: statSync(pidfile).mtime.toISOString() }
  } catch {
    return { running: true, pid }
  }
}

const fileSize = (path: string) =>
  stat(path).then(
    (info) => info.size,
    () => 0
  )

/** qcow2 or raw, from the image header (QEMU refuses to guess raw for a writable disk). */
const diskFormatOf = async (path: string): Promise<"qcow2" | "raw"> => {
  const handle = await open(path, "r").catch(() => undefined)
  if (!handle) return path.endsWith(".qcow2") ? "qcow2" : "raw"
  try {
    const magic = Buffer.alloc(4)
    await handle.read(magic, 0, 4, 0)
    return magic.toString("latin1") === "QFI\xfb" ? "qcow2" : "raw"
  } finally {
    await handle.close()
  }
}

/** Checks before any libvirt call: boot files present, share tags usable as 9p mount tags, shared folders existing. */
const validatePlan = (plan: BootPlan): Effect.Effect<void, InvalidSpec | ShareInvalid> =>
  Effect.gen(function* () {
    const invalid = (message: string, subject = plan.vm.name) => new InvalidSpec({ message, subject })
    const tags = [
      "work",
      ...(plan.hostShare !== undefined ? ["host"] : []),
      ...(plan.extraShares ?? []).map((share) => share.tag)
    ]
    const duplicate = tags.find((tag, index) => tags.indexOf(tag) !== index)
    if (duplicate !== undefined) return yield* invalid(`share tag "${duplicate}" is used twice`, duplicate)
    const bad = tags.find((tag) => !/^[A-Za-z0-9._-]{1,31}$/.test(tag))
    if (bad !== undefined)
      return yield* invalid(`share tag "${bad}" must be 1-31 letters, digits, '.', '_' or '-'`, bad)
    for (const path of plan.kernel ? [plan.kernel.path, plan.kernel.initrd] : []) {
      if (
        !(yield* Effect.promise(() =>
          stat(path).then(
            () => true,
            () => false
          )
        ))
      ) {
        return yield* invalid(`boot file ${path} does not exist; rebuild the image`, path)
      }
    }
    const shares = [
      plan.workShare,
      ...(plan.hostShare !== undefined ? [plan.hostShare] : []),
      ...(plan.extraShares ?? []).map((share) => share.host)
    ]
    for (const path of shares) {
      const isDir = yield* Effect.promise(() =>
        stat(path).then(
          (info) => info.isDirectory(),
          () => false
        )
      )
      if (!isDir)
        return yield* new ShareInvalid({
          message: `share ${path} is not an existing directory; shares must be existing directories`,
          subject: path
        })
    }
  })

/**
 * Hosts whose state query failed to connect, and when. For a while after, a state query there
 * answers that failure at once; queries to one remote host go one at a time, so an `ls` over many
 * VMs on a host that is down waits for it once, not once per VM. Only failures are kept; a state
 * that was read is never reused.
 */
const unreachableHosts = new Map<string, { readonly error: CannotReach; readonly atMs: number }>()
const UNREACHABLE_KEPT_MS = 10_000
const stateQueriesTo = new Map<string, Effect.Semaphore>()
const oneAtATimeTo = (uri: string) => {
  let gate = stateQueriesTo.get(uri)
  if (gate === undefined) stateQueriesTo.set(uri, (gate = Effect.unsafeMakeSemaphore(1)))
  return gate.withPermits(1)
}

/** Whether the VM's domain runs: from the local daemon's pidfile where it can be read (no process spawned), else by asking libvirt. */
const isRunning = (vm: VmRef): Effect.Effect<boolean, VirshUnavailable> =>
  Effect.gen(function* () {
    const uri = uriOf(vm)
    const local = uri === DEFAULT_URI ? localRunState(domainName(vm)) : undefined
    if (local !== undefined) return local.running
    const result = yield* oneAtATimeTo(uri)(
      Effect.gen(function* () {
        const known = unreachableHosts.get(uri)
        if (known !== undefined && (yield* Clock.currentTimeMillis) - known.atMs < UNREACHABLE_KEPT_MS)
          return yield* known.error
        return yield* virsh(uri, ["domstate", domainName(vm)], { timeoutMs: STATE_TIMEOUT_MS }).pipe(
          Effect.tap(() => unreachableHosts.delete(uri)),
          Effect.tapErrorTag("CannotReach", (error) =>
            Effect.map(Clock.currentTimeMillis, (atMs) => unreachableHosts.set(uri, { error, atMs }))
          )
        )
      })
    )
    const state = result.code === 0 ? result.stdout.trim() : undefined
    return state !== undefined && state !== "shut off" && state !== "crashed"
  })

const readBootRecord = (vm: VmRef) =>
  Effect.promise(() =>
    readFile(libvirtFiles(vm.dir).boot, "utf8")
      .then((text) => JSON.parse(text) as Partial<BootRecord>)
      .catch(() => undefined)
  )

/** Looks at `check` every `everyMs` until `until` holds, for at most `withinMs`: the value that met it, or none. */
const lookUntil = <A, E, R>(
  check: Effect.Effect<A, E, R>,
  until: (value: A) => boolean,
  options: { readonly everyMs: number; readonly withinMs: number }
): Effect.Effect<Option.Option<A>, E, R> =>
  pollWithin(check, { schedule: Schedule.spaced(options.everyMs), until, within: options.withinMs })

/** Waits for this boot's sshd line on the domain's console, as the QEMU provider does on its own (see GuestSignals). */
const awaitSshd = (vm: VmRef, timeoutMs: number): Effect.Effect<boolean> =>
  Effect.gen(function* () {
    const record = yield* readBootRecord(vm)
    const marker = record?.sshd_marker
    if (typeof marker !== "string" || typeof record?.console_offset !== "number") return false
    const console = libvirtFiles(vm.dir).console
    let offset = record.console_offset
    let pending = ""
    let poll = 0
    const look = Effect.gen(function* () {
      poll++
      const chunk = yield* readConsoleFrom(console, offset)
      offset += chunk.length
      pending += chunk.toString("utf8")
      if (pending.includes(marker)) return "seen"
      pending = pending.slice(pending.lastIndexOf("\n") + 1)
      if (poll % SSHD_STATE_EVERY === 0 && !(yield* Effect.orElseSucceed(isRunning(vm), () => false))) return "gone"
      return "waiting"
    })
    const outcome = yield* lookUntil(look, (state) => state !== "waiting", {
      everyMs: SSHD_POLL_MS,
      withinMs: timeoutMs
    })
    return Option.getOrUndefined(outcome) === "seen"
  })

/** The libvirt provider's GuestSignals: the sshd line on a domain's console (the boot record says where this boot's output starts). */
export const LibvirtGuestSignalsLive = Layer.succeed(GuestSignals, GuestSignals.of({ awaitSshd }))

export interface LibvirtHypervisorOptions {
  /** Passed to the QEMU provider that handles disk files (qemu-img), as the QEMU provider's own option. */
  readonly tinyCacheDir?: string
}

/**
 * The libvirt implementation of the Hypervisor port. Domains are transient (`virsh create`, never
 * `define`): a domain exists only while its VM runs, so a failed start or a stop leaves nothing
 * defined on the host, and status is whether the domain exists and runs. Disk files (create,
 * resize, stopped snapshots, overlays) are qemu-img's, through the QEMU provider: the same files,
 * on the host that holds the VM folder.
 */
export const makeLibvirtHypervisor = (options: LibvirtHypervisorOptions = {}) =>
  Layer.effect(
    Hypervisor,
    Effect.gen(function* () {
      const root = yield* DataRoot
      const disks = yield* Effect.provide(Hypervisor, makeQemuHypervisor(options))
      const verdicts = verdictsIn(root.root)
      const tinyDir = options.tinyCacheDir ?? defaultTinyCacheDir(root.root)
      const accelFor = (uri: string, plan: BootPlan) =>
        learnAccel(verdicts, uri, { probeDir: probeDirIn(root.root), kernel: probeKernel(plan.kernel, tinyDir) })

      const startFailed = (vm: VmRef) => (message: string) => new ProviderStartFailed({ message, subject: vm.name })

      /** The per-VM initrd carrying a direct-boot guest's identity (keys, host key, name). */
      const writeIdentity = (plan: BootPlan): Effect.Effect<string | undefined, ProviderStartFailed> => {
        const identity = plan.guestIdentity
        if (plan.kernel === undefined || identity === undefined) return Effect.succeed(undefined)
        const out = libvirtFiles(plan.vm.dir).initrd
        const baseInitrd = plan.kernel.initrd
        return Effect.tryPromise({
          try: async () => {
            const hostKey = Redacted.value(identity.hostKey)
            await writeVmInitrd({
              baseInitrd,
              out,
              authorizedKeys: identity.authorizedKeys,
              hostKeyDropbear: await toDropbearKey(hostKey),
              hostKeyOpenssh: Buffer.from(hostKey),
              hostname: identity.hostname
            })
            return out
          },
          catch: (cause) =>
            startFailed(plan.vm)(
              `cannot prepare the guest's initrd: ${cause instanceof Error ? cause.message : String(cause)}`
            )
        })
      }

      /** Creates the transient domain; a failure leaves none behind. */
      const createDomain = (
        plan: BootPlan,
        uri: string,
        type: "kvm" | "qemu",
        extras: {
          readonly initrd?: string
          readonly disk?: { readonly path: string; readonly format: "qcow2" | "raw" }
        }
      ) =>
        createTransientDomain(
          uri,
          plan.vm,
          domainXml(plan, {
            name: domainName(plan.vm),
            type,
            uid: process.getuid?.() ?? 0,
            gid: process.getgid?.() ?? 0,
            ...(extras.initrd !== undefined ? { initrd: extras.initrd } : {}),
            ...(extras.disk !== undefined ? { disk: extras.disk } : {}),
            ...(plan.seedIso !== undefined ? { seedIso: join(plan.seedIso.vm.dir, plan.seedIso.file) } : {})
          })
        )

      /** Whether the console got output past `offset` within the budget while the domain ran. */
      const consoleSpoke = (vm: VmRef, offset: number) =>
        Effect.map(
          lookUntil(
            Effect.promise(() => fileSize(libvirtFiles(vm.dir).console)),
            (size) => size > offset,
            { everyMs: 100, withinMs: KVM_SILENCE_MS }
          ),
          Option.isSome
        )

      const start = (plan: BootPlan) =>
        Effect.gen(function* () {
          const vm = plan.vm
          const failed = startFailed(vm)
          yield* validatePlan(plan)
          const uri = uriOf(vm)
          if (yield* isRunning(vm))
            return yield* new AlreadyRunning({
              message: `VM "${vm.name}" is already running on ${uri}`,
              subject: vm.name
            })
          const probe = yield* accelFor(uri, plan).pipe(
            Effect.catchTag("InvalidSpec", (error) => Effect.fail(failed(error.message)))
          )
          const initrd = yield* writeIdentity(plan)
          const disk = plan.disk === undefined ? undefined : join(vm.dir, plan.disk)
          const extras = {
            ...(initrd !== undefined ? { initrd } : {}),
            ...(disk !== undefined
              ? { disk: { path: disk, format: yield* Effect.promise(() => diskFormatOf(disk)) } }
              : {})
          }
          const files = libvirtFiles(vm.dir)
          const consoleOffset = yield* Effect.promise(() => fileSize(files.console))
          const record = (accel: "kvm" | "tcg"): BootRecord => ({
            uri,
            domain: domainName(vm),
            console_offset: consoleOffset,
            ...(plan.kernel !== undefined ? { sshd_marker: TINY_SSHD_MARKER } : {}),
            accel
          })
          const started = (accel: "kvm" | "tcg", notice?: string): Effect.Effect<StartedVm> =>
            Effect.as(
              Effect.promise(() => writeFileAtomic(files.boot, JSON.stringify(record(accel))).catch(() => undefined)),
              {
                running: true,
                startedAt: new Date().toISOString(),
                accel,
                ...(notice !== undefined ? { notice } : {})
              }
            )
          if (probe.accel === "tcg") {
            yield* createDomain(plan, uri, "qemu", extras)
            return yield* started(
              "tcg",
              probe.fresh ? `${probe.detail}; later VMs there start under TCG directly` : undefined
            )
          }
          yield* createDomain(plan, uri, "kvm", extras)
          // A guest that talks on its console and stays silent under KVM is taken for a KVM that cannot run it (as the QEMU provider judges).
          const talks = plan.kernel !== undefined
          if (!talks || (yield* consoleSpoke(vm, consoleOffset)) || probe.setting === "kvm")
            return yield* started("kvm")
          yield* destroyDomain(uri, domainName(vm))
          const problem = `no console output in ${KVM_SILENCE_MS / 1000} s under KVM`
          yield* createDomain(plan, uri, "qemu", extras)
          yield* verdicts.write(uri, {
            accel: "tcg",
            detail: `libvirt host ${uri} lists KVM but a guest did not run under it (${problem}, VM "${vm.name}"); domains are type qemu (TCG)`
          })
          return yield* started(
            "tcg",
            `VM "${vm.name}" did not run under KVM on ${uri} (${problem}); restarted it under TCG, and later VMs there start under TCG directly`
          )
        })

      const stop = (
        vm: VmRef,
        stopOptions?: { readonly graceMs?: number }
      ): Effect.Effect<void, NotRunning | CannotReach> =>
        Effect.gen(function* () {
          const uri = uriOf(vm)
          const name = domainName(vm)
          if (!(yield* isRunning(vm)))
            return yield* new NotRunning({ message: `VM "${vm.name}" is not running`, subject: vm.name })
          const graceMs = stopOptions?.graceMs ?? 10_000
          const gone = (withinMs: number) =>
            Effect.map(
              lookUntil(isRunning(vm), (running) => !running, { everyMs: SHUTDOWN_POLL_MS, withinMs }),
              Option.isSome
            )
          let stopped = false
          if (graceMs > 0) {
            const asked = yield* virsh(uri, ["shutdown", name])
            stopped = asked.code === 0 && (yield* gone(graceMs))
          }
          if (!stopped) {
            yield* virsh(uri, ["destroy", name])
            if (!(yield* gone(30_000)))
              return yield* Effect.die(
                new Internal({
                  message: `libvirt domain ${name} of VM "${vm.name}" survived virsh destroy`,
                  subject: vm.name
                })
              )
          }
          // QEMU has exited, but libvirt removes the transient domain a moment later; a start
          // before then would find the name taken. Returns once libvirt no longer knows it.
          const released = yield* lookUntil(virsh(uri, ["domstate", name]), isNoDomain, {
            everyMs: SHUTDOWN_POLL_MS / 2,
            withinMs: 30_000
          })
          if (Option.isNone(released))
            return yield* Effect.die(
              new Internal({
                message: `libvirt still holds domain ${name} of VM "${vm.name}" 30 s after it stopped`,
                subject: vm.name
              })
            )
        }).pipe(Effect.catchTag("ProviderMissing", (error) => Effect.die(error)))

      /** The block node of the running VM's disk: libvirt names nodes itself (libvirt-1-format), so it is found by file. */
      const diskNode = (disk: VmDisk) =>
        Effect.flatMap(
          monitor<
            ReadonlyArray<{
              readonly inserted?: {
                readonly "node-name"?: string
                readonly file?: string
                readonly image?: { readonly filename?: string }
              }
            }>
          >(disk.vm, "query-block"),
          (blocks) => {
            const path = join(disk.vm.dir, disk.file)
            const node = blocks.find(
              (block) => block.inserted?.file === path || block.inserted?.image?.filename === path
            )?.inserted?.["node-name"]
            return node !== undefined
              ? Effect.succeed(node)
              : Effect.fail(
                  new Internal({
                    message: `VM "${disk.vm.name}" is running without ${path} attached`,
                    subject: disk.vm.name
                  })
                )
          }
        )

      const runningForSnapshot = (vm: VmRef) =>
        isRunning(vm).pipe(
          Effect.mapError((error) => new ControlUnreachable({ message: error.message, subject: vm.name }))
        )

      const screenshot = (vm: VmRef) =>
        Effect.gen(function* () {
          if (!(yield* Effect.orElseSucceed(isRunning(vm), () => false)))
            return yield* new NotRunning({ message: `VM "${vm.name}" is not running`, subject: vm.name })
          // QEMU writes the PNG itself (screendump format png): it runs on the host that holds the VM folder.
          const path = join(vm.dir, `.screendump-${randomBytes(4).toString("hex")}.png`)
          const failed = (message: string) => new ScreenshotFailed({ message, subject: vm.name })
          yield* monitor(vm, "screendump", { filename: path, format: "png" }).pipe(
            Effect.mapError((error) => failed(error.message))
          )
          const png = yield* Effect.tryPromise({
            try: () => readFile(path),
            catch: () => failed("QEMU's screendump left no file")
          }).pipe(Effect.ensuring(Effect.promise(() => unlink(path).catch(() => undefined))))
          const size = pngSize(png)
          if (!size) return yield* failed("QEMU's screendump is not a PNG image")
          return { png: new Uint8Array(png), ...size }
        })

      return Hypervisor.of({
        // A host (or virsh) that does not answer leaves the state unknown: said so, never "stopped".
        status: (vm): Effect.Effect<RunState> => {
          const uri = uriOf(vm)
          const local = uri === DEFAULT_URI ? localRunState(domainName(vm)) : undefined
          return local !== undefined
            ? Effect.succeed(local)
            : isRunning(vm).pipe(
                Effect.map((running): RunState => ({ running })),
                Effect.catchAll((error) =>
                  Effect.succeed({
                    running: false,
                    unreachable:
                      error._tag === "CannotReach"
                        ? error
                        : new CannotReach({ message: error.message, subject: uri, hint: checkHostAt(uri) })
                  })
                )
              )
        },
        // The port's probe knows no unreachable host or missing KVM: both are reported as what to fix (invalid_spec, with the reason).
        acceleration: decideAccel(verdicts, DEFAULT_URI).pipe(
          Effect.map(({ accel, detail }): Acceleration => ({ accel, detail })),
          Effect.catchTags({
            CannotReach: (error) => Effect.fail(new InvalidSpec({ message: error.message, subject: DEFAULT_URI })),
            AcceleratorUnusable: (error) =>
              Effect.fail(new InvalidSpec({ message: error.message, subject: "STOAT_ACCEL" }))
          })
        ),
        start,
        stop,
        createDisk: disks.createDisk,
        resizeDisk: disks.resizeDisk,
        diskInfo: disks.diskInfo,
        listSnapshots: (disk) =>
          Effect.flatMap(runningForSnapshot(disk.vm), (running) =>
            running
              ? Effect.map(
                  monitor<string>(disk.vm, "human-monitor-command", { "command-line": "info snapshots" }).pipe(
                    Effect.catchTag("ControlRejected", (error) =>
                      Effect.fail(new Internal({ message: error.message, subject: disk.vm.name }))
                    )
                  ),
                  parseSnapshotTable
                )
              : disks.listSnapshots(disk)
          ),
        saveSnapshot: (disk, tag) =>
          Effect.flatMap(runningForSnapshot(disk.vm), (running) =>
            running
              ? Effect.flatMap(diskNode(disk), (device) =>
                  Effect.asVoid(monitor(disk.vm, "blockdev-snapshot-internal-sync", { device, name: tag }))
                )
              : disks.saveSnapshot(disk, tag)
          ),
        restoreSnapshot: disks.restoreSnapshot,
        deleteSnapshot: (disk, tag) =>
          Effect.flatMap(runningForSnapshot(disk.vm), (running) =>
            running
              ? Effect.flatMap(diskNode(disk), (device) =>
                  monitor(disk.vm, "blockdev-snapshot-delete-internal-sync", { device, name: tag }).pipe(
                    Effect.asVoid,
                    // Deleting a tag the disk lacks is nothing to do, as the port says.
                    Effect.catchIf(
                      (error) => error._tag === "ControlRejected" && /not found|can't find/i.test(error.message),
                      () => Effect.void
                    )
                  )
                )
              : disks.deleteSnapshot(disk, tag)
          ),
        snapshotOverlay: disks.snapshotOverlay,
        screenshot,
        checkpoint: checkpointDomain,
        resume: (checkpoint, plan) =>
          Effect.gen(function* () {
            if (yield* Effect.orElseSucceed(isRunning(plan.vm), () => false))
              return yield* new AlreadyRunning({
                message: `VM "${plan.vm.name}" is already running on ${uriOf(plan.vm)}`,
                subject: plan.vm.name
              })
            const files = libvirtFiles(plan.vm.dir)
            const consoleOffset = yield* Effect.promise(() => fileSize(files.console))
            const { accel } = yield* resumeDomain(checkpoint, plan)
            // No sshd line will come: the guest was up when it was saved (readiness probes ssh itself).
            const record: BootRecord = {
              uri: uriOf(plan.vm),
              domain: domainName(plan.vm),
              console_offset: consoleOffset,
              accel
            }
            yield* Effect.promise(() => writeFileAtomic(files.boot, JSON.stringify(record)).catch(() => undefined))
            return { running: true, startedAt: new Date().toISOString(), accel }
          }),
        rebaseDisk: disks.rebaseDisk
      })
    })
  )

/** The live layer, over the data root; STOAT_TINY_CACHE as for the QEMU provider. */
export const LibvirtHypervisorLive = Layer.unwrapEffect(
  Effect.sync(() => {
    const { tinyCacheDir } = cacheDirsFromEnv()
    return makeLibvirtHypervisor(tinyCacheDir !== undefined ? { tinyCacheDir } : {})
  })
)
