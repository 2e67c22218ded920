import { existsSync, readdirSync, readFileSync, utimesSync, writeFileSync, mkdirSync } from "node:fs"
import { join } from "node:path"
import { Effect, Fiber } from "effect"
import { describe, expect, it } from "vitest"
import {
  capabilities,
  cloneVm,
  createVm,
  deleteCheckpoint,
  deleteSnapshot,
  destroyVm,
  forkCheckpoint,
  getVm,
  listCheckpoints,
  listSnapshots,
  prune,
  restoreSnapshot,
  saveSnapshot,
  startVm,
  stopVm,
  takeCheckpoint
} from "../../src/operations/index.js"
import { runOperation } from "../../src/operations/run.js"
import { defaultExecHandler } from "../../src/testing/index.js"
import { clockArgs } from "../../src/checkpoints/guest.js"
import { harness, type Harness } from "../harness.js"

interface GuestScript {
  /** 9p mounts the guest has (tag, mount point, options). */
  mounts?: Array<{ tag: string; dir: string; options: string }>
  /** A mount point whose unmount fails (a process has files open there). */
  busy?: string
}

/** A guest that answers stoat's checkpoint scripts (told apart by `$0`) and records what they were asked. */
const scriptGuest = (h: Harness, script: GuestScript = {}) => {
  const calls: Array<{ vm: string; script: string; args: ReadonlyArray<string> }> = []
  const mounts = script.mounts ?? [{ tag: "work", dir: "/mnt/work", options: "rw,relatime,trans=virtio" }]
  h.guest.execHandler = (argv, context) => {
    const name = argv[0] === "sh" && argv[1] === "-c" ? argv[3] : undefined
    if (name === undefined || !name.startsWith("stoat-")) return defaultExecHandler(argv, context)
    calls.push({ vm: context.target.vm, script: name, args: argv.slice(4) })
    if (name === "stoat-unmount-shares") {
      if (script.busy !== undefined) return { exitCode: 3, stderr: `${script.busy}\n` }
      return { exitCode: 0, stdout: mounts.map((mount) => `${mount.tag}\t${mount.dir}\t${mount.options}\n`).join("") }
    }
    if (name === "stoat-fork-identity") context.fs.writeText("/etc/hostname", `${argv[4]}\n`)
    return { exitCode: 0 }
  }
  return calls
}

const runningVm = async (h: Harness, name = "src") => {
  await h.ok(createVm, { name, image: "tiny" })
  await h.ok(startVm, { vm: name })
}

const checkpointFolder = (h: Harness, vm: string, name: string) => join(h.vmDir(vm), "checkpoints", name)
const checkpointEntries = (h: Harness, vm: string) =>
  existsSync(join(h.vmDir(vm), "checkpoints")) ? readdirSync(join(h.vmDir(vm), "checkpoints")).sort() : []

