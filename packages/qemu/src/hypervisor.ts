import { join } from "node:path"
import { Config, Effect, Either, Layer } from "effect"
import {
  AlreadyRunning,
  CannotReach,
  CapabilityUnavailable,
  DataRoot,
  findOnPath,
  Hypervisor,
  Internal,
  InvalidSpec,
  NotFound,
  QemuMissing,
  QemuStartFailed,
  ShareInvalid,
  type BootPlan,
  type LocalImage,
  type StartedVm
} from "@stoat/core"
import { access } from "node:fs/promises"
import { AccelCache, accelSetting, type AccelSetting, type AccelVerdict } from "./accel.js"
import { vmFiles } from "./argv.js"
import { checkpointVm, rebaseDisk, resumeVm } from "./checkpoint.js"
import { awaitSshd, consoleSize, startVm, stopVm, watchKvmStart } from "./lifecycle.js"
import { readRunState } from "./process.js"
import * as img from "./qemu-img.js"
import { screenshot } from "./screenshot.js"
import * as snapshots from "./snapshots.js"
import { buildTinyGuest, readTinyGuest } from "./tiny/build.js"
import { buildDebianMini, DEBIAN_MINI_ID, DebianMiniBuildError, readDebianMini } from "./debian-mini/build.js"

export const QEMU_BINARY = "qemu-system-x86_64"

const qemuPath = Effect.flatMap(
  Effect.promise(() => findOnPath(QEMU_BINARY)),
  (path) => (path ? Effect.succeed(path) : Effect.fail(new QemuMissing({ message: `${QEMU_BINARY} not found on PATH; run stoat doctor` })))
)

/** Longest path a unix socket address can hold (sun_path is 108 bytes with its NUL). */
const MAX_SOCKET_PATH = 107

/** Checks that need no QEMU: paths QEMU could not use and files the plan names but lacks. */
const validatePlan = (plan: BootPlan): Effect.Effect<void, InvalidSpec> =>
  Effect.gen(function* () {
    const invalid = (message: string, subject = plan.vm.name) => new InvalidSpec({ message, subject })
    const socket = vmFiles(plan.vm.dir).qmp
    if (Buffer.byteLength(socket) > MAX_SOCKET_PATH) {
      return yield* invalid(`the VM folder ${plan.vm.dir} is too deep for QEMU's unix sockets (${Buffer.byteLength(socket)} > ${MAX_SOCKET_PATH} bytes); use a shorter STOAT_HOME`)
    }
    const tags = ["work", ...(plan.hostShare !== undefined ? ["host"] : []), ...(plan.extraShares ?? []).map((share) => share.tag)]
    const duplicate = tags.find((tag, index) => tags.indexOf(tag) !== index)
    if (duplicate !== undefined) return yield* invalid(`share tag "${duplicate}" is used twice`, duplicate)
    const bad = tags.find((tag) => !/^[A-Za-z0-9._-]{1,31}$/.test(tag))
    if (bad !== undefined) return yield* invalid(`share tag "${bad}" must be 1-31 letters, digits, '.', '_' or '-'`, bad)
    for (const path of plan.kernel ? [plan.kernel.path, plan.kernel.initrd] : []) {
      const readable = yield* Effect.promise(() => access(path).then(() => true, () => false))
      if (!readable) return yield* invalid(`boot file ${path} does not exist; rebuild the image`, path)
    }
  })

export interface QemuHypervisorOptions {
  /**
   * Where the tiny guest is built and cached: `<dir>/debs` (downloaded packages) and `<dir>/image`.
   * Default `<data root>/.cache/tiny`.
   */
  readonly tinyCacheDir?: string
  /**
   * Where debian-12-mini is built and cached: `<dir>/debs` (mmdebstrap's packages) and `<dir>/image`
   * (one folder per build). Default `<data root>/.cache/debian-12-mini`.
   */
  readonly debianMiniCacheDir?: string
}

/** A failed debian-12-mini build as the typed error its cause calls for. */
const debianMiniError = (cause: unknown) => {
  const message = cause instanceof Error ? cause.message : String(cause)
  if (!(cause instanceof DebianMiniBuildError)) return new Internal({ message: `cannot build ${DEBIAN_MINI_ID}: ${message}`, subject: DEBIAN_MINI_ID })
  switch (cause.kind) {
    case "missing_tool":
    case "needs_root":
      return new CapabilityUnavailable({ message, subject: DEBIAN_MINI_ID, reason: cause.kind })
    case "mirror_unreachable":
      return new CannotReach({ message, subject: DEBIAN_MINI_ID })
    case "gone":
      return new NotFound({ message, subject: DEBIAN_MINI_ID })
    case "invalid_path":
      return new InvalidSpec({ message, subject: "STOAT_DEBIAN_MINI_CACHE" })
    case "failed":
      return new Internal({ message, subject: DEBIAN_MINI_ID })
  }
}

