import { existsSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { CannotReach, checkHostAt } from "../../src/errors.js"
import {
  cloneVm,
  createVm,
  destroyVm,
  doctor,
  execInGuest,
  getVm,
  listJobs,
  listVms,
  startVm,
  updateVm
} from "../../src/operations/index.js"
import { hostOnlyFields } from "../../src/operations/operation.js"
import { sshArgv } from "../../src/operations/ssh.js"
import { FakeHypervisorState, makeFakeHypervisor } from "../../src/testing/index.js"
import { readPlacement, routeGuestSignals, routeHypervisor, sshJumpOf } from "../../src/vm/placement.js"
import { harness } from "../harness.js"

describe("a VM's provider", () => {
  it("create --provider libvirt --host writes both to vm.toml and the VM names them; a QEMU VM's vm.toml and record stay as they were", async () => {
    const h = harness()
    const remote = await h.ok(createVm, {
      name: "far",
      image: "tiny",
      provider: "libvirt",
      host: "qemu+ssh://root@127.0.0.1/system"
    })
    expect(remote).toMatchObject({ provider: "libvirt", host: "qemu+ssh://root@127.0.0.1/system" })
    expect(h.readVmToml("far")).toMatch(/provider = "libvirt"\nhost = "qemu\+ssh:\/\/root@127\.0\.0\.1\/system"/)
    expect(readPlacement(h.vmDir("far"))).toEqual({ provider: "libvirt", host: "qemu+ssh://root@127.0.0.1/system" })
    const local = await h.ok(createVm, { name: "near", image: "tiny", provider: "libvirt" })
    expect(local.provider).toBe("libvirt")
    expect(local.host).toBeUndefined()
    const plain = await h.ok(createVm, { name: "here", image: "tiny" })
    expect(plain.provider).toBeUndefined()
    expect(h.readVmToml("here")).not.toMatch(/host/)
    expect(readPlacement(h.vmDir("here"))).toEqual({ provider: "qemu", host: "" })
    expect((await h.ok(getVm, { vm: "far" })).host).toBe("qemu+ssh://root@127.0.0.1/system")
    expect((await h.ok(listVms, {})).vms.map((vm) => [vm.name, vm.provider ?? "qemu"])).toEqual([
      ["far", "libvirt"],
      ["here", "qemu"],
      ["near", "libvirt"]
    ])
  })

  it("a host without --provider libvirt, a provider no build has, or a host that is no libvirt URI is refused before anything is made", async () => {
    const h = harness()
    expect(await h.fail(createVm, { name: "a", image: "tiny", host: "qemu:///system" })).toMatchObject({
      code: "invalid_spec"
    })
    expect((await h.fail(createVm, { name: "b", image: "tiny", provider: "gce" })).code).toBe("usage")
    expect(
      (await h.fail(createVm, { name: "c", image: "tiny", provider: "libvirt", host: "ssh://x; rm -rf /" })).code
    ).toBe("usage")
    expect(h.vmFolders()).toEqual([])
  })

  it("the MCP server offers neither field: agents see VMs by name, people choose hosts", async () => {
    expect(hostOnlyFields(createVm.input)).toEqual(expect.arrayContaining(["provider", "host"]))
  })

  it("reads provider and host as TOML does: quoted or literal, a comment after, never a table's key; other spellings through the parser", () => {
    const h = harness()
    const placementOf = (text: string) => {
      h.writeVmToml("p", `sshport = 2200\n${text}`)
      return readPlacement(h.vmDir("p"))
    }
    expect(placementOf("")).toEqual({ provider: "qemu", host: "" })
    expect(placementOf("provider = \"libvirt\" # here\nhost = 'qemu+ssh://u@h/system'\n")).toEqual({
      provider: "libvirt",
      host: "qemu+ssh://u@h/system"
    })
    expect(placementOf('[params.x]\nprovider = "libvirt"\n')).toEqual({ provider: "qemu", host: "" })
    expect(placementOf('provider = "libvirt"\nhost = "qemu+ssh://u\\u0040h/system"\n')).toEqual({
      provider: "libvirt",
      host: "qemu+ssh://u@h/system"
    })
    expect(placementOf('provider = "libvirt"\n[[[broken')).toEqual({ provider: "libvirt", host: "" })
  })

  it("routes each call to the provider the VM's vm.toml names", async () => {
    const h = harness()
    await h.ok(createVm, { name: "lv", image: "tiny", provider: "libvirt" })
    await h.ok(createVm, { name: "qm", image: "tiny" })
    const qemu = new FakeHypervisorState()
    const libvirt = new FakeHypervisorState()
    const routed = routeHypervisor(makeFakeHypervisor(qemu), { libvirt: makeFakeHypervisor(libvirt) })
    const plan = (name: string) => ({
      vm: { name, dir: h.vmDir(name) },
      ramMb: 256,
      cpus: 1,
      sshPort: 2200,
      forwards: [],
      workShare: h.sharedDir(name),
      display: "vnc" as const
    })
    await Effect.runPromise(routed.start(plan("lv")))
    expect([libvirt.starts, qemu.starts]).toEqual([1, 0])
    await Effect.runPromise(routed.start(plan("qm")))
    expect([libvirt.starts, qemu.starts]).toEqual([1, 1])
    expect((await Effect.runPromise(routed.status({ name: "lv", dir: h.vmDir("lv") }))).running).toBe(true)
    await Effect.runPromise(routed.stop({ name: "lv", dir: h.vmDir("lv") }))
    expect(libvirt.running.has(h.vmDir("lv"))).toBe(false)
    expect(qemu.running.has(h.vmDir("qm"))).toBe(true)
    // Readiness signals too: libvirt's console is not QEMU's.
    const signals = routeGuestSignals(
      { awaitSshd: () => Effect.succeed(false) },
      { libvirt: { awaitSshd: () => Effect.succeed(true) } }
    )
    expect(await Effect.runPromise(signals.awaitSshd({ name: "lv", dir: h.vmDir("lv") }, 1000))).toBe(true)
    expect(await Effect.runPromise(signals.awaitSshd({ name: "qm", dir: h.vmDir("qm") }, 1000))).toBe(false)
  })

  it("a qemu+ssh:// host is the jump to its guests: user, port, keyfile and no_verify from the URI; no jump for local URIs", () => {
    expect(sshJumpOf("qemu+ssh://root@127.0.0.1:2222/system?keyfile=/k/client%20key&no_verify=1")).toEqual({
      host: "127.0.0.1",
      user: "root",
      port: 2222,
      identityFile: "/k/client key",
      noVerify: true
    })
    expect(sshJumpOf("qemu+ssh://build.example/system")).toEqual({ host: "build.example" })
    expect(sshJumpOf("qemu+ssh://me@[::1]/session")).toEqual({ host: "::1", user: "me" })
    for (const local of ["", "qemu:///system", "qemu+unix:///system?socket=/x", "qemu+tcp://h/system"])
      expect(sshJumpOf(local)).toBeUndefined()
  })

  it("stoat ssh reaches a VM of a qemu+ssh:// host through it (ProxyCommand of ssh -W), a local VM directly", () => {
    const target = { port: 2201, user: "root", privateKeyPath: "/k/id" }
    expect(sshArgv(target, false).join(" ")).not.toMatch(/ProxyCommand/)
    const argv = sshArgv(
      { ...target, jump: { host: "box", user: "ops", port: 2022, identityFile: "/k/my key" } },
      false
    )
    expect(argv).toContain(
      "ProxyCommand=ssh -W %h:%p -o BatchMode=yes -o ConnectTimeout=10 -o LogLevel=ERROR -p 2022 -l ops -i '/k/my key' -- box"
    )
    expect(argv.at(-1)).toBe("root@127.0.0.1")
  })

  it("a VM whose host does not answer is broken with the reason and doctor --host, never stopped; exec answers cannot_reach", async () => {
    const h = harness()
    const host = "qemu+ssh://root@far.example/system"
    await h.ok(createVm, { name: "far", image: "tiny", provider: "libvirt", host, agent_access: "exec" })
    h.hypervisor.unreachable.set(
      h.vmDir("far"),
      new CannotReach({ message: `libvirt host ${host} is unreachable`, subject: host, hint: checkHostAt(host) })
    )
    const [listed] = (await h.ok(listVms, {})).vms
    expect(listed).toMatchObject({ name: "far", state: "broken", provider: "libvirt", host, ram_mb: 256 })
    expect(listed?.error).toMatch(
      /^libvirt host qemu\+ssh:\/\/root@far\.example\/system is unreachable; check it with host\.doctor \{"host":"qemu\+ssh:\/\/root@far\.example\/system"\}$/
    )
    expect((await h.ok(getVm, { vm: "far" })).state).toBe("broken")
    expect(await h.fail(execInGuest, { vm: "far", argv: ["true"] })).toMatchObject({ code: "cannot_reach" })
  })

  it("a VM whose host does not answer is never taken for stopped: rm, clone and update refuse with cannot_reach and lose nothing (rm --force deletes it); job lists and the RAM limit still work", async () => {
    const h = harness()
    const host = "qemu+ssh://root@far.example/system"
    await h.ok(createVm, { name: "far", image: "tiny", provider: "libvirt", host, ram_mb: 512 })
    await h.ok(createVm, { name: "near", image: "tiny", ram_mb: 256 })
    h.hypervisor.unreachable.set(
      h.vmDir("far"),
      new CannotReach({ message: `libvirt host ${host} is unreachable`, subject: host, hint: checkHostAt(host) })
    )
    const refused = await h.fail(destroyVm, { vm: "far" })
    expect(refused).toMatchObject({ code: "cannot_reach", subject: "far" })
    expect(refused.message).toMatch(
      /^VM "far" was not deleted: it may still run on a host that did not answer \(libvirt host/
    )
    expect(existsSync(join(h.vmDir("far"), "vm.toml"))).toBe(true)
    expect((await h.fail(cloneVm, { source: "far", name: "copy" })).code).toBe("cannot_reach")
    expect(existsSync(h.vmDir("copy"))).toBe(false)
    expect((await h.fail(updateVm, { vm: "far", disk: "8G" })).code).toBe("cannot_reach")
    expect(await h.ok(listJobs, { vm: "far" })).toMatchObject({ jobs: [] })
    // Its 512 MiB may be in use on that host: a 600 MiB limit leaves "near" 88.
    h.writeConfig("[limits]\nmax_ram_mb = 600\n")
    expect(await h.fail(startVm, { vm: "near" })).toMatchObject({ code: "limit_reached", available_mb: 88 })
    // A host gone for good: a person deletes the VM anyway.
    await h.ok(destroyVm, { vm: "far", force: true })
    expect(existsSync(h.vmDir("far"))).toBe(false)
  })

  it("doctor --host is a person's: the MCP tool has no host field, and a stack without a provider of hosts answers capability_unavailable", async () => {
    expect(hostOnlyFields(doctor.input)).toEqual(["host"])
    const h = harness()
    expect(await h.fail(doctor, { host: "qemu+ssh://root@far.example/system" })).toMatchObject({
      code: "capability_unavailable",
      reason: "provider_unsupported"
    })
    expect((await h.fail(doctor, { host: "ssh://x; rm -rf /" })).code).toBe("usage")
  })
})
