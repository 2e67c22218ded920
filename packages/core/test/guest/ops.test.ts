import { describe, expect, it } from "vitest"
import type { Guest } from "@stoat/wire"
import {
  execInGuest,
  listDirOp,
  pkgInstallOp,
  psOp,
  readFileOp,
  statOp,
  svcOp,
  svcStatusOp,
  tailLogOp,
  useraddOp,
  writeFileOp
} from "../../src/operations/guest.js"
import { createVm, startVm } from "../../src/operations/vm.js"
import { accessOf, type Operation } from "../../src/operations/operation.js"
import { GuestScripts, makeGuestOps, parsePs, type GuestSession } from "../../src/guest/index.js"
import { BUNDLED_GUESTS } from "../../src/guest-definitions/definitions.js"
import { FakeGuestState, makeFakeGuest, type FakeExecHandler } from "../../src/testing/index.js"
import { harness } from "../harness.js"
import { fails, ok } from "./run.js"

const MiB = 1024 * 1024

/** A running tiny VM "web" in the fake world. */
const running = async () => {
  const h = harness()
  const vm = await h.ok(createVm, { name: "web", image: "tiny" })
  await h.ok(startVm, { vm: "web" })
  return Object.assign(h, { port: vm.ssh_port, fs: h.guest.fs("web") })
}

const guestDef = (name: string): Guest => ({
  ...BUNDLED_GUESTS.find((guest) => guest.name === name)!,
  source: "bundled"
})

/** GuestOps over a bare fake guest, with a session built by hand (any guest, any ssh user). */
const direct = (guest: string, user: string, handler?: FakeExecHandler) => {
  const state = new FakeGuestState()
  if (handler) state.execHandler = handler
  const ops = makeGuestOps(makeFakeGuest(state))
  const session: GuestSession = {
    vm: "box",
    target: { vm: "box", port: 2222, user, privateKeyPath: "/key" },
    guest: guestDef(guest)
  }
  const argvs = () => state.execs.map((entry) => entry.argv)
  return { state, ops, session, argvs }
}

describe("access levels of the guest tools (seed 000 table)", () => {
  it("read tools need observe, changing tools manage, exec and write_file as_root exec", () => {
    const observe: ReadonlyArray<Operation> = [readFileOp, listDirOp, statOp, psOp, svcStatusOp, tailLogOp]
    const manage: ReadonlyArray<Operation> = [writeFileOp, pkgInstallOp, svcOp, useraddOp]
    for (const op of observe) expect(accessOf(op, {}), op.tool).toBe("observe")
    for (const op of manage) expect(accessOf(op, {}), op.tool).toBe("manage")
    expect(accessOf(writeFileOp, { as_root: false } as never)).toBe("manage")
    expect(accessOf(writeFileOp, { as_root: true } as never)).toBe("exec")
    expect(accessOf(execInGuest, {} as never)).toBe("exec")
  })
})

