import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { createVm, destroyVm, forwardPorts, getVm, listVms, startVm, updateVm } from "../../src/operations/index.js"
import { harness } from "../harness.js"

describe("destroy", () => {
  it("refuses a running VM with already_running and keeps it", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(startVm, { vm: "web" })
    expect(await h.fail(destroyVm, { vm: "web" })).toMatchObject({ code: "already_running", subject: "web" })
    expect(h.exists("web", "vm.toml")).toBe(true)
    expect(h.isRunning("web")).toBe(true)
  })

  it("returns {name, destroyed: true} and removes <root>/<vm> and <root>/shared/<vm>, never isos/", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(createVm, { name: "other", image: "tiny" })
    writeFileSync(join(h.sharedDir("web"), "notes.txt"), "work")
    mkdirSync(join(h.root, "isos"), { recursive: true })
    writeFileSync(join(h.root, "isos", "keep.iso"), "x")
    expect(await h.ok(destroyVm, { vm: "web" })).toEqual({ name: "web", destroyed: true })
    expect(h.exists("web")).toBe(false)
    expect(h.exists("shared", "web")).toBe(false)
    expect(h.exists("isos", "keep.iso")).toBe(true)
    expect(h.exists("other", "vm.toml")).toBe(true)
    expect((await h.ok(listVms, {})).vms.map((vm) => vm.name)).toEqual(["other"])
  })

  it("deletes a broken VM", async () => {
    const h = harness()
    h.writeVmToml("junk", "sshport = 2250\n[[[ nope\n")
    expect((await h.ok(listVms, {})).vms).toMatchObject([{ name: "junk", state: "broken", ssh_port: 2250 }])
    expect(await h.ok(destroyVm, { vm: "junk" })).toEqual({ name: "junk", destroyed: true })
    expect(h.vmFolders()).toEqual([])
  })

  it("an unknown VM is not_found; a reserved folder is never a VM", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    expect((await h.fail(destroyVm, { vm: "ghost" })).code).toBe("not_found")
    expect((await h.fail(destroyVm, { vm: "shared" })).code).toBe("not_found")
    expect(h.exists("shared", "web")).toBe(true)
  })
})

