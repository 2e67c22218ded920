export {
  DEFAULT_CPU_MODEL,
  domainName,
  domainXml,
  libvirtFiles,
  MACHINE_TYPE,
  type DomainOptions
} from "./domain-xml.js"
export { LibvirtHostChecksLive } from "./host-checks.js"
export {
  LibvirtGuestSignalsLive,
  LibvirtHypervisorLive,
  makeLibvirtHypervisor,
  type LibvirtHypervisorOptions
} from "./hypervisor.js"
export { uriOf } from "./domain.js"
export { probeKvmOn, type KvmVerdict } from "./accel.js"
export { StoatLive, StoatProviderLive } from "./live.js"
export { connectionProblem, DEFAULT_URI, virsh, VIRSH, type VirshResult } from "./virsh.js"
