import { Layer } from "effect"
import { CheckpointsLive, CoreLive, DataRootLive, ImagesLive } from "@stoat/core"
import { QemuGuestSignalsLive, QemuHypervisorLive } from "./hypervisor.js"
import { QemuImageBuilderLive } from "./image-builder.js"

/** QEMU's implementations of core's ports, over the data root (the same DataRootLive CoreLive uses, so it is built once). */
const QemuPortsLive = Layer.mergeAll(QemuHypervisorLive, QemuGuestSignalsLive, QemuImageBuilderLive).pipe(Layer.provide(DataRootLive))

/** The whole live stack: core services over `$STOAT_HOME` with the QEMU hypervisor and image builder. */
export const StoatLive = Layer.merge(CheckpointsLive, ImagesLive).pipe(Layer.provideMerge(CoreLive), Layer.provideMerge(QemuPortsLive))
