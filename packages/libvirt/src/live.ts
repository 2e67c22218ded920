import { Layer } from "effect"
import { CheckpointsLive, CoreLive, DataRootLive, ImagesLive, routedHypervisorLayer } from "@stoat/core"
import { QemuHypervisorLive, QemuImageBuilderLive } from "@stoat/qemu"
import { LibvirtHypervisorLive } from "./hypervisor.js"

/** The Hypervisor that runs each VM on the provider its vm.toml names: QEMU by default, libvirt for `provider = "libvirt"`. */
export const StoatHypervisorLive = routedHypervisorLayer(QemuHypervisorLive, { libvirt: LibvirtHypervisorLive })

const PortsLive = Layer.merge(StoatHypervisorLive, QemuImageBuilderLive).pipe(Layer.provide(DataRootLive))

/** The whole live stack as @stoat/qemu's StoatLive, with VMs routed to QEMU or libvirt per VM. */
export const StoatLive = Layer.merge(CheckpointsLive, ImagesLive).pipe(Layer.provideMerge(CoreLive), Layer.provideMerge(PortsLive))
