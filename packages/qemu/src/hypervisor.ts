import { join } from "node:path"
import { Config, Effect, Either, Layer } from "effect"
import {
  checkTheHost,
  DataRoot,
  findOnPath,
  GuestSignals,
  Hypervisor,
  InvalidSpec,
  ProviderMissing,
  ProviderStartFailed,
  type AlreadyRunning,
  type BootPlan,
  type LimitReached,
  type ShareInvalid,
  type StartedVm
} from "@stoat/core"
import { access, constants } from "node:fs/promises"
import { AccelCache, accelSetting, probeKernel, type AccelSetting, type AccelVerdict } from "./accel.js"
import { vmFiles } from "./argv.js"
import { checkpointVm, rebaseDisk, resumeVm } from "./checkpoint.js"
import { awaitSshd, consoleSize, launchQemu, stopQemu, watchKvmStart } from "./lifecycle.js"
import { readRunState } from "./process.js"
import * as img from "./qemu-img.js"
import { screenshot } from "./screenshot.js"
import * as snapshots from "./snapshots.js"
import { diskInfoOf, hostPathOf } from "./disks.js"
import { cacheDirsFromEnv, defaultTinyCacheDir } from "./image-builder.js"

export const QEMU_BINARY = "qemu-system-x86_64"

/** The QEMU program: a path, or a name looked up on PATH at each use (it may be installed meanwhile). */
const findQemu = (program: string) =>
  Effect.flatMap(
    Effect.promise(() =>
      program.includes("/")
        ? access(program, constants.X_OK).then(
            () => program,
            () => undefined
          )
        : findOnPath(program)
    ),
    (path) =>
      path
        ? Effect.succeed(path)
        : Effect.fail(
            new ProviderMissing({
              message: `${program} not found${program.includes("/") ? "" : " on PATH"}; install QEMU`,
              hint: checkTheHost
            })
          )
  )

/** Longest path a unix socket address can hold (sun_path is 108 bytes with its NUL). */
const MAX_SOCKET_PATH = 107

/** Checks, before every start, that need no QEMU: paths QEMU could not use and files the plan names but lacks. */
const validatePlan = (plan: BootPlan): Effect.Effect<void, InvalidSpec> =>
  Effect.gen(function* () {
    const invalid = (message: string, subject = plan.vm.name) => new InvalidSpec({ message, subject })
    const socket = vmFiles(plan.vm.dir).qmp
    if (Buffer.byteLength(socket) > MAX_SOCKET_PATH) {
      return yield* invalid(
        `the VM folder ${plan.vm.dir} is too deep for QEMU's unix sockets (${Buffer.byteLength(socket)} > ${MAX_SOCKET_PATH} bytes); use a shorter STOAT_HOME`
      )
    }
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
      const readable = yield* Effect.promise(() =>
        access(path).then(
          () => true,
          () => false
        )
      )
      if (!readable) return yield* invalid(`boot file ${path} does not exist; rebuild the image`, path)
    }
  })

export interface QemuHypervisorOptions {
  /** The QEMU program, a path or a name looked up on PATH (default qemu-system-x86_64). */
  readonly qemu?: string
  /** Where the tiny guest is cached (see QemuImageBuilderOptions); the accelerator probe boots its kernel. */
  readonly tinyCacheDir?: string
}

