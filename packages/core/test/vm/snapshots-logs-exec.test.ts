import { execFileSync } from "node:child_process"
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { describe, expect, it } from "vitest"
import { knownImageFile, findImage } from "../../src/images/index.js"
import {
  createVm,
  deleteSnapshot,
  execInGuest,
  listSnapshots,
  restoreSnapshot,
  saveSnapshot,
  startVm,
  stopVm,
  vmLogs
} from "../../src/operations/index.js"
import { GuestScripts } from "../../src/guest/index.js"
import { callerOf, harness, type Harness } from "../harness.js"

const writeLiveVm = (h: Harness, name: string) =>
  h.writeVmToml(
    name,
    `name = "${name}"\nmode = "live"\nos = "tiny"\nimage = "tiny"\nbackend = "direct"\nram = 256\ncpus = 1\nsshport = 2990\n`
  )

const tags = (result: { readonly snapshots: ReadonlyArray<{ readonly tag: string }> }) =>
  result.snapshots.map((snapshot) => snapshot.tag)

describe("snapshots", () => {
  it("save, list and delete work on a running VM; save replaces a tag", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(startVm, { vm: "web" })
    expect(tags(await h.ok(listSnapshots, { vm: "web" }))).toEqual([])
    expect(tags(await h.ok(saveSnapshot, { vm: "web", tag: "before" }))).toEqual(["before"])
    const saved = await h.ok(saveSnapshot, { vm: "web", tag: "after" })
    expect(tags(saved)).toEqual(["before", "after"])
    expect(saved.snapshots[0]?.vm_state).toBe("running")
    expect(tags(await h.ok(saveSnapshot, { vm: "web", tag: "before" })).sort()).toEqual(["after", "before"])
    expect(tags(await h.ok(listSnapshots, { vm: "web" })).sort()).toEqual(["after", "before"])
    expect(tags(await h.ok(deleteSnapshot, { vm: "web", tag: "before" }))).toEqual(["after"])
    expect(h.isRunning("web")).toBe(true)
  })

  it("restore needs a stopped VM: already_running while it runs, fine once stopped", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(startVm, { vm: "web" })
    await h.ok(saveSnapshot, { vm: "web", tag: "clean" })
    expect(await h.fail(restoreSnapshot, { vm: "web", tag: "clean" })).toMatchObject({
      code: "already_running",
      subject: "web"
    })
    await h.ok(stopVm, { vm: "web" })
    expect(tags(await h.ok(restoreSnapshot, { vm: "web", tag: "clean" }))).toEqual(["clean"])
  })

  it("an unknown tag is not_found listing the existing tags (restore and delete)", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(saveSnapshot, { vm: "web", tag: "one" })
    await h.ok(saveSnapshot, { vm: "web", tag: "two" })
    for (const operation of [restoreSnapshot, deleteSnapshot]) {
      const error = await h.fail(operation, { vm: "web", tag: "three" })
      expect(error).toMatchObject({ code: "not_found", subject: "three" })
      expect(error.message).toMatch(/existing tags: one, two/)
    }
    const none = await h.fail(restoreSnapshot, { vm: "web", tag: "x" })
    expect(none.message).toContain("one")
    await h.ok(deleteSnapshot, { vm: "web", tag: "one" })
    await h.ok(deleteSnapshot, { vm: "web", tag: "two" })
    expect((await h.fail(deleteSnapshot, { vm: "web", tag: "one" })).message).toMatch(/\(none\)/)
  })

  it("a live VM has no disk: every snapshot operation answers no_disk", async () => {
    const h = harness()
    writeLiveVm(h, "live")
    expect((await h.fail(listSnapshots, { vm: "live" })).code).toBe("no_disk")
    expect((await h.fail(saveSnapshot, { vm: "live", tag: "t" })).code).toBe("no_disk")
    expect((await h.fail(restoreSnapshot, { vm: "live", tag: "t" })).code).toBe("no_disk")
    expect((await h.fail(deleteSnapshot, { vm: "live", tag: "t" })).code).toBe("no_disk")
  })

  it("a cloud VM that never started has no disk yet: no_disk", async () => {
    const h = harness()
    const entry = findImage("ubuntu-24.04")!
    mkdirSync(join(h.root, "isos"), { recursive: true })
    writeFileSync(join(h.root, "isos", knownImageFile(entry)), "fake image")
    await h.ok(createVm, { name: "cloud", image: "ubuntu-24.04" })
    expect(h.exists("cloud", "disk.qcow2")).toBe(false)
    expect((await h.fail(listSnapshots, { vm: "cloud" })).code).toBe("no_disk")
    expect((await h.fail(saveSnapshot, { vm: "cloud", tag: "t" })).code).toBe("no_disk")
  })

  it.each([[""], ["has space"], ["tab\there"], ["x".repeat(129)]])("the tag %j is usage", async (tag) => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    expect((await h.fail(saveSnapshot, { vm: "web", tag })).code).toBe("usage")
  })

  it("an unknown VM is not_found", async () => {
    const h = harness()
    expect((await h.fail(listSnapshots, { vm: "ghost" })).code).toBe("not_found")
  })

  it("the rules are core's: twins of a tag made outside stoat are replaced by one and named once", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(saveSnapshot, { vm: "web", tag: "twin" })
    // As `qemu-img snapshot -c twin` run twice by hand leaves it.
    const disk = h.hypervisor.disks.get(h.diskOf("web"))!
    disk.snapshots = [...disk.snapshots, ...disk.snapshots]
    const missing = await h.fail(restoreSnapshot, { vm: "web", tag: "other" })
    expect(missing.message).toMatch(/existing tags: twin$/)
    expect(tags(await h.ok(saveSnapshot, { vm: "web", tag: "twin" }))).toEqual(["twin"])
  })

  it("a running VM's disk is never rolled back: restore stops at the rule and the snapshots stay", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(saveSnapshot, { vm: "web", tag: "clean" })
    await h.ok(startVm, { vm: "web" })
    const before = structuredClone(h.hypervisor.disks.get(h.diskOf("web"))!.snapshots)
    expect((await h.fail(restoreSnapshot, { vm: "web", tag: "nope" })).code).toBe("already_running")
    expect(h.hypervisor.disks.get(h.diskOf("web"))!.snapshots).toEqual(before)
  })
})

