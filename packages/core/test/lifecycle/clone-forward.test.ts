import { describe, expect, it } from "vitest"
import { cloneVm, createVm, forwardPorts, getVm, startVm, updateVm } from "../../src/operations/index.js"
import { harness } from "../harness.js"

describe("clone", () => {
  it("refuses a running source with already_running and makes nothing", async () => {
    const h = harness()
    await h.ok(createVm, { name: "src", image: "tiny" })
    await h.ok(startVm, { vm: "src" })
    expect(await h.fail(cloneVm, { source: "src", name: "copy" })).toMatchObject({
      code: "already_running",
      subject: "src"
    })
    expect(h.vmFolders()).toEqual(["src"])
  })

  it("copies the settings with a fresh ssh port, no forwards, and an overlay disk backed by the source disk", async () => {
    const h = harness()
    const source = await h.ok(createVm, {
      name: "src",
      image: "tiny",
      ram_mb: 384,
      cpus: 2,
      disk: "2G",
      agent_access: "exec"
    })
    await h.ok(forwardPorts, { vm: "src", pairs: ["18081:80"] })
    const result = await h.ok(cloneVm, { source: "src", name: "copy" })
    expect(result.source).toBe("src")
    expect(result.forwards_copied).toBe(false)
    expect(result.vm).toMatchObject({
      name: "copy",
      state: "stopped",
      ram_mb: 384,
      cpus: 2,
      disk: "2G",
      agent_access: "exec",
      forwards: []
    })
    expect(result.vm.ssh_port).not.toBe(source.ssh_port)
    expect(result.vm.ssh_port).not.toBe(18081)
    expect(h.hypervisor.disks.get(h.diskOf("copy"))).toMatchObject({ backing: h.diskOf("src"), size: 2 * 1024 ** 3 })
    expect(h.exists("shared", "copy")).toBe(true)
    // The source keeps its forward.
    expect((await h.ok(getVm, { vm: "src" })).forwards).toEqual([{ host_port: 18081, guest_port: 80 }])
  })

  it("the clone is independent: updating it leaves the source alone", async () => {
    const h = harness()
    await h.ok(createVm, { name: "src", image: "tiny" })
    await h.ok(cloneVm, { source: "src", name: "copy" })
    await h.ok(updateVm, { vm: "copy", ram_mb: 1024 })
    expect((await h.ok(getVm, { vm: "src" })).ram_mb).toBe(256)
  })

  it("an existing name is name_taken; a bad name invalid_spec; an unknown source not_found", async () => {
    const h = harness()
    await h.ok(createVm, { name: "src", image: "tiny" })
    await h.ok(createVm, { name: "taken", image: "tiny" })
    expect(await h.fail(cloneVm, { source: "src", name: "taken" })).toMatchObject({
      code: "name_taken",
      subject: "taken"
    })
    expect((await h.fail(cloneVm, { source: "src", name: "bad name" })).code).toBe("invalid_spec")
    expect((await h.fail(cloneVm, { source: "src", name: "nul" })).code).toBe("invalid_spec")
    expect((await h.fail(cloneVm, { source: "ghost", name: "copy" })).code).toBe("not_found")
    expect(h.vmFolders()).toEqual(["src", "taken"])
  })

  it("max_vms applies to clones", async () => {
    const h = harness()
    await h.ok(createVm, { name: "src", image: "tiny" })
    h.writeConfig("[limits]\nmax_vms = 1\n")
    expect((await h.fail(cloneVm, { source: "src", name: "copy" })).code).toBe("limit_reached")
    expect(h.vmFolders()).toEqual(["src"])
  })

  it("a clone whose disk cannot be made leaves no folder behind", async () => {
    const h = harness()
    await h.ok(createVm, { name: "src", image: "tiny" })
    h.hypervisor.createDiskError = "qemu-img: Could not open backing file"
    expect((await h.fail(cloneVm, { source: "src", name: "copy" })).code).toBe("internal")
    expect(h.vmFolders()).toEqual(["src"])
    expect(h.exists("shared", "copy")).toBe(false)
    // And the name is free again.
    h.hypervisor.createDiskError = undefined
    expect((await h.ok(cloneVm, { source: "src", name: "copy" })).vm.name).toBe("copy")
  })

  it("an unknown key is usage", async () => {
    const h = harness()
    await h.ok(createVm, { name: "src", image: "tiny" })
    expect((await h.fail(cloneVm, { source: "src", name: "copy", forwards: true })).code).toBe("usage")
  })
})

