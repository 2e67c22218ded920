import { createServer } from "node:net"
import { describe, expect, it, onTestFinished } from "vitest"
import { createVm, getVm, listVms, startVm, stopVm, waitVm } from "../../src/operations/index.js"
import { harness, type Harness } from "../harness.js"

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A hand-written tiny VM with recipes (so `until: applied` has something to wait for). */
const writeVmWithRecipes = (h: Harness, name: string, sshport: number) =>
  h.writeVmToml(
    name,
    `name = "${name}"\nmode = "disk"\nos = "tiny"\nimage = "tiny"\nbackend = "direct"\nram = 256\ncpus = 1\ndisk = "1G"\ninstalled = true\nsshport = ${sshport}\nrecipes = ["hello"]\n`
  )

describe("start", () => {
  it("starts a stopped VM with its ram, cpus and ssh port, and reports it running", async () => {
    const h = harness()
    const created = await h.ok(createVm, { name: "web", image: "tiny", ram_mb: 300, cpus: 2 })
    const vm = await h.ok(startVm, { vm: "web" })
    expect(vm.state).toBe("running")
    const plan = h.hypervisor.running.get(h.vmDir("web"))?.plan
    expect(plan).toMatchObject({ ramMb: 300, cpus: 2, sshPort: created.ssh_port, disk: "disk.qcow2" })
    expect((await h.ok(getVm, { vm: "web" })).state).toBe("running")
  })

  it("moves to a free ssh port, saved and announced, when another program took the VM's port since create", async () => {
    const h = harness()
    const created = await h.ok(createVm, { name: "web", image: "tiny" })
    const squatter = createServer()
    await new Promise<void>((resolve) => squatter.listen({ port: created.ssh_port, host: "127.0.0.1" }, resolve))
    onTestFinished(() => new Promise<void>((resolve) => squatter.close(() => resolve())))
    const lines: string[] = []
    const vm = await h.ok(
      startVm,
      { vm: "web" },
      { progress: (event) => event.type === "log" && lines.push(event.data.line) }
    )
    expect(vm.ssh_port).not.toBe(created.ssh_port)
    expect(h.hypervisor.running.get(h.vmDir("web"))?.plan.sshPort).toBe(vm.ssh_port)
    expect((await h.ok(getVm, { vm: "web" })).ssh_port).toBe(vm.ssh_port)
    expect(lines).toContain(`ssh port ${created.ssh_port} is taken on this host; VM "web" now uses port ${vm.ssh_port}`)
  })

  it("starts once more on a new ssh port when QEMU cannot bind the VM's (another data root took it after the look)", async () => {
    const h = harness()
    const created = await h.ok(createVm, { name: "web", image: "tiny" })
    const taken = created.ssh_port
    h.hypervisor.startError = (plan) =>
      plan.sshPort === taken ? { message: "Could not set up host forwarding rule", portInUse: taken } : undefined
    const vm = await h.ok(startVm, { vm: "web" })
    expect(vm.state).toBe("running")
    expect(vm.ssh_port).not.toBe(taken)
    // A forward of the user's that cannot bind is QEMU's refusal, not a reason to move anything.
    await h.ok(stopVm, { vm: "web" })
    h.hypervisor.startError = () => ({ message: "Could not set up host forwarding rule", portInUse: 8080 })
    expect((await h.fail(startVm, { vm: "web" })).code).toBe("qemu_start_failed")
    expect((await h.ok(getVm, { vm: "web" })).ssh_port).toBe(vm.ssh_port)
  })

  it("a start that fails after moving off a taken ssh port leaves vm.toml as it was", async () => {
    const h = harness()
    const created = await h.ok(createVm, { name: "web", image: "tiny" })
    const squatter = createServer()
    await new Promise<void>((resolve) => squatter.listen({ port: created.ssh_port, host: "127.0.0.1" }, resolve))
    onTestFinished(() => new Promise<void>((resolve) => squatter.close(() => resolve())))
    const before = h.readVmToml("web")
    h.hypervisor.startError = () => ({ message: 'Failed to get "write" lock' })
    expect((await h.fail(startVm, { vm: "web" })).code).toBe("qemu_start_failed")
    expect(h.readVmToml("web")).toBe(before)
    expect((await h.ok(getVm, { vm: "web" })).ssh_port).toBe(created.ssh_port)
  })

  it("an already running VM is fine and is not started twice", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(startVm, { vm: "web" })
    const again = await h.ok(startVm, { vm: "web" }, { caller: "mcp" })
    expect(again.state).toBe("running")
    expect(h.hypervisor.starts).toBe(1)
  })

  it("an unknown VM is not_found naming the closest one; a broken VM is broken", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    const missing = await h.fail(startVm, { vm: "wbe" })
    expect(missing).toMatchObject({ code: "not_found", subject: "wbe" })
    expect(missing.message).toContain('"web"')
    h.writeVmToml("junk", "not = [toml")
    expect((await h.fail(startVm, { vm: "junk" })).code).toBe("broken")
    expect(h.hypervisor.starts).toBe(0)
  })

  it("max_ram_mb counts the other running VMs and answers limit_reached with needed_mb and available_mb", async () => {
    const h = harness()
    h.writeConfig("[limits]\nmax_ram_mb = 600\n")
    await h.ok(createVm, { name: "a", image: "tiny", ram_mb: 256 })
    await h.ok(createVm, { name: "b", image: "tiny", ram_mb: 256 })
    await h.ok(createVm, { name: "c", image: "tiny", ram_mb: 300 })
    await h.ok(startVm, { vm: "a" })
    await h.ok(startVm, { vm: "b" })
    const error = await h.fail(startVm, { vm: "c" })
    expect(error).toMatchObject({ code: "limit_reached", subject: "c", needed_mb: 300, available_mb: 600 - 512 })
    expect(h.isRunning("c")).toBe(false)
    // A stopped VM does not count.
    await h.ok(stopVm, { vm: "a" })
    expect((await h.ok(startVm, { vm: "c" })).state).toBe("running")
  })

  it("the host-memory floor answers limit_reached for the CLI and for MCP", async () => {
    const h = harness({ memAvailableMb: 200 })
    await h.ok(createVm, { name: "web", image: "tiny", ram_mb: 256 })
    for (const caller of ["cli", "mcp"] as const) {
      const error = await h.fail(startVm, { vm: "web" }, { caller })
      expect(error).toMatchObject({ code: "limit_reached", needed_mb: 256, available_mb: 200 })
    }
    expect(h.hypervisor.starts).toBe(0)
  })

  it("the refusal tells a person about -y and an agent to ask a person", async () => {
    const h = harness({ memAvailableMb: 200 })
    await h.ok(createVm, { name: "web", image: "tiny" })
    expect((await h.fail(startVm, { vm: "web" }, { caller: "cli" })).message).toMatch(/-y/)
    expect((await h.fail(startVm, { vm: "web" }, { caller: "mcp" })).message).toMatch(/ask a person/)
  })

  it("force overrides the host-memory floor only for the CLI", async () => {
    const h = harness({ memAvailableMb: 200 })
    await h.ok(createVm, { name: "web", image: "tiny" })
    expect((await h.fail(startVm, { vm: "web", force: true }, { caller: "mcp" })).code).toBe("limit_reached")
    expect((await h.fail(startVm, { vm: "web", force: true }, { caller: "toolkit" })).code).toBe("limit_reached")
    expect(h.isRunning("web")).toBe(false)
    expect((await h.ok(startVm, { vm: "web", force: true }, { caller: "cli" })).state).toBe("running")
  })

  it("force never overrides the configured max_ram_mb", async () => {
    const h = harness()
    h.writeConfig("[limits]\nmax_ram_mb = 400\n")
    await h.ok(createVm, { name: "a", image: "tiny" })
    await h.ok(createVm, { name: "b", image: "tiny" })
    await h.ok(startVm, { vm: "a" })
    const error = await h.fail(startVm, { vm: "b", force: true }, { caller: "cli" })
    expect(error).toMatchObject({ code: "limit_reached", needed_mb: 256, available_mb: 144 })
  })

  it("wait: true waits until the guest's sshd answers on the VM's port", async () => {
    const h = harness()
    const vm = await h.ok(createVm, { name: "web", image: "tiny" })
    h.guest.unreachablePorts.add(vm.ssh_port)
    const pending = h.ok(startVm, { vm: "web", wait: true, timeout_seconds: 30 })
    // Until the port answers the call keeps probing (however slow the machine is to get there).
    const probes = () => h.guest.probes.filter((port) => port === vm.ssh_port).length
    for (let waited = 0; probes() < 2 && waited < 30_000; waited += 20) await sleep(20)
    expect(h.isRunning("web")).toBe(true)
    expect(probes()).toBeGreaterThanOrEqual(2)
    h.guest.unreachablePorts.delete(vm.ssh_port)
    expect((await pending).state).toBe("running")
  })

  it("wait: true bounded by timeout_seconds answers timeout while the VM keeps running", async () => {
    const h = harness()
    const vm = await h.ok(createVm, { name: "web", image: "tiny" })
    h.guest.unreachablePorts.add(vm.ssh_port)
    const error = await h.fail(startVm, { vm: "web", wait: true, timeout_seconds: 1 })
    expect(error).toMatchObject({ code: "timeout", subject: "web" })
    expect(h.isRunning("web")).toBe(true)
  })

  it("without wait it does not probe", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(startVm, { vm: "web" })
    expect(h.guest.probes).toEqual([])
  })

  it.each([
    [{ vm: "web", timeout_seconds: 0 }],
    [{ vm: "web", timeout_seconds: 601 }],
    [{ vm: "web", wait: "yes" }],
    [{ vm: "web", ram_mb: 512 }]
  ])("refuses %j with usage", async (input) => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    expect((await h.fail(startVm, input)).code).toBe("usage")
    expect(h.hypervisor.starts).toBe(0)
  })
})