describe("logs", () => {
  it("reads console.log by default and last-provision.log for which=apply", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    h.writeVmFile("web", "console.log", "boot 1\nboot 2\n")
    h.writeVmFile("web", "last-provision.log", "=== recipe x ===\ndone\n")
    expect(await h.ok(vmLogs, { vm: "web" })).toEqual({ vm: "web", which: "console", lines: ["boot 1", "boot 2"] })
    expect(await h.ok(vmLogs, { vm: "web", which: "console" })).toMatchObject({ lines: ["boot 1", "boot 2"] })
    expect(await h.ok(vmLogs, { vm: "web", which: "apply" })).toEqual({
      vm: "web",
      which: "apply",
      lines: ["=== recipe x ===", "done"]
    })
  })

  // Hostile data root: a special file where a log belongs is refused at once, never read.
  it("a FIFO, a device or a folder as the console log is invalid_spec at once, not a stall or an endless read", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    const log = join(h.vmDir("web"), "console.log")
    execFileSync("mkfifo", [log])
    expect((await h.fail(vmLogs, { vm: "web" })).message).toContain("not a regular file")
    rmSync(log)
    symlinkSync("/dev/zero", log)
    expect((await h.fail(vmLogs, { vm: "web" })).code).toBe("invalid_spec")
    rmSync(log)
    mkdirSync(log)
    expect((await h.fail(vmLogs, { vm: "web" })).code).toBe("invalid_spec")
  })

  it("a huge log is read from its end: the last lines whole, no partial first line", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    // 24 MiB of 1 KiB lines, far more than the tail read: lines must come back whole.
    const line = (i: number) => `${String(i).padStart(8, "0")} ${"x".repeat(1014)}`
    h.writeVmFile("web", "console.log", Array.from({ length: 24 * 1024 }, (_, i) => line(i)).join("\n") + "\n")
    const { lines } = await h.ok(vmLogs, { vm: "web", n: 0 })
    expect(lines).toHaveLength(2000)
    expect(lines.at(-1)).toBe(line(24 * 1024 - 1))
    expect(lines.every((text) => text.length === 1023)).toBe(true)
  })

  it("a missing log reads as no lines", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    expect((await h.ok(vmLogs, { vm: "web", which: "apply" })).lines).toEqual([])
  })

  it("n picks the last lines (default 50); n is bounded 0..2000", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    h.writeVmFile("web", "console.log", Array.from({ length: 100 }, (_, i) => `line ${i}`).join("\n") + "\n")
    const byDefault = await h.ok(vmLogs, { vm: "web" })
    expect(byDefault.lines).toHaveLength(50)
    expect(byDefault.lines[0]).toBe("line 50")
    expect((await h.ok(vmLogs, { vm: "web", n: 3 })).lines).toEqual(["line 97", "line 98", "line 99"])
    expect((await h.ok(vmLogs, { vm: "web", n: 2000 })).lines).toHaveLength(100)
    expect((await h.fail(vmLogs, { vm: "web", n: 2001 })).code).toBe("usage")
    expect((await h.fail(vmLogs, { vm: "web", n: -1 })).code).toBe("usage")
    expect((await h.fail(vmLogs, { vm: "web", n: 2.5 })).code).toBe("usage")
  })

  it("removes ANSI escape sequences and carriage returns", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    h.writeVmFile(
      "web",
      "console.log",
      "\u001b[1;32mOK\u001b[0m started sshd\r\n\u001b[?25l\u001b[2Kprogress\r\n\u001b(Bplain\n"
    )
    expect((await h.ok(vmLogs, { vm: "web" })).lines).toEqual(["OK started sshd", "progress", "plain"])
  })

  it("an unknown which is usage; a broken VM's console can still be read", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    expect((await h.fail(vmLogs, { vm: "web", which: "kernel" })).code).toBe("usage")
    h.writeVmToml("junk", "[[[")
    h.writeVmFile("junk", "console.log", "panic\n")
    expect((await h.ok(vmLogs, { vm: "junk" })).lines).toEqual(["panic"])
  })
})

