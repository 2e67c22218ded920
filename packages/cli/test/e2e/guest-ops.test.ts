/**
 * The guest tools through the real `stoat` binary against one real tiny guest (busybox +
 * dropbear + sftp-server, root ssh user): files, folders, processes, timeouts, encodings, the
 * shell fallback without SFTP, and the errors a busybox guest gives.
 */
import { execFileSync, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BIN, e2eEnv, requireQemu, result, stoat, tempHome } from "../helpers.js"

const home = tempHome()
const env = e2eEnv(home)
const VM = "g1"

/** Runs stoat with binary stdin and returns stdout as bytes. */
const raw = (args: ReadonlyArray<string>, input: Uint8Array = new Uint8Array()) =>
  new Promise<{ code: number; stdout: Buffer; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, NO_COLOR: "1", ...env },
      stdio: ["pipe", "pipe", "pipe"]
    })
    const out: Buffer[] = []
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk))
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    child.on("error", reject)
    child.on("close", (code) => resolve({ code: code ?? -1, stdout: Buffer.concat(out), stderr }))
    child.stdin.end(input)
  })

/** `--json` first (after `exec <vm>` it would belong to the guest); the envelope of the one result. */
const envelope = async (...args: string[]) => result((await stoat(["--json", ...args], env)).stdout)
const ok = async (...args: string[]) => {
  const answer = await envelope(...args)
  if (!answer["ok"]) throw new Error(`stoat ${args.join(" ")} failed: ${JSON.stringify(answer["error"])}`)
  return answer["data"]
}
const error = async (...args: string[]) => {
  const answer = await envelope(...args)
  if (answer["ok"]) throw new Error(`stoat ${args.join(" ")} succeeded: ${JSON.stringify(answer["data"])}`)
  return answer["error"] as { code: string; message: string; reason?: string; subject?: string }
}
const sh = (script: string) =>
  ok("exec", VM, "--", "sh", "-c", script) as Promise<{ exit_code: number; stdout: string; stderr: string }>