describe("read_file", () => {
  it("returns UTF-8 text as is and other bytes as base64, with the size", async () => {
    const h = await running()
    h.fs.write("/etc/motd", "héllo\n")
    h.fs.write("/bin/blob", new Uint8Array([0x7f, 0x45, 0xff, 0x00, 0xfe]))
    expect(await h.ok(readFileOp, { vm: "web", path: "/etc/motd" })).toEqual({
      content: "héllo\n",
      size: 7,
      truncated: false
    })
    expect(await h.ok(readFileOp, { vm: "web", path: "/bin/blob" })).toEqual({
      content: "f0X/AP4=",
      encoding: "base64",
      size: 5,
      truncated: false
    })
  })

  it("reads ranges: offset, max_bytes, 0 = the 1 MiB cap; truncated says more follows", async () => {
    const h = await running()
    h.fs.write("/data/big", "x".repeat(MiB + 10))
    h.fs.write("/data/abc", "abcdef")
    expect(await h.ok(readFileOp, { vm: "web", path: "/data/abc", offset: 2, max_bytes: 3 })).toEqual({
      content: "cde",
      size: 6,
      truncated: true
    })
    expect(await h.ok(readFileOp, { vm: "web", path: "/data/abc", offset: 3, max_bytes: 3 })).toEqual({
      content: "def",
      size: 6,
      truncated: false
    })
    expect(await h.ok(readFileOp, { vm: "web", path: "/data/abc", offset: 99 })).toEqual({
      content: "",
      size: 6,
      truncated: false
    })
    const big = await h.ok(readFileOp, { vm: "web", path: "/data/big", max_bytes: 0 })
    expect(big).toMatchObject({ size: MiB + 10, truncated: true })
    expect(big.content.length).toBe(MiB)
    const rest = await h.ok(readFileOp, { vm: "web", path: "/data/big", offset: MiB })
    expect(rest).toEqual({ content: "x".repeat(10), size: MiB + 10, truncated: false })
    expect((await h.fail(readFileOp, { vm: "web", path: "/data/big", max_bytes: MiB + 1 })).code).toBe("usage")
  })

  it("maps a missing path to not_found, a forbidden one to access_denied and a folder to usage", async () => {
    const h = await running()
    h.fs.write("/root/secret", "s")
    h.fs.denied.add("/root/secret")
    expect(await h.fail(readFileOp, { vm: "web", path: "/nope" })).toMatchObject({
      code: "not_found",
      subject: "/nope"
    })
    expect(await h.fail(readFileOp, { vm: "web", path: "/root/secret" })).toMatchObject({ code: "access_denied" })
    expect(await h.fail(readFileOp, { vm: "web", path: "/etc" })).toMatchObject({ code: "usage" })
  })

  it("falls back to the shell (stat + tail | head) when the guest has no SFTP server, with the same answers", async () => {
    const h = await running()
    h.guest.sftp = false
    h.fs.write("/data/abc", "abcdef")
    h.fs.write("/bin/blob", new Uint8Array([0xff, 0x00]))
    expect(await h.ok(readFileOp, { vm: "web", path: "/data/abc", offset: 2, max_bytes: 3 })).toEqual({
      content: "cde",
      size: 6,
      truncated: true
    })
    expect(await h.ok(readFileOp, { vm: "web", path: "/bin/blob" })).toEqual({
      content: "/wA=",
      encoding: "base64",
      size: 2,
      truncated: false
    })
    expect(h.guest.execs.at(-1)?.argv).toEqual([
      "sh",
      "-c",
      GuestScripts.READ_SCRIPT,
      "stoat_read",
      "/bin/blob",
      "0",
      String(MiB + 1)
    ])
    expect(await h.fail(readFileOp, { vm: "web", path: "/nope" })).toMatchObject({ code: "not_found" })
    expect(await h.fail(readFileOp, { vm: "web", path: "/etc" })).toMatchObject({ code: "usage" })
  })

  it("refuses relative paths, NUL and unknown arguments with usage, before reaching the guest", async () => {
    const h = await running()
    for (const input of [
      { path: "etc/passwd" },
      { path: "/a\0b" },
      { path: "/etc/passwd", extra: 1 },
      { path: "/x", offset: -1 },
      { path: "/x", max_bytes: 1.5 }
    ])
      expect((await h.fail(readFileOp, { vm: "web", ...input })).code, JSON.stringify(input)).toBe("usage")
    expect(h.guest.execs).toEqual([])
  })
})

