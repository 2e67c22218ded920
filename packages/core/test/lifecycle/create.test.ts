import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { createVm, forwardPorts, getVm, startVm } from "../../src/operations/index.js"
import { KNOWN_IMAGES, knownImageFile, findImage } from "../../src/images/index.js"
import { harness, nextFreePort } from "../harness.js"

describe("create", () => {
  it("fills the tiny defaults: 256 MiB, 1 vCPU, a 1G disk, agent_access manage, stopped", async () => {
    const h = harness()
    const vm = await h.ok(createVm, { name: "web", image: "tiny" })
    expect(vm).toMatchObject({
      name: "web",
      os: "tiny",
      mode: "disk",
      state: "stopped",
      ram_mb: 256,
      cpus: 1,
      disk: "1G",
      agent_access: "manage",
      forwards: []
    })
    expect(vm.ssh_port).toBeGreaterThanOrEqual(2200)
    // The disk exists at 1 GiB and the VM folder, vm.toml and shared folder were made.
    expect(h.hypervisor.disks.get(h.diskOf("web"))?.size).toBe(1024 ** 3)
    expect(h.readVmToml("web")).toMatch(/agent_access = "manage"/)
    expect(h.exists("shared", "web")).toBe(true)
    // Nothing was started.
    expect(h.hypervisor.starts).toBe(0)
  })

  it("makes a debian-12-mini VM an overlay of the build's root disk, logging in as the debian guest's user", async () => {
    const h = harness()
    const vm = await h.ok(createVm, { name: "deb", image: "debian-12-mini" })
    expect(vm).toMatchObject({
      name: "deb",
      os: "debian",
      mode: "disk",
      state: "stopped",
      ram_mb: 1024,
      cpus: 1,
      disk: "4G"
    })
    expect(h.hypervisor.disks.get(h.diskOf("deb"))).toMatchObject({
      size: 4 * 1024 ** 3,
      backing: "/fake/debian-12-mini/rootfs.qcow2"
    })
    expect(h.readVmToml("deb")).toMatch(/sshuser = "stoat"/)
    expect(h.readVmToml("deb")).toMatch(/base = "\/fake\/debian-12-mini\/rootfs.qcow2"/)
    // A start boots the build the disk came from, not whichever build is current by then.
    await h.ok(startVm, { vm: "deb" })
    expect(h.images.builds.at(-1)).toEqual({ id: "debian-12-mini", rootDisk: "/fake/debian-12-mini/rootfs.qcow2" })
    const plan = h.hypervisor.running.get(join(h.root, "deb"))?.plan
    expect(plan).toMatchObject({
      disk: "disk.qcow2",
      kernel: { path: "/fake/debian-12-mini/vmlinux" },
      guestIdentity: { hostname: "deb" }
    })
  })

  it("a tiny VM gets a blank data disk and boots whatever tiny build is current", async () => {
    const h = harness()
    await h.ok(createVm, { name: "t", image: "tiny" })
    expect(h.hypervisor.disks.get(h.diskOf("t"))?.backing).toBeUndefined()
    await h.ok(startVm, { vm: "t" })
    expect(h.images.builds.at(-1)).toEqual({ id: "tiny" })
  })

  it("takes ram_mb, cpus, disk and agent_access when given", async () => {
    const h = harness()
    const vm = await h.ok(createVm, {
      name: "big",
      image: "tiny",
      ram_mb: 512,
      cpus: 2,
      disk: "2G",
      agent_access: "observe"
    })
    expect(vm).toMatchObject({ ram_mb: 512, cpus: 2, disk: "2G", agent_access: "observe", allow_exec: false })
    expect(h.hypervisor.disks.get(h.diskOf("big"))?.size).toBe(2 * 1024 ** 3)
  })

  it.each([
    ["-leading-dash"],
    [".hidden"],
    ["has space"],
    ["slash/inside"],
    ["dots..ok-but-ümlaut"],
    ["a".repeat(65)],
    [""]
  ])("refuses the name %j with invalid_spec and leaves no folder", async (name) => {
    const h = harness()
    const error = await h.fail(createVm, { name, image: "tiny" })
    expect(error.code).toBe("invalid_spec")
    expect(h.vmFolders()).toEqual([])
  })

  it.each([["con"], ["CON"], ["nul"], ["prn.txt"], ["aux"], ["com1"], ["LPT9"], ["com7.log"]])(
    "refuses the Windows device name %j with invalid_spec",
    async (name) => {
      const h = harness()
      const error = await h.fail(createVm, { name, image: "tiny" })
      expect(error).toMatchObject({ code: "invalid_spec", subject: name })
      expect(error.message).toMatch(/reserved device name/)
      expect(h.vmFolders()).toEqual([])
    }
  )

  it("accepts the full grammar: letters, digits, '.', '_', '-' and 64 characters", async () => {
    const h = harness()
    await h.ok(createVm, { name: "A1._-b", image: "tiny" })
    await h.ok(createVm, { name: "x".repeat(64), image: "tiny" })
    await h.ok(createVm, { name: "console", image: "tiny" }) // only the exact device names are reserved
    expect(h.vmFolders()).toEqual(["A1._-b", "console", "x".repeat(64)])
  })

  it("refuses an existing name with name_taken and keeps the first VM intact", async () => {
    const h = harness()
    const first = await h.ok(createVm, { name: "web", image: "tiny", ram_mb: 300 })
    const error = await h.fail(createVm, { name: "web", image: "tiny" })
    expect(error).toMatchObject({ code: "name_taken", subject: "web" })
    const status = await h.ok(getVm, { vm: "web" })
    expect(status).toMatchObject({ ram_mb: 300, ssh_port: first.ssh_port })
  })

  it("a broken VM's name is taken too", async () => {
    const h = harness()
    h.writeVmToml("old", "this is = = not toml")
    expect((await h.fail(createVm, { name: "old", image: "tiny" })).code).toBe("name_taken")
  })

  it("refuses an unknown image (no_such_image), a missing one (invalid_spec) and one not downloaded", async () => {
    const h = harness()
    expect(await h.fail(createVm, { name: "web", image: "tinyy" })).toMatchObject({
      code: "no_such_image",
      subject: "tinyy"
    })
    expect(await h.fail(createVm, { name: "web" })).toMatchObject({ code: "invalid_spec", subject: "image" })
    expect(await h.fail(createVm, { name: "web", image: "ubuntu-24.04" })).toMatchObject({
      code: "image_not_downloaded",
      subject: "ubuntu-24.04"
    })
    expect(h.vmFolders()).toEqual([])
  })

  it("max_vms from config.toml [limits] answers limit_reached, counting broken VMs", async () => {
    const h = harness()
    h.writeConfig("[limits]\nmax_vms = 2\n")
    await h.ok(createVm, { name: "one", image: "tiny" })
    h.writeVmToml("broken", "garbage = [\n")
    const error = await h.fail(createVm, { name: "three", image: "tiny" })
    expect(error).toMatchObject({ code: "limit_reached", subject: "three" })
    expect(error.message).toMatch(/max_vms = 2/)
    expect(h.vmFolders()).toEqual(["broken", "one"])
    // Deleting one makes room again.
    h.writeConfig("[limits]\nmax_vms = 3\n")
    await h.ok(createVm, { name: "three", image: "tiny" })
  })

  it("an invalid [limits] value is invalid_spec, not a crash", async () => {
    const h = harness()
    h.writeConfig("[limits]\nmax_vms = -1\n")
    expect((await h.fail(createVm, { name: "web", image: "tiny" })).code).toBe("invalid_spec")
  })

  it("gives every VM its own ssh port from 2200", async () => {
    const h = harness()
    const ports = new Set<number>()
    for (const name of ["a", "b", "c", "d"]) {
      const vm = await h.ok(createVm, { name, image: "tiny" })
      expect(vm.ssh_port).toBeGreaterThanOrEqual(2200)
      ports.add(vm.ssh_port)
    }
    expect(ports.size).toBe(4)
  })

  it("skips the ssh port a broken VM still claims", async () => {
    const h = harness()
    const a = await h.ok(createVm, { name: "a", image: "tiny" })
    const wanted = await nextFreePort(new Set([a.ssh_port]))
    // The port create would pick next is written into a garbage vm.toml: the regex salvage keeps it reserved.
    h.writeVmToml("junk", `sshport = ${wanted}\nthis line is not toml\n`)
    const b = await h.ok(createVm, { name: "b", image: "tiny" })
    expect(b.ssh_port).not.toBe(wanted)
    expect(b.ssh_port).not.toBe(a.ssh_port)
  })

  it("skips a host port another VM forwards", async () => {
    const h = harness()
    const a = await h.ok(createVm, { name: "a", image: "tiny" })
    const wanted = await nextFreePort(new Set([a.ssh_port]))
    await h.ok(forwardPorts, { vm: "a", pairs: [`${wanted}:80`] })
    const b = await h.ok(createVm, { name: "b", image: "tiny" })
    expect(b.ssh_port).not.toBe(wanted)
    expect(b.ssh_port).not.toBe(a.ssh_port)
  })

  it("an unknown input key is usage (closed schema) and creates nothing", async () => {
    const h = harness()
    const error = await h.fail(createVm, { name: "web", image: "tiny", colour: "blue" })
    expect(error.code).toBe("usage")
    expect(error.message).toMatch(/colour: unknown argument/)
    expect(h.vmFolders()).toEqual([])
  })

  it.each([
    [{ name: "web", image: "tiny", ram_mb: 255 }],
    [{ name: "web", image: "tiny", cpus: 0 }],
    [{ name: "web", image: "tiny", disk: "+8G" }],
    [{ name: "web", image: "tiny", agent_access: "root" }],
    [{ name: "web", image: "tiny", mode: "cloud" }],
    [{ name: 5, image: "tiny" }]
  ])("refuses malformed input %j with usage", async (input) => {
    const h = harness()
    expect((await h.fail(createVm, input)).code).toBe("usage")
    expect(h.vmFolders()).toEqual([])
  })

  it("mode disk on the tiny image is accepted; mode live contradicts it (invalid_spec)", async () => {
    const h = harness()
    expect((await h.ok(createVm, { name: "web", image: "tiny", mode: "disk" })).mode).toBe("disk")
    expect(await h.fail(createVm, { name: "web2", image: "tiny", mode: "live" })).toMatchObject({
      code: "invalid_spec",
      subject: "mode"
    })
    expect(h.vmFolders()).toEqual(["web"])
  })

  it("a cloud image is always mode cloud: mode disk is refused", async () => {
    const h = harness()
    const entry = findImage("ubuntu-24.04")!
    mkdirSync(join(h.root, "isos"), { recursive: true })
    writeFileSync(join(h.root, "isos", knownImageFile(entry)), "fake image")
    expect(await h.fail(createVm, { name: "web", image: "ubuntu-24.04", mode: "disk" })).toMatchObject({
      code: "invalid_spec",
      subject: "mode"
    })
    expect(h.vmFolders()).toEqual([])
    expect((await h.ok(createVm, { name: "web", image: "ubuntu-24.04" })).mode).toBe("cloud")
  })

  it("every image the catalog lists (and stoat pull fetches) makes a VM once it is on disk", async () => {
    const h = harness()
    mkdirSync(join(h.root, "isos"), { recursive: true })
    for (const entry of KNOWN_IMAGES) {
      if (!entry.local) writeFileSync(join(h.root, "isos", knownImageFile(entry)), "fake image")
      expect((await h.ok(createVm, { name: `vm-${entry.id.replace(/\./g, "-")}`, image: entry.id })).os, entry.id).toBe(
        entry.os
      )
    }
  })

  it("a failing disk creation leaves no VM folder and no shared folder", async () => {
    const h = harness()
    h.hypervisor.createDiskError = "qemu-img: disk full"
    const error = await h.fail(createVm, { name: "web", image: "tiny" })
    expect(error.code).toBe("internal")
    expect(h.vmFolders()).toEqual([])
    expect(h.exists("shared", "web")).toBe(false)
  })
})