/** The QEMU implementation of the Hypervisor port. */
export const makeQemuHypervisor = (options: QemuHypervisorOptions = {}) =>
  Layer.effect(
    Hypervisor,
    Effect.map(DataRoot, (root) => {
      const accelCache = new AccelCache(join(root.root, ".accel-probe.json"))
      const tinyDir = options.tinyCacheDir ?? join(root.root, ".cache", "tiny")
      const debianMiniDir = options.debianMiniCacheDir ?? join(root.root, ".cache", DEBIAN_MINI_ID)
      /** The current debian-12-mini build (made first if needed), or the one a VM's root disk came from. */
      const debianMini = (onStage?: (line: string) => void, rootDisk?: string): Effect.Effect<LocalImage, Internal | NotFound | CapabilityUnavailable | CannotReach | InvalidSpec> =>
        Effect.map(
          Effect.tryPromise({
            try: async () => {
              if (rootDisk === undefined) return buildDebianMini({ cacheDir: debianMiniDir, outDir: join(debianMiniDir, "image"), ...(onStage ? { onStage } : {}) })
              const pinned = await readDebianMini(join(debianMiniDir, "image"), rootDisk)
              if (pinned) return pinned
              throw new DebianMiniBuildError("gone", `the ${DEBIAN_MINI_ID} build that ${rootDisk} belongs to is incomplete or was removed; delete the VM and create it again`)
            },
            catch: debianMiniError
          }),
          (image) => ({ kernel: image.kernel, initrd: image.initrd, append: image.kernelArgs, rootDisk: image.rootDisk })
        )
      /** The kernel the probe boots: the VM's own when it boots one directly, else the tiny guest's when built. */
      const probeKernel = (plan?: BootPlan) =>
        plan?.kernel !== undefined ? Effect.succeed(plan.kernel.path) : Effect.promise(() => readTinyGuest(join(tinyDir, "image")).then((image) => image?.kernel))
      const decide = (qemu: string, plan?: BootPlan): Effect.Effect<{ readonly setting: AccelSetting; readonly verdict: AccelVerdict }, InvalidSpec> =>
        Effect.gen(function* () {
          const setting = yield* accelSettingConfig
          if (setting === "tcg") return { setting, verdict: { accel: "tcg", source: "setting", detail: "STOAT_ACCEL=tcg: VMs run under TCG; KVM is not tried" } }
          if (setting === "kvm") {
            return { setting, verdict: { accel: "kvm", source: "setting", detail: "STOAT_ACCEL=kvm: VMs run under KVM without a probe; a VM KVM cannot run fails to start" } }
          }
          const kernel = yield* probeKernel(plan)
          return { setting, verdict: yield* Effect.promise(() => accelCache.verdict(qemu, kernel)) }
        })

      /**
       * Under KVM, the first seconds are watched: a VM whose QEMU fails, whose console stays
       * silent, or whose run state turns internal-error or guest-panicked is stopped and started
       * once more under TCG, and the verdict is cached so later starts go to TCG directly.
       */
      const start = (plan: BootPlan): Effect.Effect<StartedVm, QemuMissing | QemuStartFailed | AlreadyRunning | ShareInvalid> =>
        Effect.gen(function* () {
          const qemu = yield* qemuPath
          const { setting, verdict } = yield* decide(qemu, plan).pipe(Effect.mapError((error) => new QemuStartFailed({ message: error.message, subject: plan.vm.name })))
          if (verdict.accel === "tcg") return { ...(yield* startVm(plan, { qemu, accel: "tcg" })), accel: "tcg" as const }
          const consoleOffset = yield* consoleSize(plan.vm)
          const underKvm = yield* Effect.either(startVm(plan, { qemu, accel: "kvm" }))
          if (Either.isLeft(underKvm) && underKvm.left._tag !== "QemuStartFailed") return yield* underKvm.left
          const problem = Either.isLeft(underKvm) ? `QEMU failed under KVM: ${underKvm.left.message}` : yield* watchKvmStart(plan, consoleOffset)
          if (problem === undefined && Either.isRight(underKvm)) return { ...underKvm.right, accel: "kvm" as const }
          if (Either.isRight(underKvm)) yield* stopVm(plan.vm, { graceMs: 0 }).pipe(Effect.ignore)
          if (setting === "kvm") {
            if (Either.isLeft(underKvm)) return yield* underKvm.left
            return yield* new QemuStartFailed({ message: `VM "${plan.vm.name}" did not run under KVM (${problem}); STOAT_ACCEL=kvm forbids falling back to TCG`, subject: plan.vm.name })
          }
          // A start that fails under TCG too was not KVM's fault (a busy port, a bad disk): report
          // that failure and leave the verdict alone.
          const state = yield* startVm(plan, { qemu, accel: "tcg" })
          yield* Effect.promise(() =>
            accelCache.write(qemu, { accel: "tcg", source: "start", detail: `KVM present but a 64-bit guest does not run: ${problem} (seen when starting VM "${plan.vm.name}"); VMs run under TCG, which is slower` })
          )
          return { ...state, accel: "tcg" as const, notice: `VM "${plan.vm.name}" did not run under KVM (${problem}); restarted it under TCG, and later VMs start under TCG directly` }
        })

      return Hypervisor.of({
        status: (vm) => Effect.promise(() => readRunState(vm)),
        probeAccelerator: Effect.flatMap(qemuPath, (qemu) =>
          Effect.map(decide(qemu), ({ setting, verdict }) => ({ accel: verdict.accel, detail: setting === "auto" ? `${verdict.detail} (STOAT_ACCEL=auto)` : verdict.detail }))
        ),
        start,
        awaitSshd,
        stop: (vm, stopOptions) => stopVm(vm, stopOptions),
        createDisk: img.createDisk,
        resizeDisk: img.resizeDisk,
        diskInfo: img.diskInfo,
        listSnapshots: snapshots.listSnapshots,
        saveSnapshot: snapshots.saveSnapshot,
        restoreSnapshot: snapshots.restoreSnapshot,
        deleteSnapshot: snapshots.deleteSnapshot,
        screenshot,
        checkpoint: checkpointVm,
        resume: (folder, plan) => Effect.flatMap(qemuPath, (qemu) => resumeVm(qemu, folder, plan)),
        rebaseDisk,
        validate: validatePlan,
        localImage: (id, onStage, localOptions) =>
          id === DEBIAN_MINI_ID
            ? debianMini(onStage, localOptions?.rootDisk)
            : id === "tiny"
            ? Effect.map(
                Effect.tryPromise({
                  try: () =>
                    buildTinyGuest({ cacheDir: join(tinyDir, "debs"), outDir: join(tinyDir, "image"), ...(onStage ? { onStage } : {}) }),
                  catch: (cause) => new Internal({ message: `cannot build the tiny guest: ${cause instanceof Error ? cause.message : String(cause)}`, subject: id })
                }),
                (image) => ({ kernel: image.kernel, initrd: image.initrd, append: image.kernelArgs })
              )
            : Effect.fail(new NotFound({ message: `no locally built image "${id}" (only "tiny" and "${DEBIAN_MINI_ID}")`, subject: id }))
      })
    })
  )

