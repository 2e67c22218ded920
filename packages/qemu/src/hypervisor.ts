import { join } from "node:path"
import { Effect, Layer } from "effect"
import { DataRoot, findOnPath, Hypervisor, Internal, InvalidSpec, QemuMissing, type BootPlan } from "@stoat/core"
import { access } from "node:fs/promises"
import { vmFiles } from "./argv.js"
import { startVm, stopVm } from "./lifecycle.js"
import { cachedProbe, probeAccelerator } from "./probe.js"
import { readRunState } from "./process.js"
import * as img from "./qemu-img.js"
import { screenshot } from "./screenshot.js"
import * as snapshots from "./snapshots.js"
import { buildTinyGuest } from "./tiny/build.js"

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
}

/** The QEMU implementation of the Hypervisor port. */
export const makeQemuHypervisor = (options: QemuHypervisorOptions = {}) =>
  Layer.effect(
    Hypervisor,
    Effect.map(DataRoot, (root) => {
      const accelCache = join(root.root, ".accel-probe.json")
      const tinyDir = options.tinyCacheDir ?? join(root.root, ".cache", "tiny")
      const accel = (qemu: string) => Effect.promise(() => cachedProbe(qemu, accelCache))
      return Hypervisor.of({
        status: (vm) => Effect.promise(() => readRunState(vm)),
        probeAccelerator: Effect.flatMap(qemuPath, (qemu) => Effect.promise(() => probeAccelerator(qemu))),
        start: (plan) =>
          Effect.gen(function* () {
            const qemu = yield* qemuPath
            const probe = yield* accel(qemu)
            return yield* startVm(plan, { qemu, accel: probe.accel })
          }),
        stop: (vm, stopOptions) => stopVm(vm, stopOptions),
        createDisk: img.createDisk,
        resizeDisk: img.resizeDisk,
        diskInfo: img.diskInfo,
        listSnapshots: snapshots.listSnapshots,
        saveSnapshot: snapshots.saveSnapshot,
        restoreSnapshot: snapshots.restoreSnapshot,
        deleteSnapshot: snapshots.deleteSnapshot,
        screenshot,
        validate: validatePlan,
        localImage: (id, onStage) =>
          id === "tiny"
            ? Effect.map(
                Effect.tryPromise({
                  try: () =>
                    buildTinyGuest({ cacheDir: join(tinyDir, "debs"), outDir: join(tinyDir, "image"), ...(onStage ? { onStage } : {}) }),
                  catch: (cause) => new Internal({ message: `cannot build the tiny guest: ${cause instanceof Error ? cause.message : String(cause)}`, subject: id })
                }),
                (image) => ({ kernel: image.kernel, initrd: image.initrd, append: image.kernelArgs })
              )
            : Effect.fail(new Internal({ message: `no locally built image "${id}" (only "tiny")`, subject: id }))
      })
    })
  )

/** The live layer. STOAT_TINY_CACHE, when set, points the tiny-guest build cache elsewhere (so test runs share one). */
export const QemuHypervisorLive = Layer.unwrapEffect(
  Effect.sync(() => {
    const tinyCacheDir = process.env["STOAT_TINY_CACHE"]
    return makeQemuHypervisor(tinyCacheDir ? { tinyCacheDir } : {})
  })
)
