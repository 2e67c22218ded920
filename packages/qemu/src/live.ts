import { Layer } from "effect"
import { CoreLive } from "@stoat/core"
import { QemuGuestSignalsLive, QemuHypervisorLive } from "./hypervisor.js"
import { QemuImageBuilderLive } from "./image-builder.js"

/** The whole live stack: core's one service graph with QEMU's hypervisor, guest signals and image builder as its ports. */
export const StoatLive = CoreLive(Layer.mergeAll(QemuHypervisorLive, QemuGuestSignalsLive, QemuImageBuilderLive))