describe("write_file", () => {
  it("writes as the ssh user, sets the mode (default 0644) and returns {path, bytes, mode}", async () => {
    const h = await running()
    expect(await h.ok(writeFileOp, { vm: "web", path: "/tmp/a", content: "héllo" })).toEqual({
      path: "/tmp/a",
      bytes: 6,
      mode: "0644"
    })
    expect(h.fs.files.get("/tmp/a")).toEqual({ data: new Uint8Array(Buffer.from("héllo")), mode: 0o644 })
    expect(await h.ok(writeFileOp, { vm: "web", path: "/tmp/a", content: "!", append: true, mode: "755" })).toEqual({
      path: "/tmp/a",
      bytes: 1,
      mode: "0755"
    })
    expect(h.fs.readText("/tmp/a")).toBe("héllo!")
    expect(h.fs.files.get("/tmp/a")?.mode).toBe(0o755)
    await h.ok(writeFileOp, { vm: "web", path: "/tmp/bin", content: "/wA=", encoding: "base64" })
    expect([...h.fs.files.get("/tmp/bin")!.data]).toEqual([0xff, 0x00])
  })

  it("parents=true creates the missing folders in the same command as the write; without it a missing folder is not_found", async () => {
    const h = await running()
    expect(await h.fail(writeFileOp, { vm: "web", path: "/srv/app/conf", content: "x" })).toMatchObject({
      code: "not_found"
    })
    await h.ok(writeFileOp, { vm: "web", path: "/srv/app/conf", content: "x", parents: true })
    expect(h.fs.readText("/srv/app/conf")).toBe("x")
    expect(h.guest.execs.map((entry) => entry.argv)).toEqual([
      ["sh", "-c", GuestScripts.WRITE_SCRIPT, "stoat_write", "/srv/app/conf", "w", "0644", "p"]
    ])
  })

  it("a path the user may not write is access_denied; bad mode or base64 is usage", async () => {
    const h = await running()
    h.fs.denied.add("/etc")
    expect(await h.fail(writeFileOp, { vm: "web", path: "/etc/passwd", content: "x" })).toMatchObject({
      code: "access_denied"
    })
    for (const input of [
      { mode: "999" },
      { mode: "0o644" },
      { mode: "12345" },
      { mode: "rw-r--r--" },
      { encoding: "base64", content: "not base64!" }
    ])
      expect(
        (await h.fail(writeFileOp, { vm: "web", path: "/tmp/x", content: "x", ...input })).code,
        JSON.stringify(input)
      ).toBe("usage")
  })

  it("over 16 MiB is usage naming the size and the cap, never echoing the content (text, multi-byte text, base64, exec stdin)", async () => {
    const h = await running()
    const cap = 16 * MiB
    const cases: Array<[Operation, Record<string, unknown>, RegExp]> = [
      [
        writeFileOp,
        { path: "/tmp/x", content: "a".repeat(cap + 1) },
        /content is 16777217 bytes; the cap is 16777216 bytes \(16 MiB\)/
      ],
      [
        writeFileOp,
        { path: "/tmp/x", content: "é".repeat(cap / 2 + 1) },
        /content is 16777218 bytes; the cap is 16777216 bytes/
      ],
      [
        writeFileOp,
        { path: "/tmp/x", content: "a".repeat(cap * 2) },
        /content is 33554432 characters; the cap is 16777216 bytes/
      ],
      [
        writeFileOp,
        { path: "/tmp/x", content: Buffer.alloc(cap + 1).toString("base64"), encoding: "base64" },
        /content is 16777217 bytes; the cap is/
      ],
      [
        execInGuest,
        { argv: ["cat"], stdin: "a".repeat(cap + 1) },
        /stdin is 16777217 characters; the cap is 16777216 bytes/
      ]
    ]
    for (const [operation, input, message] of cases) {
      const error = await h.fail(operation, { vm: "web", ...input })
      expect(error.code).toBe("usage")
      expect(error.message).toMatch(message)
      expect(error.message.length).toBeLessThan(300)
    }
    expect(h.fs.files.has("/tmp/x")).toBe(false)
    expect(
      await h.ok(writeFileOp, {
        vm: "web",
        path: "/tmp/x",
        content: Buffer.alloc(cap).toString("base64"),
        encoding: "base64"
      })
    ).toMatchObject({ bytes: cap })
  })

  it("a rejected field's long value is named by its length, not echoed", async () => {
    const h = await running()
    const error = await h.fail(writeFileOp, { vm: "web", path: "/tmp/x", content: "x", encoding: "9".repeat(500) })
    expect(error.message).not.toContain("9".repeat(130))
  })

  it("falls back to cat > path && chmod when the guest has no SFTP server", async () => {
    const h = await running()
    h.guest.sftp = false
    expect(
      await h.ok(writeFileOp, { vm: "web", path: "/srv/x/f", content: "one", parents: true, mode: "0600" })
    ).toEqual({ path: "/srv/x/f", bytes: 3, mode: "0600" })
    await h.ok(writeFileOp, { vm: "web", path: "/srv/x/f", content: "two", append: true, mode: "0600" })
    expect(h.fs.files.get("/srv/x/f")).toEqual({ data: new Uint8Array(Buffer.from("onetwo")), mode: 0o600 })
    expect(h.guest.execs.at(-1)?.argv).toEqual([
      "sh",
      "-c",
      GuestScripts.WRITE_SCRIPT,
      "stoat_write",
      "/srv/x/f",
      "a",
      "0600",
      ""
    ])
    expect(h.guest.execs.at(-1)?.options.stdin).toEqual(Buffer.from("two"))
  })

  it("as_root from a non-root user goes through the guest's escalate; a guest without one is capability_unavailable", async () => {
    const debian = direct("debian", "stoat", () => ({ exitCode: 0 }))
    await ok(
      debian.ops.writeFile(debian.session, {
        path: "/etc/hosts",
        content: Buffer.from("h"),
        mode: "0644",
        append: false,
        parents: false,
        asRoot: true
      })
    )
    expect(debian.argvs()).toEqual([
      ["sudo", "-n", "sh", "-c", GuestScripts.WRITE_SCRIPT, "stoat_write", "/etc/hosts", "w", "0644", ""]
    ])
    const denied = direct("debian", "stoat", () => ({ exitCode: 1, stderr: "sudo: a password is required\n" }))
    expect(
      await fails(
        denied.ops.writeFile(denied.session, {
          path: "/etc/hosts",
          content: Buffer.from("h"),
          mode: "0644",
          append: false,
          parents: false,
          asRoot: true
        })
      )
    ).toMatchObject({
      code: "access_denied"
    })
    const tiny = direct("tiny", "guest", () => ({ exitCode: 0 }))
    expect(
      await fails(
        tiny.ops.writeFile(tiny.session, {
          path: "/etc/x",
          content: Buffer.from("h"),
          mode: "0644",
          append: false,
          parents: false,
          asRoot: true
        })
      )
    ).toMatchObject({
      code: "capability_unavailable",
      reason: "escalate"
    })
    expect(tiny.argvs()).toEqual([])
  })

  it("as_root as the root user needs no escalation (SFTP as root)", async () => {
    const h = await running()
    await h.ok(writeFileOp, { vm: "web", path: "/etc/motd", content: "m", as_root: true })
    expect(h.fs.readText("/etc/motd")).toBe("m")
    expect(h.guest.execs).toEqual([])
  })
})

