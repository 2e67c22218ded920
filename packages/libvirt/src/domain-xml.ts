import { createHash } from "node:crypto"
import { join } from "node:path"
import type { BootPlan, VmRef } from "@stoat/core"

/**
 * The machine type every domain is pinned to, not the moving alias `q35`: saved state only
 * restores on the same machine type, so hosts of one pool must agree. 7.2 is Debian 12's QEMU;
 * later QEMUs keep versioned machine types for years.
 */
export const MACHINE_TYPE = "pc-q35-7.2"

/**
 * The named CPU model when the VM asks for none: a fixed model (not host-passthrough) keeps
 * the guest's CPU the same on every host of a pool, and TCG emulates it.
 */
export const DEFAULT_CPU_MODEL = "qemu64"

/** Files the libvirt provider keeps in a VM's folder. */
export const libvirtFiles = (dir: string) => ({
  console: join(dir, "console.log"),
  vnc: join(dir, "vnc.sock"),
  initrd: join(dir, "initrd.img"),
  /** The domain XML of the last start, and what awaitSshd needs (console offset, marker, URI). */
  domain: join(dir, "libvirt-domain.xml"),
  boot: join(dir, "libvirt-boot.json")
})

/**
 * The libvirt domain of a VM: its name plus a hash of its folder, so two data roots (two users,
 * or test homes) on one libvirt host never share a domain.
 */
export const domainName = (vm: VmRef): string =>
  `stoat-${vm.name}-${createHash("sha256").update(vm.dir).digest("hex").slice(0, 8)}`

/** A value made safe to quote in domain XML (text or an attribute in either quote). */
export const escapeXml = (value: string): string =>
  value
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&apos;")

export interface DomainOptions {
  readonly name: string
  /** kvm where the host has working KVM; qemu is TCG. */
  readonly type: "kvm" | "qemu"
  /** Host path of the VM's disk, and its format from its header. */
  readonly disk?: { readonly path: string; readonly format: "qcow2" | "raw" }
  readonly seedIso?: string
  /** The per-VM initrd of a direct-boot guest (its identity), instead of the image's. */
  readonly initrd?: string
  /** Who QEMU runs as: the owner of the VM's files, so libvirt relabels nothing of theirs. */
  readonly uid: number
  readonly gid: number
}

/** The PCI slot of the user-net NIC given on QEMU's command line, clear of the slots libvirt assigns from 1 up. */
const NET_PCI_SLOT = "0x1e"

/**
 * The domain XML for a BootPlan. Networking is QEMU's user-mode stack with host forwards bound
 * to 127.0.0.1, passed through `<qemu:commandline>`: libvirt 9.0's own `<interface type='user'>`
 * forwards ports only with the passt backend (a separate package that libvirt 9.0 runs under its
 * own security labels), while slirp gives the guest exactly the network the QEMU provider gives
 * it (10.0.2.x, same forwards), so guests behave the same under both providers.
 */
