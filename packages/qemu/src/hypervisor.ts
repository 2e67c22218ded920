import { Effect, Layer } from "effect"
import { DataRoot, findOnPath, Hypervisor, Internal, QemuMissing } from "@stoat/core"
import { join } from "node:path"
import { cachedProbe, probeAccelerator } from "./probe.js"
import { readRunState } from "./process.js"

export const QEMU_BINARY = "qemu-system-x86_64"

const qemuPath = Effect.flatMap(
  Effect.promise(() => findOnPath(QEMU_BINARY)),
  (path) => (path ? Effect.succeed(path) : Effect.fail(new QemuMissing({ message: `${QEMU_BINARY} not found on PATH; run stoat doctor` })))
)

const notYet = (what: string) => Effect.die(new Internal({ message: `${what} is not available yet` }))

/** The QEMU implementation of the Hypervisor port. */
export const QemuHypervisorLive = Layer.effect(
  Hypervisor,
  Effect.map(DataRoot, (root) => ({
    status: (vm) => Effect.promise(() => readRunState(vm)),
    probeAccelerator: Effect.flatMap(qemuPath, (qemu) => Effect.promise(() => probeAccelerator(qemu))),
    start: () => notYet("start"),
    stop: () => notYet("stop"),
    createDisk: () => notYet("createDisk"),
    resizeDisk: () => notYet("resizeDisk"),
    diskInfo: () => notYet("diskInfo"),
    listSnapshots: () => notYet("listSnapshots"),
    saveSnapshot: () => notYet("saveSnapshot"),
    restoreSnapshot: () => notYet("restoreSnapshot"),
    deleteSnapshot: () => notYet("deleteSnapshot"),
    screenshot: () => notYet("screenshot"),
    validate: () => Effect.void,
    cachedAccel: Effect.flatMap(qemuPath, (qemu) => Effect.promise(() => cachedProbe(qemu, join(root.root, ".accel-probe.json"))))
  }))
)
