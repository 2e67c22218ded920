import { Layer } from "effect"
import { CoreLive } from "@stoat/core"
import { QemuHypervisorLive } from "./hypervisor.js"

/** The whole live stack: core services over `$STOAT_HOME` with the QEMU hypervisor. */
export const StoatLive = QemuHypervisorLive.pipe(Layer.provideMerge(CoreLive))