describe("list_dir and stat", () => {
  it("lists basenames with type, size, octal mode, mtime and owner, sorted, hidden ones included", async () => {
    const h = await running()
    h.fs.write("/srv/b.txt", "bb", 0o600)
    h.fs.write("/srv/.hidden", "")
    h.fs.mkdirp("/srv/sub")
    const listing = await h.ok(listDirOp, { vm: "web", path: "/srv" })
    expect(listing).toEqual({
      truncated: false,
      entries: [
        { name: ".hidden", type: "file", size: 0, mode: "0644", mtime: "2023-11-14T22:13:20Z", owner: "root" },
        { name: "b.txt", type: "file", size: 2, mode: "0600", mtime: "2023-11-14T22:13:20Z", owner: "root" },
        { name: "sub", type: "dir", size: 4096, mode: "0755", mtime: "2023-11-14T22:13:20Z", owner: "root" }
      ]
    })
    expect(await h.ok(statOp, { vm: "web", path: "/srv/b.txt" })).toEqual(listing.entries[1])
    expect((await h.ok(statOp, { vm: "web", path: "/" })).name).toBe("/")
  })

  it("caps a folder at 2000 entries with truncated=true", async () => {
    const h = await running()
    for (let i = 0; i < 5000; i++) h.fs.write(`/many/f${String(i).padStart(4, "0")}`, "")
    const listing = await h.ok(listDirOp, { vm: "web", path: "/many" })
    expect(listing.truncated).toBe(true)
    expect(listing.entries).toHaveLength(2000)
    expect(listing.entries[1999]?.name).toBe("f1999")
    expect(h.guest.execs[0]?.argv).toEqual(["sh", "-c", GuestScripts.LIST_SCRIPT, "stoat_ls", "/many", "2000"])
  })

  it("missing: not_found; a file: not_found (not a directory); forbidden: access_denied", async () => {
    const h = await running()
    h.fs.write("/etc/passwd", "root")
    h.fs.mkdirp("/root/private")
    h.fs.denied.add("/root/private")
    expect(await h.fail(listDirOp, { vm: "web", path: "/nope" })).toMatchObject({ code: "not_found", subject: "/nope" })
    expect(await h.fail(listDirOp, { vm: "web", path: "/etc/passwd" })).toMatchObject({ code: "not_found" })
    expect(await h.fail(listDirOp, { vm: "web", path: "/root/private" })).toMatchObject({ code: "access_denied" })
    expect(await h.fail(statOp, { vm: "web", path: "/nope" })).toMatchObject({ code: "not_found" })
  })

  it("a listing that shifts between its passes is listed again; one that keeps shifting is an error naming the path", async () => {
    let calls = 0
    const names = "a\0b\0\0" + "2\n"
    const stat = "1\t81a4\t0\troot\n"
    const flaky = direct("tiny", "root", () => ({ exitCode: 0, stdout: names + stat + (++calls > 1 ? stat : "") }))
    expect((await ok(flaky.ops.listDir(flaky.session, "/d"))).entries.map((entry) => entry.name)).toEqual(["a", "b"])
    const broken = direct("tiny", "root", () => ({ exitCode: 123, stdout: names + stat }))
    expect(await fails(broken.ops.listDir(broken.session, "/d"))).toMatchObject({ code: "internal", subject: "/d" })
    expect(broken.argvs()).toHaveLength(2)
  })
})

