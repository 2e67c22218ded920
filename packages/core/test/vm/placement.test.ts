import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { createVm, getVm, listVms } from "../../src/operations/index.js"
import { hostOnlyFields } from "../../src/operations/operation.js"
import { FakeHypervisorState, makeFakeHypervisor } from "../../src/testing/index.js"
import { readPlacement, routeGuestSignals, routeHypervisor } from "../../src/vm/placement.js"
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
})