describe("checkpoint", () => {
  it("runs its guest scripts as root through the guest's escalate; a guest with none is capability_unavailable, never a guessed sudo", async () => {
    const h = harness()
    const calls = scriptGuest(h)
    await h.ok(createVm, { name: "src", image: "tiny" })
    const vmToml = join(h.vmDir("src"), "vm.toml")
    writeFileSync(vmToml, readFileSync(vmToml, "utf8").replace(/^sshuser = .*$/m, 'sshuser = "guest"'))
    await h.ok(startVm, { vm: "src" })
    expect(await h.fail(takeCheckpoint, { vm: "src", name: "ready" })).toMatchObject({
      code: "capability_unavailable",
      reason: "escalate",
      subject: "src"
    })
    expect(calls).toEqual([])
    expect(h.guest.execs.filter((exec) => exec.argv[0] === "sudo")).toEqual([])
  })

  it("saves a running VM: the VM runs on over a new overlay whose backing is the frozen disk, its shares unmounted and mounted again", async () => {
    const h = harness()
    const calls = scriptGuest(h)
    await runningVm(h)
    const result = await h.ok(takeCheckpoint, { vm: "src", name: "ready" })
    expect(result.checkpoint).toMatchObject({
      vm: "src",
      name: "ready",
      ram_mb: 256,
      cpus: 1,
      paused_ms: 120,
      dependents: [],
      usable: true
    })
    expect(result.remounted).toEqual(["/mnt/work"])
    expect(h.isRunning("src")).toBe(true)
    const top = readFileSync(join(h.vmDir("src"), "disk.top"), "utf8").trim()
    expect(top).toMatch(/^layers\/.+\.qcow2$/)
    expect(h.hypervisor.disks.get(join(h.vmDir("src"), top))?.backing).toBe(h.diskOf("src"))
    const saved = JSON.parse(readFileSync(join(checkpointFolder(h, "src", "ready"), "checkpoint.json"), "utf8"))
    expect(saved).toMatchObject({
      vm: "src",
      name: "ready",
      layer: h.diskOf("src"),
      mounts: [{ tag: "work", dir: "/mnt/work" }]
    })
    expect(calls.map((call) => call.script)).toEqual(["stoat-unmount-shares", "stoat-mount-shares"])
    expect(calls[1]?.args).toEqual(["work", "/mnt/work", "rw,relatime,trans=virtio"])
    expect(checkpointEntries(h, "src")).toEqual(["ready"])
  })

  it("a second checkpoint freezes the overlay the first one made, so the chain grows and nothing moves", async () => {
    const h = harness()
    scriptGuest(h)
    await runningVm(h)
    await h.ok(takeCheckpoint, { vm: "src", name: "one" })
    const firstTop = join(h.vmDir("src"), readFileSync(join(h.vmDir("src"), "disk.top"), "utf8").trim())
    await h.ok(takeCheckpoint, { vm: "src", name: "two" })
    const second = JSON.parse(readFileSync(join(checkpointFolder(h, "src", "two"), "checkpoint.json"), "utf8"))
    expect(second.layer).toBe(firstTop)
    expect(
      (await h.ok(listCheckpoints, { vm: "src" })).checkpoints.map((checkpoint) => [checkpoint.name, checkpoint.usable])
    ).toEqual([
      ["one", true],
      ["two", true]
    ])
  })

  it("refuses what it cannot do, with typed errors, and leaves nothing behind", async () => {
    const h = harness()
    scriptGuest(h)
    await h.ok(createVm, { name: "src", image: "tiny" })
    expect(await h.fail(takeCheckpoint, { vm: "src", name: "x" })).toMatchObject({
      code: "not_running",
      subject: "src"
    })
    expect((await h.fail(takeCheckpoint, { vm: "ghost", name: "x" })).code).toBe("not_found")
    await h.ok(startVm, { vm: "src" })
    for (const name of [
      "-x",
      "--help",
      "a/b",
      "..",
      ".hidden",
      "$(reboot)",
      "a b",
      "x\u0000y",
      "'q'",
      "x".repeat(65),
      ""
    ]) {
      expect((await h.fail(takeCheckpoint, { vm: "src", name })).code, name).toBe("usage")
    }
    await h.ok(takeCheckpoint, { vm: "src", name: "x" })
    expect(await h.fail(takeCheckpoint, { vm: "src", name: "x" })).toMatchObject({ code: "name_taken", subject: "x" })
    expect(checkpointEntries(h, "src")).toEqual(["x"])
  })

  it("a share in use in the guest is capability_unavailable naming it; no checkpoint, no disk switch", async () => {
    const h = harness()
    const calls = scriptGuest(h, { busy: "/mnt/work" })
    await runningVm(h)
    const error = await h.fail(takeCheckpoint, { vm: "src", name: "x" })
    expect(error).toMatchObject({ code: "capability_unavailable", subject: "/mnt/work", reason: "share_in_use" })
    expect(error.message).toContain("/mnt/work")
    expect(checkpointEntries(h, "src")).toEqual([])
    expect(existsSync(join(h.vmDir("src"), "disk.top"))).toBe(false)
    expect(calls.map((call) => call.script)).toEqual(["stoat-unmount-shares"])
  })

  it("a hypervisor that refuses leaves no checkpoint folder and mounts the shares again", async () => {
    const h = harness()
    const calls = scriptGuest(h)
    await runningVm(h)
    h.hypervisor.migrationBlocker = "a device cannot be migrated"
    expect(await h.fail(takeCheckpoint, { vm: "src", name: "x" })).toMatchObject({
      code: "capability_unavailable",
      reason: "migration_blocked"
    })
    expect(checkpointEntries(h, "src")).toEqual([])
    expect(calls.map((call) => call.script)).toEqual(["stoat-unmount-shares", "stoat-mount-shares"])
    expect((await h.ok(listCheckpoints, { vm: "src" })).checkpoints).toEqual([])
  })

  it("two checkpoints of one VM under one name at once: one is taken, the other is name_taken", async () => {
    const h = harness()
    scriptGuest(h)
    await runningVm(h)
    const outcomes = await Promise.all([
      h.exit(takeCheckpoint, { vm: "src", name: "same" }),
      h.exit(takeCheckpoint, { vm: "src", name: "same" })
    ])
    expect(outcomes.filter((exit) => exit._tag === "Success")).toHaveLength(1)
    expect(checkpointEntries(h, "src")).toEqual(["same"])
  })
})