describe("ps", () => {
  it("parses procps (with ELAPSED) and busybox (without) output", () => {
    const procps =
      "  PID  PPID USER         ELAPSED COMMAND\n    1     0 root        02:40:49 /sbin/init splash\n   42     1 www-data       00:05 nginx: worker process\n"
    expect(parsePs(procps, 2000)).toEqual({
      truncated: false,
      processes: [
        { pid: 1, ppid: 0, user: "root", elapsed: "02:40:49", command: "/sbin/init splash" },
        { pid: 42, ppid: 1, user: "www-data", elapsed: "00:05", command: "nginx: worker process" }
      ]
    })
    const busybox =
      "PID   PPID  USER     COMMAND\n    1     0 root     init\n  77     1 root     dropbear -F -E -s -p 22\n"
    expect(parsePs(busybox, 2000).processes).toEqual([
      { pid: 1, ppid: 0, user: "root", command: "init" },
      { pid: 77, ppid: 1, user: "root", command: "dropbear -F -E -s -p 22" }
    ])
  })

  it("caps at 2000 rows with truncated=true", async () => {
    const rows = Array.from({ length: 2500 }, (_, i) => `${i + 1} 0 root x${i}`).join("\n")
    const many = direct("tiny", "root", () => ({ exitCode: 0, stdout: `PID PPID USER COMMAND\n${rows}\n` }))
    const list = await ok(many.ops.ps(many.session))
    expect(list.truncated).toBe(true)
    expect(list.processes).toHaveLength(2000)
    expect(many.argvs()).toEqual([["sh", "-c", GuestScripts.PS_SCRIPT, "stoat_ps"]])
  })

  it("runs on the fake guest through the catalog", async () => {
    const h = await running()
    expect(await h.ok(psOp, { vm: "web" })).toEqual({
      truncated: false,
      processes: [{ pid: 1, ppid: 0, user: "root", elapsed: "01:00", command: "init" }]
    })
  })
})