describe("stop", () => {
  it("a stopped VM is fine", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    expect((await h.ok(stopVm, { vm: "web" })).state).toBe("stopped")
  })

  it("stops a running VM, drops its pooled connections, and status reads stopped", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(startVm, { vm: "web" })
    const vm = await h.ok(stopVm, { vm: "web" })
    expect(vm.state).toBe("stopped")
    expect(h.isRunning("web")).toBe(false)
    expect(h.guest.releases).toContain("web")
    expect((await h.ok(getVm, { vm: "web" })).state).toBe("stopped")
  })

  it("an unknown VM is not_found", async () => {
    const h = harness()
    expect((await h.fail(stopVm, { vm: "ghost" })).code).toBe("not_found")
  })

  it("stops a VM whose vm.toml broke while it ran; until then ls says its QEMU still runs", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(startVm, { vm: "web" })
    h.writeVmToml("web", "name = [broken")
    const [listed] = (await h.ok(listVms, {})).vms
    expect(listed).toMatchObject({ name: "web", state: "broken" })
    expect(listed?.error).toContain(
      'its QEMU still runs: stop it with vm.stop {"vm":"web"}, then fix vm.toml or delete it with vm.destroy {"vm":"web"}'
    )
    const stopped = await h.ok(stopVm, { vm: "web" })
    expect(stopped).toMatchObject({ name: "web", state: "broken" })
    expect(h.isRunning("web")).toBe(false)
    expect(h.guest.releases).toContain("web")
    expect((await h.ok(listVms, {})).vms[0]?.error).not.toContain("vm.stop")
  })
})