describe("guest tools on the tiny guest", () => {
  beforeAll(async () => {
    requireQemu()
    await ok("create", VM, "--image", "tiny", "--agent-access", "exec")
    await ok("up", VM)
    await ok("wait", VM, "--until", "reachable", "--timeout", "2m")
  })
  afterAll(async () => {
    await stoat(["down", VM], env)
  })

  it("round-trips a binary file: written from stdin, read back as base64 and as raw bytes", async () => {
    const bytes = Buffer.concat([Buffer.from([0xff, 0xfe, 0x00]), randomBytes(200_000)])
    const written = await raw(["--json", "file", "write", VM, "/tmp/bin"], bytes)
    expect(result(written.stdout.toString())["data"]).toEqual({ path: "/tmp/bin", bytes: bytes.length, mode: "0644" })
    const read = await ok("file", "read", VM, "/tmp/bin")
    expect(read).toMatchObject({ encoding: "base64", size: bytes.length, truncated: false })
    expect(Buffer.from(read.content, "base64").equals(bytes)).toBe(true)
    const plain = await raw(["file", "read", VM, "/tmp/bin"])
    expect(plain.code).toBe(0)
    expect(plain.stdout.equals(bytes)).toBe(true)
    expect((await sh("md5sum < /tmp/bin")).stdout.split(" ")[0]).toBe(
      execFileSync("md5sum", { input: bytes }).toString().split(" ")[0]
    )
  })

  it("caps a read at 1 MiB with truncated, reads on from an offset, and reads exact ranges", async () => {
    await sh("head -c 1572864 /dev/zero | tr '\\0' a > /tmp/big; printf 0123456789 > /tmp/digits")
    const first = await ok("file", "read", VM, "/tmp/big")
    expect(first).toMatchObject({ size: 1572864, truncated: true })
    expect(first.content.length).toBe(1024 * 1024)
    const rest = await ok("file", "read", VM, "/tmp/big", "--offset", String(1024 * 1024))
    expect(rest).toMatchObject({ size: 1572864, truncated: false })
    expect(rest.content.length).toBe(512 * 1024)
    expect(await ok("file", "read", VM, "/tmp/digits", "--offset", "3", "--max-bytes", "4")).toEqual({
      content: "3456",
      size: 10,
      truncated: true
    })
    const human = await stoat(["file", "read", VM, "/tmp/big"], env)
    expect(human.stderr).toMatch(/read on with --offset 1048576/)
  })

  it("lists a 5,000-entry folder: 2000 entries and truncated", async () => {
    await sh('mkdir -p /tmp/many && cd /tmp/many && i=0; while [ $i -lt 5000 ]; do : > "f$i"; i=$((i+1)); done')
    const listing = await ok("file", "ls", VM, "/tmp/many")
    expect(listing.truncated).toBe(true)
    expect(listing.entries).toHaveLength(2000)
    expect(listing.entries[0]).toMatchObject({ type: "file", size: 0, mode: "0644", owner: "root" })
    expect(new Set(listing.entries.map((entry: { name: string }) => entry.name)).size).toBe(2000)
  })

  it("lists names with spaces, quotes, newlines and leading dashes verbatim, and stats a symlink itself", async () => {
    await sh(
      "mkdir -p /tmp/odd && cd /tmp/odd && : > 'a b' && : > \"it's\" && : > \"$(printf 'new\\nline')\" && : > -rf && : > '$(id)' && ln -sf /nowhere link && mkdir -p sub && chmod 0700 sub"
    )
    const listing = await ok("file", "ls", VM, "/tmp/odd")
    const names = listing.entries.map((entry: { name: string }) => entry.name).sort()
    expect(names).toEqual(["$(id)", "-rf", "a b", "it's", "link", "new\nline", "sub"].sort())
    expect(listing.entries.find((entry: { name: string }) => entry.name === "sub")).toMatchObject({
      type: "dir",
      mode: "0700"
    })
    expect(await ok("file", "stat", VM, "/tmp/odd/link")).toMatchObject({
      name: "link",
      type: "symlink",
      owner: "root"
    })
    expect(await ok("file", "stat", VM, "/etc/passwd")).toMatchObject({
      name: "passwd",
      type: "file",
      mode: "0644",
      owner: "root"
    })
  })

  it("ps shows init and dropbear (busybox ps: no elapsed column)", async () => {
    const list = await ok("ps", VM)
    expect(list.truncated).toBe(false)
    expect(list.processes.find((p: { pid: number }) => p.pid === 1)).toMatchObject({ ppid: 0, user: "root" })
    expect(list.processes.some((p: { command: string }) => /dropbear/.test(p.command))).toBe(true)
    const human = await stoat(["ps", VM], env)
    expect(human.stdout.split("\n")[0]).toMatch(/^PID\s+PPID\s+USER\s+ELAPSED\s+COMMAND$/)
  })

  it("writes with mode, append and parents", async () => {
    expect(await ok("file", "write", VM, "/tmp/w/x/y", "--parents", "--mode", "0600", "--content", "one")).toEqual({
      path: "/tmp/w/x/y",
      bytes: 3,
      mode: "0600"
    })
    await ok("file", "write", VM, "/tmp/w/x/y", "--append", "--mode", "0600", "--content", "two")
    expect(await ok("file", "read", VM, "/tmp/w/x/y")).toMatchObject({ content: "onetwo" })
    expect(await ok("file", "stat", VM, "/tmp/w/x/y")).toMatchObject({ mode: "0600", size: 6 })
    await ok("file", "write", VM, "/tmp/w/x/y", "--content", "!", "--mode", "755")
    expect(await ok("file", "stat", VM, "/tmp/w/x/y")).toMatchObject({ mode: "0755", size: 1 })
  })

  it("answers not_found for missing paths and access_denied where the kernel refuses even root", async () => {
    expect(await error("file", "read", VM, "/nope")).toMatchObject({ code: "not_found", subject: "/nope" })
    expect(await error("file", "ls", VM, "/nope")).toMatchObject({ code: "not_found" })
    expect(await error("file", "stat", VM, "/nope/deeper")).toMatchObject({ code: "not_found" })
    expect(await error("file", "write", VM, "/nope/f", "--content", "x")).toMatchObject({ code: "not_found" })
    expect(await error("file", "read", VM, "/tmp")).toMatchObject({ code: "usage" })
    // The ssh user is root; sysfs refuses to open a write-only attribute for reading and a read-only one for writing, even to root.
    expect(await error("file", "read", VM, "/sys/bus/pci/rescan")).toMatchObject({ code: "access_denied" })
    expect(await error("file", "write", VM, "/sys/kernel/notes", "--content", "x")).toMatchObject({
      code: "access_denied"
    })
    const human = await stoat(["file", "read", VM, "/nope"], env)
    expect(human.code).toBe(1)
    expect(human.stderr).toMatch(/^stoat: file: no such file or directory: \/nope/)
  })

  it("tails a file as the ssh user", async () => {
    await sh("printf 'l1\\nl2\\nl3\\n' > /tmp/app.log")
    expect(await ok("tail", VM, "--path", "/tmp/app.log", "-n", "2")).toEqual({ lines: ["l2", "l3"] })
  })

  it("stops a command at --timeout: timed_out with the output so far and a pointer to exec_bg", async () => {
    const timed = await ok("exec", "--timeout", "2", VM, "--", "sh", "-c", "echo begun; sleep 60; echo never")
    expect(timed).toMatchObject({ vm: VM, stdout: "begun\n", timed_out: true })
    expect(timed.message).toMatch(/exec_bg/)
    const human = await stoat(["exec", "--timeout", "2", VM, "--", "sh", "-c", "echo begun; sleep 60"], env)
    expect(human.stdout).toBe("begun\n")
    expect(human.stderr).toMatch(/exec_bg/)
    expect(human.code).not.toBe(0)
  })

  it("writes non-UTF-8 exec output as raw bytes, and as base64 with --json", async () => {
    const plain = await raw(["exec", VM, "--", "printf", "\\377\\376A"])
    expect([...plain.stdout]).toEqual([0xff, 0xfe, 0x41])
    expect(await ok("exec", VM, "--", "printf", "\\377\\376A")).toEqual({
      vm: VM,
      exit_code: 0,
      stdout_base64: "//5B",
      stdout_encoding: "base64",
      stderr: ""
    })
    expect(await ok("exec", VM, "--", "printf", "héllo")).toEqual({ vm: VM, exit_code: 0, stdout: "héllo", stderr: "" })
  })

  it("svc, pkg, useradd and tail_log name what the tiny guest lacks: capability_unavailable", async () => {
    expect(await error("svc", "status", VM, "sshd")).toMatchObject({
      code: "capability_unavailable",
      reason: "svc.status"
    })
    expect(await error("svc", "restart", VM, "sshd")).toMatchObject({
      code: "capability_unavailable",
      reason: "svc.restart"
    })
    expect(await error("pkg", "install", VM, "curl")).toMatchObject({
      code: "capability_unavailable",
      reason: "package_manager"
    })
    expect(await error("user", "add", VM, "alice")).toMatchObject({
      code: "capability_unavailable",
      reason: "cmd.useradd"
    })
    const unit = await error("tail", VM, "--unit", "sshd")
    expect(unit).toMatchObject({ code: "capability_unavailable", reason: "systemd" })
    expect(unit.message).toMatch(/no systemd/)
    expect(await error("tail", VM)).toMatchObject({ code: "capability_unavailable", reason: "log_path" })
    expect((await stoat(["svc", "status", VM, "sshd"], env)).code).toBe(1)
  })

  it("works without an SFTP server: reads and writes fall back to the shell", async () => {
    await sh("mv /usr/lib/sftp-server /usr/lib/sftp-server.off")
    try {
      const bytes = Buffer.concat([Buffer.from([0x00, 0xff]), randomBytes(50_000)])
      expect(
        result((await raw(["--json", "file", "write", VM, "/tmp/nosftp", "--mode", "0640"], bytes)).stdout.toString())[
          "data"
        ]
      ).toEqual({
        path: "/tmp/nosftp",
        bytes: bytes.length,
        mode: "0640"
      })
      await ok("file", "write", VM, "/tmp/nosftp", "--append", "--mode", "0640", "--content", "tail")
      const read = await ok("file", "read", VM, "/tmp/nosftp")
      expect(read).toMatchObject({ encoding: "base64", size: bytes.length + 4, truncated: false })
      expect(Buffer.from(read.content, "base64").equals(Buffer.concat([bytes, Buffer.from("tail")]))).toBe(true)
      expect(await ok("file", "read", VM, "/tmp/digits", "--offset", "8")).toEqual({
        content: "89",
        size: 10,
        truncated: false
      })
      expect(await error("file", "read", VM, "/nope")).toMatchObject({ code: "not_found" })
      expect(await error("file", "read", VM, "/sys/bus/pci/rescan")).toMatchObject({ code: "access_denied" })
      expect(await ok("file", "stat", VM, "/tmp/nosftp")).toMatchObject({ mode: "0640" })
    } finally {
      await sh("mv /usr/lib/sftp-server.off /usr/lib/sftp-server")
    }
  })

  it("a VM whose guest does not answer is cannot_reach saying to wait for its ssh with stoat wait; a stopped VM is not_running", async () => {
    const pid = Number(readFileSync(join(home, VM, "qemu.pid"), "utf8").trim())
    // Frozen QEMU: the forwarded port still accepts, and no SSH banner ever comes.
    process.kill(pid, "SIGSTOP")
    try {
      const frozen = await error("file", "read", VM, "/etc/passwd")
      expect(frozen.code).toBe("cannot_reach")
      expect(frozen.message).toMatch(/; wait for its ssh first with stoat wait g1$/)
    } finally {
      process.kill(pid, "SIGCONT")
    }
    await ok("down", VM)
    const stopped = await error("file", "read", VM, "/etc/passwd")
    expect(stopped).toMatchObject({ code: "not_running", subject: VM })
    expect(stopped.message).toMatch(/stoat up g1/)
  })
})