describe("services", () => {
  it("a guest without service templates (tiny) is capability_unavailable, and nothing runs", async () => {
    const h = await running()
    expect(await h.fail(svcStatusOp, { vm: "web", name: "sshd" })).toMatchObject({
      code: "capability_unavailable",
      reason: "svc.status"
    })
    expect(await h.fail(svcOp, { vm: "web", name: "sshd", action: "restart" })).toMatchObject({
      code: "capability_unavailable",
      reason: "svc.restart"
    })
    expect(h.guest.execs).toEqual([])
  })

  it("status runs the template with the name as $1, as the ssh user, and reports active and enabled", async () => {
    const debian = direct("debian", "stoat", (argv) => ({
      exitCode: argv[2]?.includes("is-enabled") ? 1 : 0,
      stdout: argv[2]?.includes("status") ? "● nginx.service - running\n" : ""
    }))
    expect(await ok(debian.ops.svcStatus(debian.session, "nginx"))).toEqual({
      stdout: "● nginx.service - running\n",
      stderr: "",
      exit_code: 0,
      active: true,
      enabled: false
    })
    expect(debian.argvs()).toEqual([
      ["sh", "-c", 'systemctl status "$1"', "stoat_svc", "nginx"],
      ["sh", "-c", GuestScripts.ENABLED_SCRIPTS["systemd"], "stoat_enabled", "nginx"]
    ])
    const missing = direct("debian", "stoat", () => ({
      exitCode: 4,
      stderr: "Unit nope.service could not be found.\n"
    }))
    expect(await fails(missing.ops.svcStatus(missing.session, "nope"))).toMatchObject({
      code: "not_found",
      subject: "nope"
    })
  })

  it("actions run the template as root through escalate; the exit status is the answer", async () => {
    const debian = direct("debian", "stoat", () => ({ exitCode: 5, stderr: "Job failed.\n" }))
    expect(await ok(debian.ops.svc(debian.session, "nginx", "start"))).toEqual({
      stdout: "",
      stderr: "Job failed.\n",
      exit_code: 5
    })
    expect(debian.argvs()).toEqual([["sudo", "-n", "sh", "-c", 'systemctl start "$1"', "stoat_svc", "nginx"]])
    const alpine = direct("alpine", "root", () => ({ exitCode: 0 }))
    await ok(alpine.ops.svc(alpine.session, "sshd", "enable"))
    expect(alpine.argvs()).toEqual([["sh", "-c", 'rc-update add "$1" default', "stoat_svc", "sshd"]])
  })

  it("a missing service manager or sudo is capability_unavailable naming it; a refused sudo is access_denied", async () => {
    const noSystemctl = direct("debian", "stoat", () => ({
      exitCode: 127,
      stderr: "stoat_svc: 1: systemctl: not found\n"
    }))
    expect(await fails(noSystemctl.ops.svc(noSystemctl.session, "nginx", "stop"))).toMatchObject({
      code: "capability_unavailable",
      reason: "systemctl"
    })
    const noSudo = direct("debian", "stoat", () => ({ exitCode: 127, stderr: "sh: sudo: not found\n" }))
    expect(await fails(noSudo.ops.svc(noSudo.session, "nginx", "stop"))).toMatchObject({
      code: "capability_unavailable",
      reason: "sudo"
    })
    const refused = direct("debian", "stoat", () => ({ exitCode: 1, stderr: "sudo: a password is required\n" }))
    expect(await fails(refused.ops.svc(refused.session, "nginx", "stop"))).toMatchObject({ code: "access_denied" })
  })

  it.each(["-rf", "$(reboot)", "a b", "it's", "x;y", "a\nb", "a\0b", "", "`id`", "../etc"])(
    "refuses the service name %j with usage",
    async (name) => {
      const h = await running()
      expect((await h.fail(svcOp, { vm: "web", name, action: "start" })).code).toBe("usage")
      expect((await h.fail(svcStatusOp, { vm: "web", name })).code).toBe("usage")
      expect((await h.fail(useraddOp, { vm: "web", name })).code).toBe("usage")
      expect((await h.fail(tailLogOp, { vm: "web", unit: name })).code).toBe("usage")
      expect(h.guest.execs).toEqual([])
    }
  )

  it("refuses an unknown action with usage", async () => {
    const h = await running()
    expect((await h.fail(svcOp, { vm: "web", name: "x", action: "status" })).code).toBe("usage")
  })
})

