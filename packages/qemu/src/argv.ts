import { join } from "node:path"
import type { BootPlan } from "@stoat/core"
import { hostPathOf, vmFilePath } from "./disks.js"

/** Files QEMU and Stoat keep in a VM's folder while it runs. */
export interface VmFiles {
  readonly pidfile: string
  readonly qmp: string
  readonly vnc: string
  readonly console: string
  /** The per-VM initrd of a direct-boot guest (shared base + this VM's keys and name). */
  readonly initrd: string
  /** What the last start recorded: where its console output begins, the line that means sshd listens, the plan. */
  readonly boot: string
  /** Where QEMU sends a checkpoint's RAM and device state while one is being taken. */
  readonly migration: string
}

export const vmFiles = (dir: string): VmFiles => ({
  pidfile: join(dir, "qemu.pid"),
  qmp: join(dir, "qmp.sock"),
  vnc: join(dir, "vnc.sock"),
  console: join(dir, "console.log"),
  initrd: join(dir, "initrd.img"),
  boot: join(dir, "boot.json"),
  migration: join(dir, "migrate.sock")
})

/** The drive id of the VM's disk; QMP snapshot commands address it by this name. */
export const DISK_ID = "d0"

export interface ArgvOptions {
  readonly accel: "kvm" | "tcg"
  /** Format of plan.disk (the caller reads the header); default qcow2 for *.qcow2, raw otherwise. */
  readonly diskFormat?: "qcow2" | "raw"
  /** Boot this initrd instead of plan.kernel.initrd (the per-VM copy carrying the guest identity). */
  readonly initrd?: string
  /** Default true: QEMU forks into the background once it is set up (the pidfile is written either way). */
  readonly daemonize?: boolean
  /** Resume from this saved RAM and device state (a checkpoint's state file) instead of booting. */
  readonly incomingState?: string
}

/** A word for /bin/sh: QEMU runs `exec:` migration URIs through the shell. */
export const shellWord = (value: string): string => `'${value.replace(/'/g, "'\\''")}'`

/** QEMU option values separate keys with commas; a literal comma is written twice. */
export const qemuOpt = (value: string): string => value.replace(/,/g, ",,")

/**
 * The qemu-system-x86_64 command line for a BootPlan. Every path is absolute because a
 * daemonized QEMU changes to `/`. The choices for the tiny guest (q35, virtio-net-pci,
 * virtio-rng-pci for dropbear's entropy, serial appended to console.log) hold for every guest.
 */
export const qemuArgs = (plan: BootPlan, options: ArgvOptions): string[] => {
  const files = vmFiles(plan.vm.dir)
  const forwards = [{ host: plan.sshPort, guest: 22 }, ...plan.forwards]
  const args = ["-name", `guest=${qemuOpt(plan.vm.name)}`, "-accel", options.accel, "-M", "q35"]
  if (plan.cpuModel !== undefined && plan.cpuModel !== "") {
    // "host" needs KVM; under TCG the closest model is "max".
    args.push("-cpu", plan.cpuModel === "host" && options.accel !== "kvm" ? "max" : plan.cpuModel)
  }
  args.push("-m", String(plan.ramMb), "-smp", String(plan.cpus))

  if (plan.display === "window") args.push("-vga", "virtio", "-display", "gtk,gl=on")
  else args.push("-display", "none", "-vnc", `unix:${qemuOpt(files.vnc)}`)

  if (plan.kernel !== undefined) {
    // SeaBIOS, not the slightly faster qboot: qboot cannot place the VM generation ID (the guest hangs before its kernel runs).
    args.push(
      "-kernel",
      plan.kernel.path,
      "-initrd",
      options.initrd ?? plan.kernel.initrd,
      "-append",
      plan.kernel.append
    )
  }
  // Firmware boots the ISO first only while the OS is not installed. A direct kernel boot
  // claims bootindex 0 itself, so then the drives get none.
  const cdromFirst = plan.bootFromCdrom === true && plan.cdrom !== undefined
  const bootindex = (index: number) => (plan.kernel === undefined ? `,bootindex=${index}` : "")
  if (plan.disk !== undefined) {
    const format = options.diskFormat ?? (plan.disk.endsWith(".qcow2") ? "qcow2" : "raw")
    args.push(
      "-drive",
      `file=${qemuOpt(vmFilePath(plan.vm, plan.disk))},if=none,id=${DISK_ID},format=${format},discard=unmap`,
      "-device",
      `virtio-blk-pci,drive=${DISK_ID}${bootindex(cdromFirst ? 1 : 0)}`
    )
  }
  if (plan.cdrom !== undefined) {
    args.push(
      "-drive",
      `file=${qemuOpt(plan.cdrom)},if=none,id=cd0,media=cdrom,readonly=on`,
      "-device",
      `ide-cd,drive=cd0,bus=ide.0${bootindex(cdromFirst ? 0 : 1)}`
    )
  }
  if (plan.seedIso !== undefined) {
    args.push(
      "-drive",
      `file=${qemuOpt(hostPathOf(plan.seedIso))},if=none,id=seed0,media=cdrom,readonly=on`,
      "-device",
      "ide-cd,drive=seed0,bus=ide.1"
    )
  }

  args.push(
    "-netdev",
    `user,id=n0,${forwards.map((forward) => `hostfwd=tcp:127.0.0.1:${forward.host}-:${forward.guest}`).join(",")}`,
    "-device",
    "virtio-net-pci,netdev=n0",
    "-device",
    "virtio-rng-pci",
    // A VM generation ID: a VM resumed from a checkpoint sees a new one and the guest kernel
    // reseeds its RNG, so forks of one state do not share random numbers. Every VM has the
    // device, so a checkpoint's source and its forks have the same device set.
    "-device",
    "vmgenid,guid=auto",
    "-chardev",
    `file,id=con0,path=${qemuOpt(files.console)},append=on`,
    "-serial",
    "chardev:con0",
    "-qmp",
    `unix:${qemuOpt(files.qmp)},server=on,wait=off`,
    "-virtfs",
    `local,path=${qemuOpt(plan.workShare)},mount_tag=work,security_model=mapped-xattr,id=work`
  )
  if (plan.hostShare !== undefined) {
    args.push(
      "-virtfs",
      `local,path=${qemuOpt(plan.hostShare)},mount_tag=host,security_model=mapped-xattr,readonly=on,id=host`
    )
  }
  plan.extraShares?.forEach((share, index) => {
    args.push(
      "-virtfs",
      `local,path=${qemuOpt(share.host)},mount_tag=${qemuOpt(share.tag)},security_model=mapped-xattr,id=share${index}`
    )
  })
  args.push("-pidfile", files.pidfile)
  if (options.incomingState !== undefined) args.push("-incoming", `exec:cat ${shellWord(options.incomingState)}`)
  if (options.daemonize !== false) args.push("-daemonize")
  return args
}
