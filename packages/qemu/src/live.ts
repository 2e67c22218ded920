import { Layer } from "effect"
import { CheckpointsLive, CoreLive } from "@stoat/core"
import { QemuHypervisorLive } from "./hypervisor.js"

/** The whole live stack: core services over `$STOAT_HOME` with the QEMU hypervisor. */
export const StoatLive = CheckpointsLive.pipe(Layer.provideMerge(QemuHypervisorLive.pipe(Layer.provideMerge(CoreLive))))
