import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { createVm, getVm, startVm } from "../../src/operations/index.js"
import { harness } from "../harness.js"

/** A cloud VM made from your own image file; the fake hypervisor knows the base's size. */
const cloudVm = async (h: ReturnType<typeof harness>) => {
  const base = join(h.root, "noble-server-cloudimg-amd64.img")
  writeFileSync(base, "")
  h.hypervisor.disks.set(base, { size: 2 * 1024 ** 3, snapshots: [] })
  const vm = await h.ok(createVm, { name: "cloudy", image_path: base }, { caller: "cli" })
  return { base, vm }
}

const cloudInit = (statuses: string[]) => {
  const calls: string[] = []
  return {
    calls,
    handler: (argv: ReadonlyArray<string>) => {
      if (argv[0] !== "cloud-init") return { exitCode: 127 }
      const status = statuses[Math.min(calls.length, statuses.length - 1)]!
      calls.push(status)
      return { exitCode: status === "error" ? 1 : 0, stdout: `status: ${status}\n` }
    }
  }
}

describe("cloud VMs", () => {
  it("without sshuser in vm.toml seed the account ssh logs in as and ls shows (root), not another one", async () => {
    const h = harness()
    await cloudVm(h)
    const vmToml = join(h.vmDir("cloudy"), "vm.toml")
    writeFileSync(vmToml, readFileSync(vmToml, "utf8").replace(/^sshuser = .*\n/m, ""))
    h.guest.execHandler = cloudInit(["done"]).handler
    await h.ok(startVm, { vm: "cloudy" })
    expect((await h.ok(getVm, { vm: "cloudy" })).ssh_user).toBe("root")
    expect(readFileSync(join(h.vmDir("cloudy"), "ovl", "seed", "user-data"), "utf8")).toContain('  - name: "root"')
  })

  it("are created without a disk, and get an overlay on the base plus a NoCloud seed at first start", async () => {
    const h = harness()
    const { base, vm } = await cloudVm(h)
    expect(vm).toMatchObject({ mode: "cloud", backend: "cloudinit", os: "ubuntu", ssh_user: "stoat", disk: "8G" })
    expect(h.exists("cloudy", "disk.qcow2")).toBe(false)
    const script = cloudInit(["done"])
    h.guest.execHandler = script.handler
    await h.ok(startVm, { vm: "cloudy" })
    expect(h.hypervisor.disks.get(h.diskOf("cloudy"))).toMatchObject({ backing: base, size: 8 * 1024 ** 3 })
    expect(existsSync(join(h.vmDir("cloudy"), "ovl", "seed.iso"))).toBe(true)
    expect(h.hypervisor.running.get(h.vmDir("cloudy"))?.plan.seedIso).toEqual({
      vm: { name: "cloudy", dir: h.vmDir("cloudy") },
      file: "ovl/seed.iso"
    })
  })

  it("are ready only when cloud-init reports done, not when ssh first answers", async () => {
    const h = harness()
    await cloudVm(h)
    const script = cloudInit(["running", "running", "done"])
    h.guest.execHandler = script.handler
    const started = await h.ok(startVm, { vm: "cloudy", wait: true, timeout_seconds: 30 })
    expect(started.state).toBe("running")
    expect(script.calls).toEqual(["running", "running", "done"])
  })

  it("fail with cannot_reach when cloud-init reports an error", async () => {
    const h = harness()
    await cloudVm(h)
    h.guest.execHandler = cloudInit(["error"]).handler
    const error = await h.fail(startVm, { vm: "cloudy", wait: true, timeout_seconds: 30 })
    expect(error.code).toBe("cannot_reach")
    expect(error.message).toMatch(/cloud-init failed/)
  })

  it("refuse an image that is not downloaded, naming the pull operation", async () => {
    const h = harness()
    const error = await h.fail(createVm, { name: "u", image: "ubuntu-24.04" })
    expect(error).toMatchObject({ code: "image_not_downloaded", subject: "ubuntu-24.04" })
    expect(error.message).toBe(
      'image ubuntu-24.04 is not downloaded; download it with image.pull {"id":"ubuntu-24.04"}'
    )
  })
})
