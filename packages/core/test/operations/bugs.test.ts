/**
 * Regression tests for bugs these lifecycle tests found (each once an expected failure, now
 * fixed). Every test names the requirement it comes from.
 */
import { execFileSync } from "node:child_process"
import { existsSync, mkdirSync, readdirSync, statSync, symlinkSync, truncateSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Exit } from "effect"
import { describe, expect, it } from "vitest"
import {
  cloneVm,
  createVm,
  destroyVm,
  forwardPorts,
  getVm,
  listVms,
  prune,
  startVm,
  stoatLog,
  updateVm,
  vmLogs,
  waitVm
} from "../../src/operations/index.js"
import { toErrorInfo } from "../../src/errors.js"
import { harness } from "../harness.js"

describe("regressions of bugs found by these tests", () => {
  // stoat-original §1.1: isos recipes shared logs index guests mcp v2 are never VMs.
  it.each([["shared"], ["isos"], ["logs"], ["recipes"], ["guests"], ["mcp"], ["v2"], ["index"]])(
    "create refuses the reserved folder name %j with invalid_spec and writes nothing into it",
    async (name) => {
      const h = harness()
      const error = await h.fail(createVm, { name, image: "tiny" })
      expect(error.code).toBe("invalid_spec")
      const dir = join(h.root, name)
      const written = existsSync(dir)
        ? readdirSync(dir).filter((entry) => entry === "vm.toml" || entry === "disk.qcow2")
        : []
      expect(written).toEqual([])
    }
  )

  it("clone refuses a reserved folder name with invalid_spec", async () => {
    const h = harness()
    await h.ok(createVm, { name: "src", image: "tiny" })
    expect((await h.fail(cloneVm, { source: "src", name: "logs" })).code).toBe("invalid_spec")
  })

  // A folder without vm.toml is not a VM (§1.1), but it is somebody's folder: a create that fails must not delete it.
  it("a failed create never deletes a pre-existing folder of the same name", async () => {
    const h = harness()
    mkdirSync(join(h.root, "notes"))
    writeFileSync(join(h.root, "notes", "todo.txt"), "mine")
    h.hypervisor.createDiskError = "qemu-img: disk full"
    await h.fail(createVm, { name: "notes", image: "tiny" })
    expect(h.exists("notes", "todo.txt")).toBe(true)
  })

  // §1.8 / §8: the ssh port is validated like forwards, and a forward may not use the VM's own ssh port.
  it("update refuses an ssh_port equal to one of the VM's own forwards", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(forwardPorts, { vm: "web", pairs: ["18080:80"] })
    expect((await h.fail(updateVm, { vm: "web", ssh_port: 18080 })).code).toBe("invalid_spec")
  })

  // Deleting the folder of a running QEMU orphans the process; prune already skips running broken VMs (§8).
  it("destroy refuses a broken VM whose QEMU is still running", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(startVm, { vm: "web" })
    h.writeVmToml("web", "sshport = 2200\n[[[ corrupted while running\n")
    expect((await h.fail(destroyVm, { vm: "web" })).code).toBe("already_running")
  })

  // §8 snapshots: live VMs ⇒ no_disk; the same holds for a disk grow on a VM that has no disk.
  it("update disk on a live VM is no_disk, not internal", async () => {
    const h = harness()
    h.writeVmToml("live", 'mode = "live"\nos = "tiny"\nimage = "tiny"\nbackend = "direct"\nsshport = 2990\n')
    expect((await h.fail(updateVm, { vm: "live", disk: "20G" })).code).toBe("no_disk")
  })

  // mcp.md: "logs removes terminal escape sequences and carriage returns from the lines."
  it("logs removes OSC (window title) and two-character escape sequences too", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    h.writeVmFile(
      "web",
      "console.log",
      "\u001b]0;root@web: ~\u0007prompt\n\u001bcreset\n\u001b7saved\u001b8\n\u001b[>0cda2\n"
    )
    expect((await h.ok(vmLogs, { vm: "web" })).lines).toEqual(["prompt", "reset", "saved", "da2"])
  })

  // mcp.md: "log ... output sizes are capped by the server; the tool schema states the cap" (n ≤ 2000).
  it("logs n=0 does not bypass the 2000-line cap", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    h.writeVmFile("web", "console.log", Array.from({ length: 2500 }, (_, i) => `line ${i}`).join("\n"))
    expect((await h.ok(vmLogs, { vm: "web", n: 0 })).lines.length).toBeLessThanOrEqual(2000)
  })

  // mcp.md: "healthy=true waits for the applied recipes' health checks. The result has healthy only after a healthy=true wait."
  it("wait healthy=true does not report healthy for a VM whose recipe health failed", async () => {
    const h = harness()
    h.writeVmToml(
      "web",
      'name = "web"\nmode = "disk"\nos = "tiny"\nimage = "tiny"\nbackend = "direct"\nram = 256\ncpus = 1\ndisk = "1G"\ninstalled = true\nsshport = 2995\nrecipes = ["hello"]\n\n[applied.hello]\nversion = "1"\nhealth = "failed"\n'
    )
    await h.ok(startVm, { vm: "web" })
    h.writeVmFile("web", "last-provision.log", "=== recipe hello ===\ndone\n")
    const exit = await h.exit(waitVm, { vm: "web", healthy: true, timeout_seconds: 2 })
    if (exit._tag === "Success") expect(exit.value.healthy).not.toBe(true)
  })

  it("wait healthy=true waits for the recipes to be applied, not only for ssh", async () => {
    const h = harness()
    h.writeVmToml(
      "web",
      'name = "web"\nmode = "disk"\nos = "tiny"\nimage = "tiny"\nbackend = "direct"\nram = 256\ncpus = 1\ndisk = "1G"\ninstalled = true\nsshport = 2996\nrecipes = ["hello"]\n'
    )
    await h.ok(startVm, { vm: "web" })
    h.writeVmFile("web", "last-provision.log", "=== recipe hello ===\nstill running\n")
    expect((await h.fail(waitVm, { vm: "web", healthy: true, timeout_seconds: 1 })).code).toBe("timeout")
  })

  // §3.2 / §8: secrets go to secrets.toml (0600); an accepted field must not be dropped silently.
  it("update secrets is stored in secrets.toml (0600), not silently dropped", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(updateVm, { vm: "web", secrets: { hello: { token: "s3cret" } } })
    expect(statSync(join(h.root, "web", "secrets.toml")).mode & 0o777).toBe(0o600)
  })

  // mcp.md: "update refuses a recipe name that no recipe root declares, with the code not_found."
  it("update refuses a recipe no recipe root declares with not_found", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    expect((await h.fail(updateVm, { vm: "web", recipes: ["no-such-recipe"] })).code).toBe("not_found")
  })
})

