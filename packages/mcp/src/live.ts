import { Layer, ManagedRuntime } from "effect"
import { projectScopeLayer } from "@stoat/core"
import { StoatLive } from "@stoat/libvirt"

/**
 * The live stack (QEMU hypervisor, ssh2 transport, data root from $STOAT_HOME) as one runtime.
 * Project tools read the stoat.toml of the directory the server was started in, fixed here.
 */
export const liveRuntime = () =>
  ManagedRuntime.make(StoatLive.pipe(Layer.provideMerge(projectScopeLayer(process.cwd()))))
