import { Redacted } from "effect"
import { describe, expect, it } from "vitest"
import type { BootPlan } from "@stoat/core"
import { validate } from "./validate.js"
import { DEFAULT_CPU_MODEL, domainName, domainXml, MACHINE_TYPE, probeDomainXml } from "../src/domain-xml.js"

const plan: BootPlan = {
  vm: { name: "dev", dir: "/data/dev" },
  ramMb: 256,
  cpus: 2,
  sshPort: 2201,
  forwards: [{ host: 18080, guest: 8080 }],
  disk: "disk.qcow2",
  kernel: { path: "/cache/vmlinux", initrd: "/cache/initrd.img", append: "console=ttyS0 quiet" },
  seedIso: { vm: { name: "dev", dir: "/data/dev" }, file: "seed.iso" },
  workShare: "/data/shared/dev",
  hostShare: "/home/me/src",
  extraShares: [{ tag: "cache", host: "/var/cache/x" }],
  display: "vnc",
  guestIdentity: { authorizedKeys: "ssh-ed25519 AAAA me", hostKey: Redacted.make("secret host key"), hostname: "dev" }
}

const xmlOf = (over: Partial<BootPlan> = {}, type: "kvm" | "qemu" = "qemu") =>
  domainXml(
    { ...plan, ...over },
    {
      name: domainName(plan.vm),
      type,
      uid: 1000,
      gid: 1000,
      initrd: "/data/dev/initrd.img",
      disk: { path: "/data/dev/disk.qcow2", format: "qcow2" },
      seedIso: "/data/dev/seed.iso"
    }
  )

describe("the domain XML of a boot plan", () => {
  it("passes libvirt's domain schema, under TCG and KVM", () => {
    expect(validate(xmlOf({}, "qemu"))).toMatch(/validates/)
    expect(validate(xmlOf({}, "kvm"))).toMatch(/validates/)
  })

  it("pins the machine type and a named CPU model; host is passthrough only under KVM", () => {
    const xml = xmlOf()
    expect(xml).toContain(`machine='${MACHINE_TYPE}'`)
    expect(xml).toContain(`<model fallback='forbid'>${DEFAULT_CPU_MODEL}</model>`)
    expect(xmlOf({ cpuModel: "host" }, "kvm")).toContain("<cpu mode='host-passthrough'")
    expect(xmlOf({ cpuModel: "host" }, "qemu")).toContain("<cpu mode='maximum'")
  })

  it("boots the kernel with the VM's own initrd, and has its disk, seed ISO, shares, console and forwards", () => {
    const xml = xmlOf()
    expect(xml).toContain("<kernel>/cache/vmlinux</kernel>")
    expect(xml).toContain("<initrd>/data/dev/initrd.img</initrd>")
    expect(xml).toContain("<source file='/data/dev/disk.qcow2'/>")
    expect(xml).toContain("<source file='/data/dev/seed.iso'/>")
    expect(xml).toMatch(/<source dir='\/data\/shared\/dev'\/>\s*<target dir='work'\/>/)
    expect(xml).toMatch(/<source dir='\/home\/me\/src'\/>\s*<target dir='host'\/>\s*<readonly\/>/)
    expect(xml).toMatch(/<target dir='cache'\/>/)
    expect(xml).toContain("<source path='/data/dev/console.log' append='on'/>")
    expect(xml).toContain("hostfwd=tcp:127.0.0.1:2201-:22,hostfwd=tcp:127.0.0.1:18080-:8080")
    expect(xml).toContain("<label>+1000:+1000</label>")
    // The guest's host key never reaches the XML (it is written to a file that virsh reads).
    expect(xml).not.toContain("secret host key")
  })

  it("escapes what it quotes, so a path cannot change the domain", () => {
    const xml = xmlOf({ workShare: "/data/it's <b>&" })
    expect(xml).toContain("<source dir='/data/it&apos;s &lt;b&gt;&amp;'/>")
    expect(validate(xml)).toMatch(/validates/)
  })

  it("names domains by VM and folder, so two data roots on one host never share one", () => {
    expect(domainName({ name: "dev", dir: "/a/dev" })).toMatch(/^stoat-dev-[0-9a-f]{8}$/)
    expect(domainName({ name: "dev", dir: "/a/dev" })).not.toBe(domainName({ name: "dev", dir: "/b/dev" }))
  })
})

describe("the KVM probe's domain", () => {
  const probe = {
    name: "stoat-accel-probe-0a1b2c3d",
    kernel: "/cache/vmlinux",
    initrd: "/data/.libvirt-probe/0a1b2c3d/probe.cpio",
    console: "/data/.libvirt-probe/0a1b2c3d/it's.log",
    uid: 1000,
    gid: 1000
  }

  it("passes libvirt's domain schema, runs under KVM on the VMs' machine type and CPU model, and ends itself", () => {
    const xml = probeDomainXml(probe)
    expect(validate(xml)).toMatch(/validates/)
    expect(xml).toContain("<domain type='kvm'>")
    expect(xml).toContain(`machine='${MACHINE_TYPE}'`)
    expect(xml).toContain(`<model fallback='forbid'>${DEFAULT_CPU_MODEL}</model>`)
    expect(xml).toContain("<cmdline>console=ttyS0 panic=-1 quiet</cmdline>")
    expect(xml).toContain("<on_reboot>destroy</on_reboot>")
    expect(xml).toContain("<source path='/data/.libvirt-probe/0a1b2c3d/it&apos;s.log'/>")
  })
})
