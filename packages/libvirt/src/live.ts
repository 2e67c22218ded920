import { Layer } from "effect"
import { CoreLive, routedProviderLayer } from "@stoat/core"
import { QemuGuestSignalsLive, QemuHypervisorLive, QemuImageBuilderLive } from "@stoat/qemu"
import { LibvirtHostChecksLive } from "./host-checks.js"
import { LibvirtGuestSignalsLive, LibvirtHypervisorLive } from "./hypervisor.js"

/**
 * The Hypervisor and GuestSignals that serve each VM from the provider its vm.toml names: QEMU by
 * default, libvirt for `provider = "libvirt"`; and libvirt's checks of a host for doctor --host.
 */
export const StoatProviderLive = Layer.merge(
  routedProviderLayer(Layer.merge(QemuHypervisorLive, QemuGuestSignalsLive), {
    libvirt: Layer.merge(LibvirtHypervisorLive, LibvirtGuestSignalsLive)
  }),
  LibvirtHostChecksLive
)

/** The whole live stack as @stoat/qemu's StoatLive, with VMs routed to QEMU or libvirt per VM. */
export const StoatLive = CoreLive(Layer.merge(StoatProviderLive, QemuImageBuilderLive))
