import { ManagedRuntime } from "effect"
import { StoatLive } from "@stoat/qemu"

/** The live stack (QEMU hypervisor, ssh2 transport, data root from $STOAT_HOME) as one runtime. */
export const liveRuntime = () => ManagedRuntime.make(StoatLive)