describe("fork", () => {
  const prepared = async () => {
    const h = harness()
    const calls = scriptGuest(h)
    await runningVm(h)
    await h.ok(takeCheckpoint, { vm: "src", name: "ready" })
    return { h, calls }
  }

  it("starts a warm VM from the checkpoint: an overlay on the frozen disk, its own port, hostname and shares", async () => {
    const { h, calls } = await prepared()
    const result = await h.ok(forkCheckpoint, { vm: "src", checkpoint: "ready", name: "try" })
    expect(result).toMatchObject({ source: "src", checkpoint: "ready" })
    expect(result.forks.map((fork) => fork.vm.name)).toEqual(["try"])
    const vm = result.forks[0]!.vm
    expect(vm).toMatchObject({ name: "try", state: "running", ram_mb: 256, forwards: [] })
    expect(vm.ssh_port).not.toBe((await h.ok(getVm, { vm: "src" })).ssh_port)
    expect(h.hypervisor.resumedFrom.get(h.vmDir("try"))).toBe(checkpointFolder(h, "src", "ready"))
    expect(h.hypervisor.disks.get(h.diskOf("try"))?.backing).toBe(h.diskOf("src"))
    expect(h.hypervisor.running.get(h.vmDir("try"))?.plan).toMatchObject({
      sshPort: vm.ssh_port,
      workShare: h.sharedDir("try"),
      disk: "disk.qcow2"
    })
    const identity = calls.find((call) => call.script === "stoat-fork-identity")
    expect(identity).toMatchObject({ vm: "try" })
    expect(identity?.args[0]).toBe("try")
    expect(identity?.args[1]).toMatch(/^[0-9a-f]{32}$/)
    expect(identity?.args.slice(2)).toEqual(["work", "/mnt/work", "rw,relatime,trans=virtio"])
    // Then its clock, on the connection the identity step opened.
    const clock = calls.filter((call) => call.vm === "try").map((call) => call.script)
    expect(clock).toEqual(["stoat-fork-identity", "stoat-set-clock"])
    expect(calls.find((call) => call.script === "stoat-set-clock")?.args).toHaveLength(2)
    expect(h.guest.fs("try").readText("/etc/hostname")).toBe("try\n")
    expect((await h.ok(listCheckpoints, {})).checkpoints[0]?.dependents).toEqual(["try"])
  })

  it("count=3 makes name-1..3 with distinct ports, each with its own machine id", async () => {
    const { h, calls } = await prepared()
    const result = await h.ok(forkCheckpoint, { vm: "src", checkpoint: "ready", name: "w", count: 3 })
    expect(result.forks.map((fork) => fork.vm.name)).toEqual(["w-1", "w-2", "w-3"])
    expect(new Set(result.forks.map((fork) => fork.vm.ssh_port)).size).toBe(3)
    expect(result.forks.every((fork) => fork.vm.state === "running")).toBe(true)
    const ids = calls.filter((call) => call.script === "stoat-fork-identity").map((call) => call.args[1])
    expect(new Set(ids).size).toBe(3)
    expect((await h.ok(listCheckpoints, { vm: "src" })).checkpoints[0]?.dependents).toEqual(["w-1", "w-2", "w-3"])
  })

  it("count outside 1..16 and bad names are refused before anything is made", async () => {
    const { h } = await prepared()
    for (const count of [0, 17, -1, 1.5])
      expect((await h.fail(forkCheckpoint, { vm: "src", checkpoint: "ready", name: "w", count })).code).toBe("usage")
    for (const name of ["-rf", "a/b", "nul", "$(x)"])
      expect((await h.fail(forkCheckpoint, { vm: "src", checkpoint: "ready", name })).code).toBe("invalid_spec")
    expect(await h.fail(forkCheckpoint, { vm: "src", checkpoint: "nope", name: "w" })).toMatchObject({
      code: "not_found",
      subject: "nope"
    })
    expect((await h.fail(forkCheckpoint, { vm: "src", checkpoint: "nope", name: "w" })).message).toContain("ready")
    expect(h.vmFolders()).toEqual(["src"])
  })

  it("a taken name or max_vms refuses the whole call; nothing is made", async () => {
    const { h } = await prepared()
    await h.ok(createVm, { name: "w-2", image: "tiny" })
    expect(await h.fail(forkCheckpoint, { vm: "src", checkpoint: "ready", name: "w", count: 3 })).toMatchObject({
      code: "name_taken",
      subject: "w-2"
    })
    h.writeConfig("[limits]\nmax_vms = 4\n")
    expect((await h.fail(forkCheckpoint, { vm: "src", checkpoint: "ready", name: "z", count: 3 })).code).toBe(
      "limit_reached"
    )
    expect(h.vmFolders()).toEqual(["src", "w-2"])
  })

  it("forks that need more memory than the host has, or than max_ram_mb leaves, are limit_reached; nothing is made", async () => {
    const { h } = await prepared()
    h.memAvailableMb = 700
    const short = await h.fail(forkCheckpoint, { vm: "src", checkpoint: "ready", name: "w", count: 3 })
    expect(short).toMatchObject({ code: "limit_reached", needed_mb: 768, available_mb: 700 })
    h.memAvailableMb = 16_384
    h.writeConfig("[limits]\nmax_ram_mb = 512\n")
    expect(await h.fail(forkCheckpoint, { vm: "src", checkpoint: "ready", name: "w", count: 2 })).toMatchObject({
      code: "limit_reached",
      available_mb: 256
    })
    expect(h.vmFolders()).toEqual(["src"])
    await h.ok(forkCheckpoint, { vm: "src", checkpoint: "ready", name: "one" })
  })

  it("a fork whose QEMU fails to start takes its siblings with it: no folder, no process", async () => {
    const { h } = await prepared()
    h.hypervisor.resumeError = "QEMU failed to start: could not set up host forwarding rule"
    expect(await h.fail(forkCheckpoint, { vm: "src", checkpoint: "ready", name: "w", count: 3 })).toMatchObject({
      code: "qemu_start_failed"
    })
    expect(h.vmFolders()).toEqual(["src"])
    expect(existsSync(join(h.root, "shared", "w-1"))).toBe(false)
    expect([...h.hypervisor.running.keys()]).toEqual([h.vmDir("src")])
  })

  it("a fork whose guest never answers ssh is stopped and removed (timeout)", async () => {
    const { h } = await prepared()
    // The first port a fork gets is the next free one; hold every likely one down.
    for (let port = 2200; port < 2400; port++) h.guest.unreachablePorts.add(port)
    h.guest.unreachablePorts.delete((await h.ok(getVm, { vm: "src" })).ssh_port)
    expect(
      await h.fail(forkCheckpoint, { vm: "src", checkpoint: "ready", name: "w", timeout_seconds: 1 })
    ).toMatchObject({ code: "timeout", subject: "w" })
    expect(h.vmFolders()).toEqual(["src"])
    expect([...h.hypervisor.running.keys()]).toEqual([h.vmDir("src")])
  })

  it("interrupted part way (Ctrl-C), it removes every fork it made", async () => {
    const { h } = await prepared()
    h.hypervisor.resumeGate = new Promise(() => undefined)
    const fiber = Effect.runFork(
      Effect.provide(
        runOperation(forkCheckpoint, { vm: "src", checkpoint: "ready", name: "w", count: 2 }, { requestId: "t" }),
        h.layer()
      ) as Effect.Effect<unknown, unknown, never>
    )
    for (let i = 0; i < 200 && h.vmFolders().length < 3; i++) await new Promise((resolve) => setTimeout(resolve, 20))
    expect(h.vmFolders()).toEqual(["src", "w-1", "w-2"])
    await Effect.runPromise(Fiber.interrupt(fiber))
    expect(h.vmFolders()).toEqual(["src"])
  })

  it("a checkpoint whose disk layer or state changed or vanished is refused as broken, and listed as unusable", async () => {
    const { h } = await prepared()
    const layer = h.diskOf("src")
    writeFileSync(layer, "changed")
    const listed = (await h.ok(listCheckpoints, { vm: "src" })).checkpoints[0]
    expect(listed).toMatchObject({ usable: false })
    expect(listed?.problem).toContain("changed")
    const error = await h.fail(forkCheckpoint, { vm: "src", checkpoint: "ready", name: "w" })
    expect(error).toMatchObject({ code: "broken", subject: "src@ready" })
    expect(error.message).toContain(layer)
    await h.ok(takeCheckpoint, { vm: "src", name: "later" })
    writeFileSync(join(checkpointFolder(h, "src", "later"), "state"), "truncated")
    expect((await h.fail(forkCheckpoint, { vm: "src", checkpoint: "later", name: "w" })).message).toContain(
      "saved state"
    )
    expect(h.vmFolders()).toEqual(["src"])
  })

  it("a fork is an ordinary VM: it stops, starts cold from its own overlay, clones and is destroyed", async () => {
    const { h } = await prepared()
    await h.ok(forkCheckpoint, { vm: "src", checkpoint: "ready", name: "try" })
    await h.ok(stopVm, { vm: "try" })
    const starts = h.hypervisor.starts
    await h.ok(startVm, { vm: "try" })
    expect(h.hypervisor.starts).toBe(starts + 1)
    expect(h.hypervisor.running.get(h.vmDir("try"))?.plan.disk).toBe("disk.qcow2")
    await h.ok(stopVm, { vm: "try" })
    await h.ok(cloneVm, { source: "try", name: "copy" })
    expect(h.hypervisor.disks.get(h.diskOf("copy"))?.backing).toBe(h.diskOf("try"))
    await h.ok(destroyVm, { vm: "copy" })
    await h.ok(destroyVm, { vm: "try" })
    expect(h.vmFolders()).toEqual(["src"])
  })
})