describe("forward", () => {
  it("shows, replaces and clears a VM's forwards", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    expect(await h.ok(forwardPorts, { vm: "web" })).toEqual({ vm: "web", forwards: [], active: false })
    const set = await h.ok(forwardPorts, { vm: "web", pairs: ["18080:80", "18443:443"] })
    expect(set).toEqual({
      vm: "web",
      forwards: [
        { host_port: 18080, guest_port: 80 },
        { host_port: 18443, guest_port: 443 }
      ],
      active: false,
      applies_at: "now"
    })
    expect((await h.ok(forwardPorts, { vm: "web" })).forwards).toHaveLength(2)
    const replaced = await h.ok(forwardPorts, { vm: "web", pairs: ["19000:9000"] })
    expect(replaced.forwards).toEqual([{ host_port: 19000, guest_port: 9000 }])
    const cleared = await h.ok(forwardPorts, { vm: "web", clear: true })
    expect(cleared).toMatchObject({ forwards: [], applies_at: "now" })
    expect((await h.ok(getVm, { vm: "web" })).forwards).toEqual([])
  })

  it("on a running VM changes apply at the next start and show active false", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(startVm, { vm: "web" })
    expect((await h.ok(forwardPorts, { vm: "web" })).active).toBe(true)
    const set = await h.ok(forwardPorts, { vm: "web", pairs: ["18080:80"] })
    expect(set).toMatchObject({ applies_at: "next_start", active: false })
    expect(h.hypervisor.running.get(h.vmDir("web"))?.plan.forwards).toEqual([])
    expect((await h.ok(forwardPorts, { vm: "web", clear: true })).applies_at).toBe("next_start")
  })

  it.each([
    [["80:80"], /1024 or higher/],
    [["1023:80"], /1024 or higher/],
    [["70000:80"], /1-65535/],
    [["18080:70000"], /1-65535/],
    [["18080:0"], /1-65535/],
    [["18080:80", "18080:81"], /listed twice/]
  ])("refuses %j with invalid_spec", async (pairs, why) => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    const error = await h.fail(forwardPorts, { vm: "web", pairs })
    expect(error.code).toBe("invalid_spec")
    expect(error.message).toMatch(why)
    expect((await h.ok(getVm, { vm: "web" })).forwards).toEqual([])
  })

  it("refuses the VM's own ssh port", async () => {
    const h = harness()
    const vm = await h.ok(createVm, { name: "web", image: "tiny" })
    const error = await h.fail(forwardPorts, { vm: "web", pairs: [`${vm.ssh_port}:80`] })
    expect(error.code).toBe("invalid_spec")
    expect(error.message).toMatch(/this VM's ssh port/)
  })

  it("refuses another VM's ssh port or forward, naming the VM and which it is", async () => {
    const h = harness()
    const other = await h.ok(createVm, { name: "alpha", image: "tiny" })
    await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(forwardPorts, { vm: "alpha", pairs: ["18080:80"] })
    const ssh = await h.fail(forwardPorts, { vm: "web", pairs: [`${other.ssh_port}:22`] })
    expect(ssh.code).toBe("invalid_spec")
    expect(ssh.message).toContain('VM "alpha"')
    expect(ssh.message).toMatch(/ssh port/)
    const forward = await h.fail(forwardPorts, { vm: "web", pairs: ["18080:8080"] })
    expect(forward.message).toContain('VM "alpha"')
    expect(forward.message).toMatch(/forward/)
  })

  it("refuses a port a broken VM still claims, naming it", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    h.writeVmToml("junk", "sshport = 18090\nnot toml at all\n")
    expect((await h.fail(forwardPorts, { vm: "web", pairs: ["18090:80"] })).message).toContain('"junk"')
  })

  it("its own current forwards may be re-listed", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(forwardPorts, { vm: "web", pairs: ["18080:80"] })
    expect((await h.ok(forwardPorts, { vm: "web", pairs: ["18080:80", "18081:81"] })).forwards).toHaveLength(2)
  })

  it("malformed pairs are usage; clear with pairs is invalid_spec", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    expect((await h.fail(forwardPorts, { vm: "web", pairs: ["8080"] })).code).toBe("usage")
    expect((await h.fail(forwardPorts, { vm: "web", pairs: ["a:b"] })).code).toBe("usage")
    expect((await h.fail(forwardPorts, { vm: "web", pairs: "18080:80" })).code).toBe("usage")
    expect((await h.fail(forwardPorts, { vm: "web", clear: true, pairs: ["18080:80"] })).code).toBe("invalid_spec")
  })
})