describe("exec", () => {
  it("a VM that is not running answers not_running", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny", agent_access: "exec" })
    expect(await h.fail(execInGuest, { vm: "web", argv: ["true"] })).toMatchObject({
      code: "not_running",
      subject: "web"
    })
    expect(h.guest.execs).toEqual([])
  })

  it("passes argv through untouched behind the guest-side timeout wrapper, with stdin, cwd, env and the host-side backstop", async () => {
    const h = harness()
    const vm = await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(startVm, { vm: "web" })
    const argv = ["echo", "a b", "$HOME", "'quoted'", "; rm -rf /"]
    const result = await h.ok(execInGuest, {
      vm: "web",
      argv,
      stdin: "in",
      cwd: "/tmp",
      env: { FOO: "bar" },
      timeout_seconds: 7
    })
    expect(result).toEqual({ exit_code: 0, stdout: "a b $HOME 'quoted' ; rm -rf /\n", stderr: "" })
    expect(h.guest.execs).toHaveLength(1)
    expect(h.guest.execs[0]).toMatchObject({
      vm: "web",
      argv: ["sh", "-c", GuestScripts.TIMEOUT_SCRIPT, "stoat_timeout", "7", ...argv],
      options: { stdin: "in", cwd: "/tmp", env: { FOO: "bar" }, timeoutMs: 7_000 }
    })
    expect(h.guest.execs[0]?.options.maxOutputBytes).toBe(1024 * 1024)
    expect(vm.ssh_port).toBeGreaterThan(0)
  })

  it("defaults the timeout to 60 s and reports exit codes and stderr", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(startVm, { vm: "web" })
    expect(await h.ok(execInGuest, { vm: "web", argv: ["false"] })).toMatchObject({ exit_code: 1 })
    expect(h.guest.execs[0]?.argv.slice(3, 5)).toEqual(["stoat_timeout", "60"])
    const missing = await h.ok(execInGuest, { vm: "web", argv: ["cat", "/nope"] })
    expect(missing).toMatchObject({ exit_code: 1, stdout: "" })
    expect(missing.stderr).toMatch(/No such file/)
  })

  it("the handler does not check the access level: runOperation does, once, for a caller bound by levels", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny", agent_access: "none" })
    await h.ok(startVm, { vm: "web" })
    expect((await h.ok(execInGuest, { vm: "web", argv: ["echo", "hi"] }, { caller: "cli" })).stdout).toBe("hi\n")
    expect(await h.fail(execInGuest, { vm: "web", argv: ["echo", "hi"] }, { caller: "mcp" })).toMatchObject({
      code: "access_denied",
      subject: "web"
    })
    const handler = Effect.provide(
      execInGuest.run({ vm: "web", argv: ["echo", "hi"] }),
      Layer.merge(h.layer(), callerOf("mcp"))
    )
    expect((await Effect.runPromise(handler as Effect.Effect<{ stdout: string }, unknown, never>)).stdout).toBe("hi\n")
  })

  it("non-UTF-8 output comes back as stdout_base64 with stdout_encoding base64", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(startVm, { vm: "web" })
    const bytes = new Uint8Array([0xff, 0xfe, 0x00, 0x41])
    h.guest.execHandler = () => ({ exitCode: 0, stdout: bytes, stderr: "ok" })
    const result = await h.ok(execInGuest, { vm: "web", argv: ["dd"] })
    expect(result).toEqual({
      exit_code: 0,
      stdout_base64: Buffer.from(bytes).toString("base64"),
      stdout_encoding: "base64",
      stderr: "ok"
    })
    h.guest.execHandler = () => ({ exitCode: 3, stdout: "fine", stderr: new Uint8Array([0xc3]) })
    expect(await h.ok(execInGuest, { vm: "web", argv: ["x"] })).toEqual({
      exit_code: 3,
      stdout: "fine",
      stderr_base64: "ww==",
      stderr_encoding: "base64"
    })
  })

  it("a timed out command reports timed_out with its partial output", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(startVm, { vm: "web" })
    h.guest.execHandler = () => ({ exitCode: 124, stdout: "partial", timedOut: true })
    const result = await h.ok(execInGuest, { vm: "web", argv: ["sleep", "999"], timeout_seconds: 1 })
    expect(result).toMatchObject({ stdout: "partial", timed_out: true })
    expect(result.message).toMatch(/exec_bg/)
  })

  it("a guest whose sshd is not up yet answers cannot_reach", async () => {
    const h = harness()
    const vm = await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(startVm, { vm: "web" })
    h.guest.unreachablePorts.add(vm.ssh_port)
    expect((await h.fail(execInGuest, { vm: "web", argv: ["true"] })).code).toBe("cannot_reach")
  })

  it.each([
    [{ vm: "web", argv: [] }],
    [{ vm: "web", argv: "echo hi" }],
    [{ vm: "web", argv: ["x"], cwd: "relative" }],
    [{ vm: "web", argv: ["x"], env: { "1BAD": "x" } }],
    [{ vm: "web", argv: ["x"], timeout_seconds: 601 }]
  ])("refuses %j with usage", async (input) => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(startVm, { vm: "web" })
    expect((await h.fail(execInGuest, input)).code).toBe("usage")
    expect(h.guest.execs).toEqual([])
  })
})