describe("update", () => {
  it("no fields is invalid_spec", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    expect((await h.fail(updateVm, { vm: "web" })).code).toBe("invalid_spec")
  })

  it.each([
    ["name", "other"],
    ["os", "alpine"],
    ["backend", "ssh"],
    ["mode", "live"]
  ])("%s is immutable: immutable_field naming it", async (field, value) => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    const before = h.readVmToml("web")
    const error = await h.fail(updateVm, { vm: "web", [field]: value, ram_mb: 512 })
    expect(error).toMatchObject({ code: "immutable_field", subject: field })
    expect(error.message).toContain(field)
    expect(h.readVmToml("web")).toBe(before)
  })

  it("on a stopped VM changes apply now", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    const result = await h.ok(updateVm, { vm: "web", ram_mb: 512, cpus: 2 })
    expect(result).toMatchObject({ changed: ["ram", "cpus"], applies_at: "now", pending_restart: [] })
    expect(result.vm).toMatchObject({ ram_mb: 512, cpus: 2 })
  })

  it("many settings at once: changed in the table's order, params once for params and secrets, boot-time ones pending on a running VM", async () => {
    const h = harness()
    const vm = await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(startVm, { vm: "web" })
    const result = await h.ok(updateVm, {
      vm: "web",
      secrets: { hello: { token: "s3cret" } },
      params: { hello: { greeting: "hi" } },
      shares: ["/tmp/a"],
      share: "/tmp/b",
      display: "window",
      ssh_port: vm.ssh_port + 50,
      cpus: 2,
      ram_mb: 512,
      agent_access: "observe"
    })
    expect(result.changed).toEqual(["agent_access", "ram", "cpus", "ssh_port", "display", "share", "shares", "params"])
    expect(result.pending_restart).toEqual(["ram", "cpus", "ssh_port", "display", "share", "shares"])
    expect(result.applies_at).toBe("next_start")
    expect(JSON.stringify(result)).not.toContain("s3cret")
  })

  it("on a running VM ram, cpus and ssh_port are saved and listed in pending_restart (applies_at next_start)", async () => {
    const h = harness()
    const vm = await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(startVm, { vm: "web" })
    const port = vm.ssh_port + 50
    const result = await h.ok(updateVm, { vm: "web", ram_mb: 512, cpus: 2, ssh_port: port, agent_access: "observe" })
    expect(result.applies_at).toBe("next_start")
    expect([...result.pending_restart].sort()).toEqual(["cpus", "ram", "ssh_port"])
    expect([...result.changed].sort()).toEqual(["agent_access", "cpus", "ram", "ssh_port"])
    expect(result.vm).toMatchObject({ ram_mb: 512, cpus: 2, ssh_port: port, agent_access: "observe", state: "running" })
    // The running process still has the old values.
    expect(h.hypervisor.running.get(h.vmDir("web"))?.plan).toMatchObject({ ramMb: 256, cpus: 1, sshPort: vm.ssh_port })
  })

  it("on a running VM a change that needs no restart applies now", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(startVm, { vm: "web" })
    expect(await h.ok(updateVm, { vm: "web", agent_access: "none" })).toMatchObject({
      applies_at: "now",
      pending_restart: []
    })
  })

  it("disk: growing a running VM is already_running; shrinking is disk_shrink; growing a stopped VM grows the disk", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny", disk: "2G" })
    await h.ok(startVm, { vm: "web" })
    expect((await h.fail(updateVm, { vm: "web", disk: "4G" })).code).toBe("already_running")
    h.hypervisor.running.clear()
    expect(await h.fail(updateVm, { vm: "web", disk: "1G" })).toMatchObject({ code: "disk_shrink", subject: "disk" })
    expect(await h.fail(updateVm, { vm: "web", disk: "1500M" })).toMatchObject({ code: "disk_shrink" })
    expect(h.hypervisor.disks.get(h.diskOf("web"))?.size).toBe(2 * 1024 ** 3)
    const result = await h.ok(updateVm, { vm: "web", disk: "4G" })
    expect(result).toMatchObject({ changed: ["disk"], applies_at: "now" })
    expect(result.vm.disk).toBe("4G")
    expect(h.hypervisor.disks.get(h.diskOf("web"))?.size).toBe(4 * 1024 ** 3)
  })

  it("a relative disk size is usage", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    expect((await h.fail(updateVm, { vm: "web", disk: "+1G" })).code).toBe("usage")
  })

  it("agent_access: MCP may lower it but not raise it (access_denied); the CLI may raise it", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" }) // manage
    const denied = await h.fail(updateVm, { vm: "web", agent_access: "exec" }, { caller: "mcp" })
    expect(denied).toMatchObject({ code: "access_denied", subject: "web" })
    expect((await h.ok(getVm, { vm: "web" })).agent_access).toBe("manage")
    expect((await h.ok(updateVm, { vm: "web", agent_access: "observe" }, { caller: "mcp" })).vm.agent_access).toBe(
      "observe"
    )
    expect((await h.ok(updateVm, { vm: "web", agent_access: "observe" }, { caller: "mcp" })).vm.agent_access).toBe(
      "observe"
    )
    expect((await h.fail(updateVm, { vm: "web", agent_access: "manage" }, { caller: "mcp" })).code).toBe(
      "access_denied"
    )
    const raised = await h.ok(updateVm, { vm: "web", agent_access: "exec" }, { caller: "cli" })
    expect(raised.vm).toMatchObject({ agent_access: "exec", allow_exec: true })
    expect((await h.ok(updateVm, { vm: "web", agent_access: "none" }, { caller: "mcp" })).vm).toMatchObject({
      agent_access: "none",
      allow_exec: false
    })
  })

  it("ssh_port taken by another VM's ssh port or forward is invalid_spec naming that VM", async () => {
    const h = harness()
    const a = await h.ok(createVm, { name: "alpha", image: "tiny" })
    await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(forwardPorts, { vm: "alpha", pairs: ["18080:80"] })
    const clash = await h.fail(updateVm, { vm: "web", ssh_port: a.ssh_port })
    expect(clash).toMatchObject({ code: "invalid_spec", subject: "ssh_port" })
    expect(clash.message).toContain('"alpha"')
    expect(clash.message).toMatch(/ssh port/)
    const forward = await h.fail(updateVm, { vm: "web", ssh_port: 18080 })
    expect(forward.message).toContain('"alpha"')
    expect(forward.message).toMatch(/forward/)
  })

  it("ssh_port below 1024 or above 65535 is usage", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    expect((await h.fail(updateVm, { vm: "web", ssh_port: 22 })).code).toBe("usage")
    expect((await h.fail(updateVm, { vm: "web", ssh_port: 65536 })).code).toBe("usage")
  })

  it("ram_mb below 256 and cpus 0 are usage; an unknown key is usage", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    expect((await h.fail(updateVm, { vm: "web", ram_mb: 128 })).code).toBe("usage")
    expect((await h.fail(updateVm, { vm: "web", cpus: 0 })).code).toBe("usage")
    expect((await h.fail(updateVm, { vm: "web", memory: 512 })).code).toBe("usage")
  })

  it("a broken VM answers broken; an unknown VM not_found", async () => {
    const h = harness()
    h.writeVmToml("junk", "[[[")
    expect((await h.fail(updateVm, { vm: "junk", ram_mb: 512 })).code).toBe("broken")
    expect((await h.fail(updateVm, { vm: "ghost", ram_mb: 512 })).code).toBe("not_found")
  })
})