describe("tail_log", () => {
  it("tails a file as the ssh user, at most `lines` lines", async () => {
    const h = await running()
    h.fs.write("/var/log/app.log", Array.from({ length: 30 }, (_, i) => `line ${i}`).join("\n") + "\n")
    expect(await h.ok(tailLogOp, { vm: "web", path: "/var/log/app.log", lines: 3 })).toEqual({
      lines: ["line 27", "line 28", "line 29"]
    })
    expect((await h.ok(tailLogOp, { vm: "web", path: "/var/log/app.log" })).lines).toHaveLength(30)
    expect(h.guest.execs[0]?.argv).toEqual([
      "sh",
      "-c",
      GuestScripts.TAIL_SCRIPT,
      "stoat_tail",
      "/var/log/app.log",
      "3"
    ])
    expect(await h.fail(tailLogOp, { vm: "web", path: "/var/log/none" })).toMatchObject({ code: "not_found" })
  })

  it("the tiny guest has neither a journal nor a log_path: capability_unavailable naming what is missing", async () => {
    const h = await running()
    expect(await h.fail(tailLogOp, { vm: "web", unit: "sshd" })).toMatchObject({
      code: "capability_unavailable",
      reason: "systemd"
    })
    expect(await h.fail(tailLogOp, { vm: "web" })).toMatchObject({ code: "capability_unavailable", reason: "log_path" })
  })

  it("unit reads the journal as root; neither reads log_path (alpine) or the whole journal (systemd) as root", async () => {
    const debian = direct("debian", "stoat", () => ({ exitCode: 0, stdout: "a\nb\n" }))
    expect(await ok(debian.ops.tailLog(debian.session, { unit: "nginx", lines: 10 }))).toEqual({ lines: ["a", "b"] })
    await ok(debian.ops.tailLog(debian.session, { lines: 5 }))
    expect(debian.argvs()).toEqual([
      ["sudo", "-n", "journalctl", "--no-pager", "--quiet", "-n", "10", "-u", "nginx"],
      ["sudo", "-n", "journalctl", "--no-pager", "--quiet", "-n", "5"]
    ])
    const alpine = direct("alpine", "stoat", () => ({ exitCode: 0, stdout: "m\r\n" }))
    expect(await ok(alpine.ops.tailLog(alpine.session, { lines: 7 }))).toEqual({ lines: ["m"] })
    expect(alpine.argvs()).toEqual([
      ["sudo", "-n", "sh", "-c", GuestScripts.TAIL_SCRIPT, "stoat_tail", "/var/log/messages", "7"]
    ])
  })

  it("unit and path together, or more than 2000 lines, are usage", async () => {
    const h = await running()
    expect((await h.fail(tailLogOp, { vm: "web", unit: "a", path: "/b" })).code).toBe("usage")
    expect((await h.fail(tailLogOp, { vm: "web", path: "/b", lines: 2001 })).code).toBe("usage")
    expect((await h.fail(tailLogOp, { vm: "web", path: "/b", lines: 0 })).code).toBe("usage")
  })
})