describe("regressions of issue 7 §3", () => {
  // stoat-original §1.1: a vm.toml that will not parse is a broken VM, listed and deletable; one that is a folder is no different.
  it("a vm.toml that is a directory lists as broken and leaves create, prune and destroy working", async () => {
    const h = harness()
    mkdirSync(join(h.root, "odd", "vm.toml"), { recursive: true })
    const { vms } = await h.ok(listVms, {})
    expect(vms).toMatchObject([{ name: "odd", state: "broken" }])
    expect(vms[0]?.error).toMatch(/vm\.toml is a directory/)
    await h.ok(createVm, { name: "web", image: "tiny" })
    expect((await h.ok(prune, { broken: true })).items).toEqual([{ class: "broken_vm", path: h.vmDir("odd") }])
    expect(await h.ok(destroyVm, { vm: "odd" })).toEqual({ name: "odd", destroyed: true })
    expect(h.vmFolders()).toEqual(["web"])
  })

  // vm.toml is read synchronously on every listing: a special file there must fail fast, never stall it.
  it("a FIFO, a device link or a huge file as vm.toml lists as broken at once", async () => {
    const h = harness()
    mkdirSync(join(h.root, "fifo"))
    execFileSync("mkfifo", [join(h.root, "fifo", "vm.toml")])
    mkdirSync(join(h.root, "zero"))
    symlinkSync("/dev/zero", join(h.root, "zero", "vm.toml"))
    mkdirSync(join(h.root, "huge"))
    writeFileSync(join(h.root, "huge", "vm.toml"), "")
    truncateSync(join(h.root, "huge", "vm.toml"), 4 * 1024 * 1024 * 1024)
    await h.ok(createVm, { name: "web", image: "tiny" })
    const { vms } = await h.ok(listVms, {})
    expect(vms.map((vm) => [vm.name, vm.state])).toEqual([
      ["fifo", "broken"],
      ["huge", "broken"],
      ["web", "stopped"],
      ["zero", "broken"]
    ])
    expect(vms.find((vm) => vm.name === "fifo")?.error).toMatch(/not a regular file/)
    expect(vms.find((vm) => vm.name === "zero")?.error).toMatch(/not a regular file/)
    expect(vms.find((vm) => vm.name === "huge")?.error).toMatch(/larger than/)
    expect(await h.ok(getVm, { vm: "fifo" })).toMatchObject({
      state: "broken",
      error: "vm.toml cannot be read: not a regular file"
    })
  })

  it("prune --broken --apply removes a VM whose vm.toml is a directory", async () => {
    const h = harness()
    mkdirSync(join(h.root, "odd", "vm.toml"), { recursive: true })
    expect((await h.ok(prune, { broken: true, apply: true })).items.map((item) => item.class)).toEqual(["broken_vm"])
    expect(h.exists("odd")).toBe(false)
  })

  // §1.11: destroy runs under the data-root lock; the VM must be looked up there, or parallel deletes all "succeed".
  it("ten parallel destroys of one VM delete it once; the others answer not_found", async () => {
    const h = harness()
    await h.ok(createVm, { name: "v1", image: "tiny" })
    const exits = await Promise.all(Array.from({ length: 10 }, () => h.exit(destroyVm, { vm: "v1" })))
    expect(exits.filter(Exit.isSuccess)).toHaveLength(1)
    expect(
      exits.filter(Exit.isFailure).map((exit) => (Exit.isFailure(exit) ? toErrorInfo(exit.cause).code : ""))
    ).toEqual(Array(9).fill("not_found"))
  })

  // §1.2: an os naming an unknown guest is broken; update must not act on (and rewrite) a broken VM.
  it("update on a VM whose os names no guest is broken and writes nothing", async () => {
    const h = harness()
    const text =
      'name = "odd"\nmode = "disk"\nos = "nope"\nimage = "tiny"\nbackend = "direct"\nram = 256\ncpus = 1\ndisk = "1G"\nsshport = 2991\n'
    h.writeVmToml("odd", text)
    expect(await h.fail(updateVm, { vm: "odd", cpus: 2 })).toMatchObject({ code: "broken", subject: "odd" })
    expect(h.readVmToml("odd")).toBe(text)
    expect((await h.fail(startVm, { vm: "odd" })).code).toBe("broken")
  })

  it.each([["100"], ["8"], ["1K"], ["63M"], ["65T"], ["999999999999999999999G"]])(
    "create refuses the disk size %j as bad input (usage) naming the allowed range, and makes nothing",
    async (disk) => {
      const h = harness()
      const error = await h.fail(createVm, { name: "web", image: "tiny", disk })
      expect(error).toMatchObject({ code: "usage" })
      expect(error.message).toContain("disk must be 64M..64T")
      expect(h.vmFolders()).toEqual([])
    }
  )

  it("a unitless disk size is explained as bytes; update refuses out-of-range sizes too", async () => {
    const h = harness()
    expect((await h.fail(createVm, { name: "web", image: "tiny", disk: "8" })).message).toBe(
      "invalid input for create: disk must be 64M..64T, got 8 (8 bytes; give a unit: K, M, G or T)"
    )
    await h.ok(createVm, { name: "web", image: "tiny" })
    expect(await h.fail(updateVm, { vm: "web", disk: "100T" })).toMatchObject({
      code: "usage",
      message: "invalid input for update: disk must be 64M..64T, got 100T"
    })
  })

  it("create takes 64M and a lower-case unit (stored upper-case)", async () => {
    const h = harness()
    expect((await h.ok(createVm, { name: "small", image: "tiny", disk: "64M" })).disk).toBe("64M")
    expect(h.hypervisor.disks.get(h.diskOf("small"))?.size).toBe(64 * 1024 ** 2)
    expect((await h.ok(createVm, { name: "big", image: "tiny", disk: "2g" })).disk).toBe("2G")
  })

  it("a data-root lock that is a directory is invalid_spec naming the path, not internal", async () => {
    const h = harness()
    mkdirSync(join(h.root, ".lock"))
    const error = await h.fail(createVm, { name: "web", image: "tiny" })
    expect(error).toMatchObject({ code: "invalid_spec", subject: join(h.root, ".lock") })
    expect(error.message).toBe(
      `cannot use the lock file ${join(h.root, ".lock")}: it is a directory; remove it and stoat will recreate it`
    )
  })

  it("update with values the VM already has changes nothing and leaves vm.toml as it was", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny", cpus: 1 })
    const before = h.readVmToml("web")
    writeFileSync(join(h.root, "web", "vm.toml"), `# mine\n${before}`)
    const result = await h.ok(updateVm, { vm: "web", cpus: 1, ram_mb: 256, agent_access: "manage", disk: "1024M" })
    expect(result).toMatchObject({ changed: [], applies_at: "now", pending_restart: [] })
    expect(h.readVmToml("web")).toBe(`# mine\n${before}`)
    expect((await h.ok(updateVm, { vm: "web", cpus: 1, ram_mb: 512 })).changed).toEqual(["ram"])
  })

  it("out-of-range input names the field and the range, never schema internals", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    const error = await h.fail(updateVm, { vm: "web", cpus: 9999 })
    expect(error).toMatchObject({ code: "usage", message: "invalid input for update: cpus must be 1..255, got 9999" })
    expect((await h.fail(createVm, { name: "x", image: "tiny", ram_mb: 1.5 })).message).toBe(
      "invalid input for create: ram_mb must be an integer, got 1.5"
    )
    expect((await h.fail(createVm, { name: "x", image: "tiny", disk: "+8G" })).message).not.toMatch(
      /undefined|Expected/
    )
  })

  // stoat-original §2.2: `logs` with no VM shows stoat.log (CLI only: the MCP server leaves global logs out).
  it("stoatLog returns the last lines of logs/stoat.log", async () => {
    const h = harness()
    mkdirSync(join(h.root, "logs"))
    writeFileSync(join(h.root, "logs", "stoat.log"), "one\ntwo\nthree\n")
    expect(await h.ok(stoatLog, { n: 2 })).toEqual({ lines: ["two", "three"] })
    expect(stoatLog.expose.mcp).toBe(false)
  })
})