describe("snapshots across checkpoints", () => {
  const tags = async (h: Harness, vm = "src") =>
    (await h.ok(listSnapshots, { vm })).snapshots.map((snapshot) => snapshot.tag)
  const topOf = (h: Harness, vm = "src") =>
    join(h.vmDir(vm), readFileSync(join(h.vmDir(vm), "disk.top"), "utf8").trim())

  it("a snapshot taken before a checkpoint stays listed; new ones go into the top and hide a frozen one of the same tag", async () => {
    const h = harness()
    scriptGuest(h)
    await runningVm(h)
    await h.ok(saveSnapshot, { vm: "src", tag: "before-ck" })
    await h.ok(takeCheckpoint, { vm: "src", name: "ready" })
    expect(await tags(h)).toEqual(["before-ck"])
    await h.ok(saveSnapshot, { vm: "src", tag: "after-ck" })
    await h.ok(saveSnapshot, { vm: "src", tag: "before-ck" })
    expect(await tags(h)).toEqual(["after-ck", "before-ck"])
    expect(h.hypervisor.disks.get(h.diskOf("src"))?.snapshots.map((snapshot) => snapshot.tag)).toEqual(["before-ck"])
  })

  it("restoring a frozen snapshot puts a new top over the old one and changes no frozen file; deleting one is in_use", async () => {
    const h = harness()
    scriptGuest(h)
    await runningVm(h)
    await h.ok(saveSnapshot, { vm: "src", tag: "before-ck" })
    await h.ok(takeCheckpoint, { vm: "src", name: "ready" })
    await h.ok(saveSnapshot, { vm: "src", tag: "after-ck" })
    await h.ok(forkCheckpoint, { vm: "src", checkpoint: "ready", name: "try" })
    await h.ok(stopVm, { vm: "src" })
    const oldTop = topOf(h)
    const restored = await h.ok(restoreSnapshot, { vm: "src", tag: "before-ck" })
    expect(restored.snapshots.map((snapshot) => snapshot.tag)).toEqual(["before-ck", "after-ck"])
    expect(topOf(h)).not.toBe(oldTop)
    expect(h.hypervisor.disks.get(topOf(h))?.backing).toBe(oldTop)
    expect(h.hypervisor.disks.get(h.diskOf("try"))?.backing).toBe(h.diskOf("src"))
    expect((await h.ok(listCheckpoints, { vm: "src" })).checkpoints[0]).toMatchObject({
      usable: true,
      dependents: ["try"]
    })
    expect(await h.fail(deleteSnapshot, { vm: "src", tag: "before-ck" })).toMatchObject({ code: "in_use" })
    expect(await tags(h)).toEqual(["before-ck", "after-ck"])
  })
})

