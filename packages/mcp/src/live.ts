import { Layer, ManagedRuntime } from "effect"
import { ProjectDirectory } from "@stoat/core"
import { StoatLive } from "@stoat/qemu"

/**
 * The live stack (QEMU hypervisor, ssh2 transport, data root from $STOAT_HOME) as one runtime;
 * the server's working directory is the project it serves.
 */
export const liveRuntime = () => ManagedRuntime.make(StoatLive.pipe(Layer.provide(ProjectDirectory.layer(process.cwd()))))