describe("wait", () => {
  it("until reachable (the default) answers once sshd does", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(startVm, { vm: "web" })
    const result = await h.ok(waitVm, { vm: "web" })
    expect(result).toMatchObject({ vm: "web", until: "reachable", reached: true })
    expect(result).not.toHaveProperty("healthy")
    expect(await h.ok(waitVm, { vm: "web", until: "reachable", timeout_seconds: 5 })).toMatchObject({
      until: "reachable",
      reached: true
    })
  })

  it("until reachable on a VM that is not running is cannot_reach at once, whatever the timeout", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    const started = Date.now()
    const error = await h.fail(waitVm, { vm: "web", until: "reachable", timeout_seconds: 600 })
    expect(error).toMatchObject({ code: "cannot_reach", subject: "web" })
    expect(Date.now() - started).toBeLessThan(2000)
  })

  it("until reachable fails cannot_reach when the VM stops while waiting", async () => {
    const h = harness()
    const vm = await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(startVm, { vm: "web" })
    h.guest.unreachablePorts.add(vm.ssh_port)
    const pending = h.fail(waitVm, { vm: "web", timeout_seconds: 30 })
    await sleep(300)
    h.hypervisor.running.clear()
    expect((await pending).code).toBe("cannot_reach")
  })

  it("answers timeout when sshd never comes up within timeout_seconds", async () => {
    const h = harness()
    const vm = await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(startVm, { vm: "web" })
    h.guest.unreachablePorts.add(vm.ssh_port)
    const started = Date.now()
    expect(await h.fail(waitVm, { vm: "web", timeout_seconds: 1 })).toMatchObject({ code: "timeout", subject: "web" })
    expect(Date.now() - started).toBeGreaterThanOrEqual(900)
  })

  it("until stopped: at once for a stopped VM, else when it stops", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    expect(await h.ok(waitVm, { vm: "web", until: "stopped" })).toMatchObject({ until: "stopped", reached: true })
    await h.ok(startVm, { vm: "web" })
    const pending = h.ok(waitVm, { vm: "web", until: "stopped", timeout_seconds: 30 })
    await sleep(400)
    h.hypervisor.running.clear()
    const result = await pending
    expect(result.reached).toBe(true)
    expect(result.waited_ms).toBeGreaterThanOrEqual(300)
  })

  it("until stopped answers timeout for a VM that keeps running", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(startVm, { vm: "web" })
    expect((await h.fail(waitVm, { vm: "web", until: "stopped", timeout_seconds: 1 })).code).toBe("timeout")
  })

  it("until applied: a VM without recipes is applied once reachable", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(startVm, { vm: "web" })
    expect(await h.ok(waitVm, { vm: "web", until: "applied", timeout_seconds: 5 })).toMatchObject({
      until: "applied",
      reached: true
    })
  })

  it("until applied keys off the apply log's final line: done, or FAILED → cannot_reach", async () => {
    const h = harness()
    writeVmWithRecipes(h, "web", 2999)
    await h.ok(startVm, { vm: "web" })
    h.writeVmFile("web", "last-provision.log", "waiting for ssh on port 2999…\n=== recipe hello ===\nhi\ndone\n")
    expect((await h.ok(waitVm, { vm: "web", until: "applied", timeout_seconds: 5 })).reached).toBe(true)
    h.writeVmFile("web", "last-provision.log", "=== recipe hello ===\nFAILED: hello exited 1\n")
    expect((await h.fail(waitVm, { vm: "web", until: "applied", timeout_seconds: 5 })).code).toBe("cannot_reach")
    h.writeVmFile("web", "last-provision.log", "=== recipe hello ===\nstill going\n")
    expect((await h.fail(waitVm, { vm: "web", until: "applied", timeout_seconds: 1 })).code).toBe("timeout")
  })

  it.each([[0], [601], [-5], [1.5], ["30s"]])("timeout_seconds %j is refused with usage", async (timeout_seconds) => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    const error = await h.fail(waitVm, { vm: "web", timeout_seconds })
    expect(error.code).toBe("usage")
    expect(error.message).toMatch(/timeout_seconds/)
  })

  it("timeout_seconds 1 and 600 are accepted", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(waitVm, { vm: "web", until: "stopped", timeout_seconds: 1 })
    await h.ok(waitVm, { vm: "web", until: "stopped", timeout_seconds: 600 })
  })

  it("an unknown until is usage", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    expect((await h.fail(waitVm, { vm: "web", until: "healthy" })).code).toBe("usage")
  })

  it("healthy together with until is invalid_spec", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(startVm, { vm: "web" })
    for (const until of ["reachable", "applied", "stopped"]) {
      expect((await h.fail(waitVm, { vm: "web", until, healthy: true })).code).toBe("invalid_spec")
    }
  })

  it("healthy alone reports healthy in the result", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(startVm, { vm: "web" })
    expect(await h.ok(waitVm, { vm: "web", healthy: true, timeout_seconds: 5 })).toMatchObject({
      reached: true,
      healthy: true
    })
  })
})