export const domainXml = (plan: BootPlan, options: DomainOptions): string => {
  const files = libvirtFiles(plan.vm.dir)
  const forwards = [{ host: plan.sshPort, guest: 22 }, ...plan.forwards]
  const cpuModel = plan.cpuModel === undefined || plan.cpuModel === "" ? DEFAULT_CPU_MODEL : plan.cpuModel
  const cpu =
    cpuModel === "host"
      ? options.type === "kvm"
        ? "<cpu mode='host-passthrough' check='none'/>"
        : "<cpu mode='maximum' check='none'/>"
      : `<cpu mode='custom' match='exact' check='none'><model fallback='forbid'>${escapeXml(cpuModel)}</model></cpu>`
  const cdromFirst = plan.bootFromCdrom === true && plan.cdrom !== undefined
  // A direct kernel boot needs no boot order; otherwise the disk first, unless installing from the ISO.
  const bootOrder = (order: number) => (plan.kernel === undefined ? `<boot order='${order}'/>` : "")
  const lines: string[] = [
    `<domain type='${options.type}' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>`,
    `  <name>${escapeXml(options.name)}</name>`,
    `  <title>${escapeXml(plan.vm.name)}</title>`,
    `  <description>stoat VM ${escapeXml(plan.vm.dir)}</description>`,
    // A VM generation ID, as the QEMU provider gives every VM: a restored copy reseeds its RNG.
    "  <genid/>",
    `  <memory unit='MiB'>${plan.ramMb}</memory>`,
    `  <vcpu>${plan.cpus}</vcpu>`,
    "  <os>",
    `    <type arch='x86_64' machine='${MACHINE_TYPE}'>hvm</type>`
  ]
  if (plan.kernel !== undefined) {
    lines.push(
      `    <kernel>${escapeXml(plan.kernel.path)}</kernel>`,
      `    <initrd>${escapeXml(options.initrd ?? plan.kernel.initrd)}</initrd>`,
      `    <cmdline>${escapeXml(plan.kernel.append)}</cmdline>`
    )
  }
  lines.push(
    "  </os>",
    "  <features><acpi/></features>",
    `  ${cpu}`,
    "  <on_poweroff>destroy</on_poweroff>",
    "  <on_reboot>restart</on_reboot>",
    "  <on_crash>destroy</on_crash>",
    "  <devices>"
  )
  if (options.disk !== undefined) {
    lines.push(
      "    <disk type='file' device='disk'>",
      `      <driver name='qemu' type='${options.disk.format}' discard='unmap'/>`,
      `      <source file='${escapeXml(options.disk.path)}'/>`,
      "      <target dev='vda' bus='virtio'/>",
      `      ${bootOrder(cdromFirst ? 2 : 1)}`,
      "    </disk>"
    )
  }
  const cdroms: Array<{ readonly path: string; readonly dev: string; readonly order?: number }> = []
  if (plan.cdrom !== undefined) cdroms.push({ path: plan.cdrom, dev: "sda", order: cdromFirst ? 1 : 2 })
  if (options.seedIso !== undefined) cdroms.push({ path: options.seedIso, dev: "sdb" })
  for (const cdrom of cdroms) {
    lines.push(
      "    <disk type='file' device='cdrom'>",
      "      <driver name='qemu' type='raw'/>",
      `      <source file='${escapeXml(cdrom.path)}'/>`,
      `      <target dev='${cdrom.dev}' bus='sata'/>`,
      "      <readonly/>",
      cdrom.order !== undefined ? `      ${bootOrder(cdrom.order)}` : "",
      "    </disk>"
    )
  }
  const shares = [
    { tag: "work", host: plan.workShare, readonly: false },
    ...(plan.hostShare !== undefined ? [{ tag: "host", host: plan.hostShare, readonly: true }] : []),
    ...(plan.extraShares ?? []).map((share) => ({ tag: share.tag, host: share.host, readonly: false }))
  ]
  for (const share of shares) {
    // accessmode mapped = QEMU's security_model=mapped-xattr, as the QEMU provider shares.
    lines.push(
      "    <filesystem type='mount' accessmode='mapped'>",
      `      <source dir='${escapeXml(share.host)}'/>`,
      `      <target dir='${escapeXml(share.tag)}'/>`,
      share.readonly ? "      <readonly/>" : "",
      "    </filesystem>"
    )
  }
  lines.push(
    "    <serial type='file'>",
    `      <source path='${escapeXml(files.console)}' append='on'/>`,
    "      <target port='0'/>",
    "    </serial>",
    "    <rng model='virtio'><backend model='random'>/dev/urandom</backend></rng>",
    `    <graphics type='vnc' socket='${escapeXml(files.vnc)}'/>`,
    "    <memballoon model='none'/>",
    "  </devices>",
    // QEMU runs as the files' owner and libvirt relabels none of them (they stay the user's).
    `  <seclabel type='static' model='dac' relabel='no'><label>+${options.uid}:+${options.gid}</label></seclabel>`,
    "  <qemu:commandline>",
    "    <qemu:arg value='-netdev'/>",
    `    <qemu:arg value='${escapeXml(`user,id=stoatnet,${forwards.map((forward) => `hostfwd=tcp:127.0.0.1:${forward.host}-:${forward.guest}`).join(",")}`)}'/>`,
    "    <qemu:arg value='-device'/>",
    `    <qemu:arg value='virtio-net-pci,netdev=stoatnet,bus=pcie.0,addr=${NET_PCI_SLOT}'/>`,
    "  </qemu:commandline>",
    "</domain>"
  )
  return `${lines.filter((line) => line.trim() !== "").join("\n")}\n`
}

export interface ProbeDomain {
  readonly name: string
  /** A 64-bit guest kernel, and an initramfs whose /init prints the marker and exits. */
  readonly kernel: string
  readonly initrd: string
  /** Where its serial console goes. */
  readonly console: string
  readonly uid: number
  readonly gid: number
}

/**
 * The KVM probe's domain: a guest kernel with a one-line init under KVM, on the VMs' machine type
 * and CPU model, that ends itself (panic=-1, then reboot → destroy). Its marker on the console
 * says KVM runs such a guest; nested hosts whose KVM passes a trivial check fail it.
 */
export const probeDomainXml = (probe: ProbeDomain): string =>
  [
    "<domain type='kvm'>",
    `  <name>${escapeXml(probe.name)}</name>`,
    "  <memory unit='MiB'>128</memory>",
    "  <vcpu>1</vcpu>",
    "  <os>",
    `    <type arch='x86_64' machine='${MACHINE_TYPE}'>hvm</type>`,
    `    <kernel>${escapeXml(probe.kernel)}</kernel>`,
    `    <initrd>${escapeXml(probe.initrd)}</initrd>`,
    "    <cmdline>console=ttyS0 panic=-1 quiet</cmdline>",
    "  </os>",
    `  <cpu mode='custom' match='exact' check='none'><model fallback='forbid'>${DEFAULT_CPU_MODEL}</model></cpu>`,
    "  <on_poweroff>destroy</on_poweroff>",
    "  <on_reboot>destroy</on_reboot>",
    "  <on_crash>destroy</on_crash>",
    "  <devices>",
    "    <serial type='file'>",
    `      <source path='${escapeXml(probe.console)}'/>`,
    "      <target port='0'/>",
    "    </serial>",
    "    <memballoon model='none'/>",
    "  </devices>",
    `  <seclabel type='static' model='dac' relabel='no'><label>+${probe.uid}:+${probe.gid}</label></seclabel>`,
    "</domain>",
    ""
  ].join("\n")