/** The QEMU implementation of the Hypervisor port. */
export const makeQemuHypervisor = (options: QemuHypervisorOptions = {}) =>
  Layer.effect(
    Hypervisor,
    Effect.map(DataRoot, (root) => {
      const accelCache = new AccelCache(join(root.root, ".accel-probe.json"))
      const tinyDir = options.tinyCacheDir ?? defaultTinyCacheDir(root.root)
      const qemuPath = findQemu(options.qemu ?? QEMU_BINARY)
      const decide = (
        qemu: string,
        plan?: BootPlan
      ): Effect.Effect<{ readonly setting: AccelSetting; readonly verdict: AccelVerdict }, InvalidSpec> =>
        Effect.gen(function* () {
          const setting = yield* accelSettingConfig
          if (setting === "tcg")
            return {
              setting,
              verdict: {
                accel: "tcg",
                source: "setting",
                detail: "STOAT_ACCEL=tcg: VMs run under TCG; KVM is not tried"
              }
            }
          if (setting === "kvm") {
            return {
              setting,
              verdict: {
                accel: "kvm",
                source: "setting",
                detail: "STOAT_ACCEL=kvm: VMs run under KVM without a probe; a VM KVM cannot run fails to start"
              }
            }
          }
          const kernel = yield* probeKernel(plan?.kernel, tinyDir)
          return { setting, verdict: yield* Effect.promise(() => accelCache.verdict(qemu, kernel)) }
        })

      /**
       * Under KVM, the first seconds are watched: a VM whose QEMU fails, whose console stays
       * silent, or whose run state turns internal-error or guest-panicked is stopped and started
       * once more under TCG, and the verdict is cached so later starts go to TCG directly.
       */
      const start = (
        plan: BootPlan
      ): Effect.Effect<
        StartedVm,
        ProviderMissing | ProviderStartFailed | AlreadyRunning | ShareInvalid | InvalidSpec | LimitReached
      > =>
        Effect.gen(function* () {
          yield* validatePlan(plan)
          const qemu = yield* qemuPath
          const { setting, verdict } = yield* decide(qemu, plan).pipe(
            Effect.mapError((error) => new ProviderStartFailed({ message: error.message, subject: plan.vm.name }))
          )
          if (verdict.accel === "tcg")
            return { ...(yield* launchQemu(plan, { qemu, accel: "tcg" })), accel: "tcg" as const }
          const consoleOffset = yield* consoleSize(plan.vm)
          const underKvm = yield* Effect.either(launchQemu(plan, { qemu, accel: "kvm" }))
          if (Either.isLeft(underKvm) && underKvm.left._tag !== "ProviderStartFailed") return yield* underKvm.left
          const problem = Either.isLeft(underKvm)
            ? `QEMU failed under KVM: ${underKvm.left.message}`
            : yield* watchKvmStart(plan, consoleOffset)
          if (problem === undefined && Either.isRight(underKvm)) return { ...underKvm.right, accel: "kvm" as const }
          if (Either.isRight(underKvm)) yield* stopQemu(plan.vm, { graceMs: 0 }).pipe(Effect.ignore)
          if (setting === "kvm") {
            if (Either.isLeft(underKvm)) return yield* underKvm.left
            return yield* new ProviderStartFailed({
              message: `VM "${plan.vm.name}" did not run under KVM (${problem}); STOAT_ACCEL=kvm forbids falling back to TCG`,
              subject: plan.vm.name
            })
          }
          // A start that fails under TCG too was not KVM's fault (a busy port, a bad disk): report
          // that failure and leave the verdict alone.
          const state = yield* launchQemu(plan, { qemu, accel: "tcg" })
          yield* Effect.promise(() =>
            accelCache.write(qemu, {
              accel: "tcg",
              source: "start",
              detail: `KVM present but a 64-bit guest does not run: ${problem} (seen when starting VM "${plan.vm.name}"); VMs run under TCG, which is slower`
            })
          )
          return {
            ...state,
            accel: "tcg" as const,
            notice: `VM "${plan.vm.name}" did not run under KVM (${problem}); restarted it under TCG, and later VMs start under TCG directly`
          }
        })

      return Hypervisor.of({
        status: (vm) => Effect.sync(() => readRunState(vm)),
        acceleration: Effect.flatMap(qemuPath, (qemu) =>
          Effect.map(decide(qemu), ({ setting, verdict }) => ({
            accel: verdict.accel,
            detail: setting === "auto" ? `${verdict.detail} (STOAT_ACCEL=auto)` : verdict.detail
          }))
        ),
        start,
        stop: (vm, stopOptions) => stopQemu(vm, stopOptions),
        // Suspended: a name outside the VM folder is a defect of the call, not a throw at it.
        createDisk: (disk, size, backing) =>
          Effect.suspend(() =>
            img.createDisk(hostPathOf(disk), size, backing === undefined ? undefined : hostPathOf(backing))
          ),
        resizeDisk: (disk, size) => Effect.suspend(() => img.resizeDisk(hostPathOf(disk), size)),
        diskInfo: (disk) =>
          Effect.suspend(() => Effect.map(img.diskInfo(hostPathOf(disk)), (info) => diskInfoOf(root.root, info))),
        listSnapshots: snapshots.listSnapshots,
        saveSnapshot: snapshots.saveSnapshot,
        restoreSnapshot: snapshots.restoreSnapshot,
        deleteSnapshot: snapshots.deleteSnapshot,
        snapshotOverlay: snapshots.snapshotOverlay,
        screenshot,
        checkpoint: checkpointVm,
        resume: (checkpoint, plan) => Effect.flatMap(qemuPath, (qemu) => resumeVm(qemu, checkpoint, plan)),
        rebaseDisk
      })
    })
  )

/** STOAT_ACCEL: auto (default: probe, and fall back at start), kvm or tcg; the libvirt provider reads it too. */
export const accelSettingConfig: Effect.Effect<AccelSetting, InvalidSpec> = Effect.flatMap(
  Effect.orElseSucceed(Config.string("STOAT_ACCEL").pipe(Config.withDefault("auto")), () => "auto"),
  (raw) => {
    const setting = accelSetting(raw)
    return setting !== undefined
      ? Effect.succeed(setting)
      : Effect.fail(
          new InvalidSpec({
            message: `STOAT_ACCEL must be auto, kvm or tcg (got ${JSON.stringify(raw.slice(0, 40))})`,
            subject: "STOAT_ACCEL"
          })
        )
  }
)

/** Guests Stoat assembles print a line on the serial console once sshd listens (see lifecycle.ts's boot record). */
export const QemuGuestSignalsLive = Layer.succeed(GuestSignals, GuestSignals.of({ awaitSshd }))

/** The live layer; STOAT_TINY_CACHE, when set, names the tiny guest's cache (see QemuImageBuilderLive). */
export const QemuHypervisorLive = Layer.unwrapEffect(
  Effect.sync(() => {
    const { tinyCacheDir } = cacheDirsFromEnv()
    return makeQemuHypervisor(tinyCacheDir !== undefined ? { tinyCacheDir } : {})
  })
)