describe("fork clock", () => {
  it("passes the host's time to the millisecond and rounded to whole seconds", () => {
    expect(clockArgs(1_700_000_000_042)).toEqual(["1700000000.042", "1700000000"])
    expect(clockArgs(1_700_000_000_600)).toEqual(["1700000000.600", "1700000001"])
  })
})

describe("deleting checkpoints and their sources", () => {
  it("delete_checkpoint removes the state; forks keep their disk; an unknown name is not_found listing the others", async () => {
    const h = harness()
    scriptGuest(h)
    await runningVm(h)
    await h.ok(takeCheckpoint, { vm: "src", name: "a" })
    await h.ok(takeCheckpoint, { vm: "src", name: "b" })
    await h.ok(forkCheckpoint, { vm: "src", checkpoint: "a", name: "f" })
    expect(await h.ok(deleteCheckpoint, { vm: "src", name: "a" })).toEqual({ vm: "src", name: "a", deleted: true })
    expect(checkpointEntries(h, "src")).toEqual(["b"])
    expect(existsSync(h.diskOf("src"))).toBe(true)
    const missing = await h.fail(deleteCheckpoint, { vm: "src", name: "a" })
    expect(missing).toMatchObject({ code: "not_found", subject: "a" })
    expect(missing.message).toContain("b")
    expect((await h.fail(deleteCheckpoint, { vm: "src", name: "../src" })).code).toBe("usage")
  })

  it("destroying a VM with checkpoints or forks needs detach_dependents, names them, and refuses while a dependent runs", async () => {
    const h = harness()
    scriptGuest(h)
    await runningVm(h)
    await h.ok(takeCheckpoint, { vm: "src", name: "ready" })
    await h.ok(forkCheckpoint, { vm: "src", checkpoint: "ready", name: "f", count: 2 })
    await h.ok(stopVm, { vm: "src" })
    const asked = await h.fail(destroyVm, { vm: "src" })
    expect(asked).toMatchObject({ code: "confirmation_required", subject: "src" })
    expect(asked.message).toContain("ready")
    expect(asked.message).toContain("f-1 (running)")
    expect(asked.message).toContain("f-2 (running)")
    expect(await h.fail(destroyVm, { vm: "src", detach_dependents: true })).toMatchObject({ code: "in_use" })
    expect(h.vmFolders()).toEqual(["f-1", "f-2", "src"])
    await h.ok(stopVm, { vm: "f-1" })
    await h.ok(stopVm, { vm: "f-2" })
    expect(await h.ok(destroyVm, { vm: "src", detach_dependents: true })).toEqual({ name: "src", destroyed: true })
    expect(h.hypervisor.rebased.map((entry) => entry.path).sort()).toEqual([h.diskOf("f-1"), h.diskOf("f-2")])
    expect(h.hypervisor.rebased.every((entry) => entry.backing === undefined)).toBe(true)
    expect(h.vmFolders()).toEqual(["f-1", "f-2"])
  })

  it("a VM without checkpoints or dependents is destroyed as before", async () => {
    const h = harness()
    await h.ok(createVm, { name: "plain", image: "tiny" })
    expect(await h.ok(destroyVm, { vm: "plain" })).toEqual({ name: "plain", destroyed: true })
  })
})