describe("pkg_install and useradd", () => {
  it("runs pkg.setup then the install argv as root, with pkg.env, packages as plain arguments", async () => {
    const debian = direct("debian", "stoat", (argv) => ({
      exitCode: 0,
      stdout: argv.includes("install") ? "installed\n" : "updated\n"
    }))
    expect(await ok(debian.ops.pkgInstall(debian.session, ["curl", "jq=1.6"]))).toEqual({
      stdout: "updated\ninstalled\n",
      stderr: "",
      exit_code: 0
    })
    expect(debian.argvs()).toEqual([
      ["sudo", "-n", "env", "DEBIAN_FRONTEND=noninteractive", "sh", "-c", "apt-get update", "stoat_pkg_setup"],
      ["sudo", "-n", "env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", "curl", "jq=1.6"]
    ])
  })

  it("a failing setup is the answer, and install does not run", async () => {
    const debian = direct("debian", "stoat", () => ({ exitCode: 100, stderr: "E: Could not resolve deb.debian.org\n" }))
    expect(await ok(debian.ops.pkgInstall(debian.session, ["curl"]))).toMatchObject({ exit_code: 100 })
    expect(debian.argvs()).toHaveLength(1)
  })

  it("a guest without a package manager (tiny) is capability_unavailable; a missing apt-get names it", async () => {
    const h = await running()
    expect(await h.fail(pkgInstallOp, { vm: "web", packages: ["curl"] })).toMatchObject({
      code: "capability_unavailable",
      reason: "package_manager"
    })
    const noApt = direct("debian", "root", () => ({
      exitCode: 127,
      stderr: "env: 'apt-get': No such file or directory\n"
    }))
    // setup (sh -c "apt-get update") fails the same way.
    expect(await fails(noApt.ops.pkgInstall(noApt.session, ["curl"]))).toMatchObject({
      code: "capability_unavailable",
      reason: "apt-get"
    })
  })

  it.each([["-y"], ["--allow-unauthenticated"], [""], ["a b"], ["x\0"]])(
    "refuses the package %j with usage",
    async (name) => {
      const h = await running()
      expect((await h.fail(pkgInstallOp, { vm: "web", packages: [name] })).code).toBe("usage")
      expect((await h.fail(pkgInstallOp, { vm: "web", packages: [] })).code).toBe("usage")
    }
  )

  it("useradd runs cmd.useradd with the name as $1 as root; tiny has none", async () => {
    const debian = direct("debian", "stoat", () => ({ exitCode: 9, stderr: "useradd: user 'alice' already exists\n" }))
    expect(await ok(debian.ops.useradd(debian.session, "alice"))).toEqual({
      stdout: "",
      stderr: "useradd: user 'alice' already exists\n",
      exit_code: 9
    })
    expect(debian.argvs()).toEqual([
      ["sudo", "-n", "sh", "-c", 'useradd -m -s /bin/bash "$1"', "stoat_useradd", "alice"]
    ])
    const h = await running()
    expect(await h.fail(useraddOp, { vm: "web", name: "alice" })).toMatchObject({
      code: "capability_unavailable",
      reason: "cmd.useradd"
    })
  })
})

describe("exec", () => {
  it("a command that exits 143 on its own before the deadline is not timed out", async () => {
    const h = await running()
    h.guest.execHandler = () => ({ exitCode: 143, stdout: "bye" })
    expect(await h.ok(execInGuest, { vm: "web", argv: ["sh", "-c", "kill $$"] })).toEqual({
      exit_code: 143,
      stdout: "bye",
      stderr: ""
    })
  })

  it("says when a stream was cut at the 1 MiB cap", async () => {
    const h = await running()
    h.guest.execHandler = () => ({ exitCode: 0, stdout: "y".repeat(MiB + 1) })
    const result = await h.ok(execInGuest, { vm: "web", argv: ["yes"] })
    expect(result.truncated).toBe(true)
    expect(result.stdout?.length).toBe(MiB)
  })
})

describe("reachability", () => {
  it("a stopped VM is not_running and a VM whose sshd is not up is cannot_reach advising vm.wait first, for every guest tool", async () => {
    const h = await running()
    h.guest.unreachablePorts.add(h.port)
    const calls: Array<[Operation, Record<string, unknown>]> = [
      [readFileOp, { path: "/etc/motd" }],
      [writeFileOp, { path: "/tmp/x", content: "x" }],
      [listDirOp, { path: "/" }],
      [statOp, { path: "/" }],
      [psOp, {}],
      [tailLogOp, { path: "/var/log/x" }]
    ]
    for (const [op, input] of calls) {
      const error = await h.fail(op, { vm: "web", ...input })
      expect(error.code, op.tool).toBe("cannot_reach")
      expect(error.message).toMatch(/; wait for its ssh first with vm\.wait \{"vm":"web"\}$/)
    }
    const stopped = harness()
    await stopped.ok(createVm, { name: "cold", image: "tiny" })
    for (const [op, input] of calls)
      expect((await stopped.fail(op, { vm: "cold", ...input })).code, op.tool).toBe("not_running")
  })
})

describe("helpers are asked once", () => {
  it("a helper's answer is taken as the transport reports it: never asked again behind the caller's back", async () => {
    const silent = direct("tiny", "root", () => ({ exitCode: 255 }))
    expect(await fails(silent.ops.stat(silent.session, "/etc/x"))).toMatchObject({ code: "internal" })
    expect(silent.argvs()).toHaveLength(1)
  })
})