/** STOAT_ACCEL: auto (default: probe, and fall back at start), kvm or tcg. */
const accelSettingConfig: Effect.Effect<AccelSetting, InvalidSpec> = Effect.flatMap(
  Effect.orElseSucceed(Config.string("STOAT_ACCEL").pipe(Config.withDefault("auto")), () => "auto"),
  (raw) => {
    const setting = accelSetting(raw)
    return setting !== undefined
      ? Effect.succeed(setting)
      : Effect.fail(new InvalidSpec({ message: `STOAT_ACCEL must be auto, kvm or tcg (got ${JSON.stringify(raw.slice(0, 40))})`, subject: "STOAT_ACCEL" }))
  }
)

/**
 * The live layer. STOAT_TINY_CACHE and STOAT_DEBIAN_MINI_CACHE, when set, point the local image
 * build caches elsewhere (so test runs share one).
 */
export const QemuHypervisorLive = Layer.unwrapEffect(
  Effect.sync(() => {
    const tinyCacheDir = process.env["STOAT_TINY_CACHE"]
    const debianMiniCacheDir = process.env["STOAT_DEBIAN_MINI_CACHE"]
    return makeQemuHypervisor({ ...(tinyCacheDir ? { tinyCacheDir } : {}), ...(debianMiniCacheDir ? { debianMiniCacheDir } : {}) })
  })
)