describe("prune and capabilities", () => {
  it("prune finds an abandoned temp checkpoint, an unusable one and an unreferenced layer; apply removes them", async () => {
    const h = harness()
    scriptGuest(h)
    await runningVm(h)
    await h.ok(takeCheckpoint, { vm: "src", name: "good" })
    const stale = join(h.vmDir("src"), "checkpoints", ".tmp-crashed-1")
    mkdirSync(stale)
    const old = new Date(Date.now() - 60 * 60 * 1000)
    utimesSync(stale, old, old)
    const fresh = join(h.vmDir("src"), "checkpoints", ".tmp-now-2")
    mkdirSync(fresh)
    mkdirSync(join(h.vmDir("src"), "checkpoints", "junk"))
    const strayLayer = join(h.vmDir("src"), "layers", "stray.qcow2")
    writeFileSync(strayLayer, "")
    const dry = await h.ok(prune, {})
    const orphaned = dry.items.filter((item) => item.class === "orphaned_checkpoint").map((item) => item.path)
    expect(orphaned.sort()).toEqual([join(h.vmDir("src"), "checkpoints", "junk"), stale, strayLayer].sort())
    await h.ok(prune, { apply: true })
    expect(checkpointEntries(h, "src")).toEqual([".tmp-now-2", "good"])
    expect(existsSync(strayLayer)).toBe(false)
    expect((await h.ok(listCheckpoints, { vm: "src" })).checkpoints.map((checkpoint) => checkpoint.usable)).toEqual([
      true
    ])
  })

  it("capabilities report checkpoints and forks as available with their limits", async () => {
    const h = harness()
    const report = await h.ok(capabilities, {})
    const fork = report.capabilities.find((capability) => capability.name === "vm.fork")
    expect(fork?.status).toBe("supported")
    expect(fork?.limits).toContainEqual({ code: "max_forks_per_call", value: "16" })
    expect(report.capabilities.find((capability) => capability.name === "vm.checkpoint")?.status).toBe("supported")
    expect(report.unavailable.map((capability) => capability.name)).not.toContain("runtime.fork")
  })
})
