/**
 * GuestOps over the real ssh2 transport and a real ssh server whose commands run under this
 * host's /bin/sh with its coreutils (the e2e suite covers busybox in the tiny guest). Each suite
 * runs once with SFTP served, once with the subsystem refused and once with an SFTP channel that
 * exits at once, so the shell fallbacks run for real.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { randomBytes } from "node:crypto"
import { Effect, Exit, Scope } from "effect"
import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { Guest } from "@stoat/wire"
import { makeGuestOps, streamBytes, type GuestSession } from "../../src/guest/index.js"
import { BUNDLED_GUESTS } from "../../src/guest-definitions/definitions.js"
import { makeGuestTransport } from "../../src/ssh/live.js"
import { sftpIdentity, startTestServer, type TestSshServer } from "../ssh/server.js"
import { fails, ok } from "./run.js"

type Ops = ReturnType<typeof makeGuestOps>
const tiny: Guest = { ...BUNDLED_GUESTS.find((guest) => guest.name === "tiny")!, source: "bundled" }

/** One server + transport + GuestOps per SFTP mode, and a scratch folder the sftp-server user may write. */
const world = (sftp: "serve" | "refuse" | "exit") => {
  const state = {} as {
    server: TestSshServer
    scope: Scope.CloseableScope
    ops: Ops
    session: GuestSession
    dir: string
    transportScope: Scope.CloseableScope
  }
  beforeAll(async () => {
    state.server = await startTestServer({ sftp })
    state.scope = Effect.runSync(Scope.make())
    const transport = await ok(Scope.extend(makeGuestTransport(), state.scope))
    state.ops = makeGuestOps(transport)
    state.session = {
      vm: `vm-${sftp}`,
      target: {
        vm: `vm-${sftp}`,
        port: state.server.port,
        user: "root",
        privateKeyPath: state.server.clientKey.privateKeyPath
      },
      guest: tiny
    }
    state.dir = mkdtempSync(join(state.server.files, "work-"))
    if (sftpIdentity) {
      const { chownSync } = await import("node:fs")
      chownSync(state.dir, sftpIdentity.uid, sftpIdentity.gid)
    }
  })
  afterAll(async () => {
    await Effect.runPromise(Scope.close(state.scope, Exit.void))
    await state.server.close()
  })
  return state
}

describe.each(["serve", "refuse", "exit"] as const)("files with SFTP %s", (sftp) => {
  const w = world(sftp)
  const write = (
    name: string,
    content: Uint8Array | string,
    extra: Partial<{ mode: string; append: boolean; parents: boolean }> = {}
  ) =>
    ok(
      w.ops.writeFile(w.session, {
        path: join(w.dir, name),
        content: Buffer.from(content),
        mode: "0644",
        append: false,
        parents: false,
        asRoot: false,
        ...extra
      })
    )

  it("round-trips binary bytes as base64 and text as text", async () => {
    const bytes = randomBytes(70_000)
    expect(await write("bin", bytes)).toEqual({ path: join(w.dir, "bin"), bytes: 70_000, mode: "0644" })
    const read = await ok(w.ops.readFile(w.session, { path: join(w.dir, "bin") }))
    expect(read).toMatchObject({ encoding: "base64", size: 70_000, truncated: false })
    expect(Buffer.from(read.content, "base64").equals(bytes)).toBe(true)
    await write("text", "héllo\nwörld\n")
    expect(await ok(w.ops.readFile(w.session, { path: join(w.dir, "text") }))).toEqual({
      content: "héllo\nwörld\n",
      size: 14,
      truncated: false
    })
  })

  it("reads ranges and reports truncation past the cap", async () => {
    await write("abc", "abcdefghij")
    expect(await ok(w.ops.readFile(w.session, { path: join(w.dir, "abc"), offset: 3, maxBytes: 4 }))).toEqual({
      content: "defg",
      size: 10,
      truncated: true
    })
    expect(await ok(w.ops.readFile(w.session, { path: join(w.dir, "abc"), offset: 6, maxBytes: 4 }))).toEqual({
      content: "ghij",
      size: 10,
      truncated: false
    })
    writeFileSync(join(w.dir, "big"), Buffer.alloc(1024 * 1024 + 5, 0x61))
    const big = await ok(w.ops.readFile(w.session, { path: join(w.dir, "big") }))
    expect(big).toMatchObject({ size: 1024 * 1024 + 5, truncated: true })
    expect(big.content.length).toBe(1024 * 1024)
  })

  it("writes with mode and append; the mode is exact (not umasked)", async () => {
    await write("f", "one", { mode: "0750" })
    await write("f", "two", { append: true, mode: "0750" })
    expect(readFileSync(join(w.dir, "f"), "utf8")).toBe("onetwo")
    expect(statSync(join(w.dir, "f")).mode & 0o7777).toBe(0o750)
  })

  it("parents=true creates the missing folders", async () => {
    await write("deep/er/f", "one", { parents: true, mode: "0600" })
    expect(readFileSync(join(w.dir, "deep/er/f"), "utf8")).toBe("one")
    expect(statSync(join(w.dir, "deep/er/f")).mode & 0o7777).toBe(0o600)
  })

  it("maps missing paths to not_found and a folder to usage", async () => {
    expect(await fails(w.ops.readFile(w.session, { path: join(w.dir, "nope") }))).toMatchObject({ code: "not_found" })
    expect(
      await fails(
        w.ops.writeFile(w.session, {
          path: join(w.dir, "no/such/f"),
          content: Buffer.from("x"),
          mode: "0644",
          append: false,
          parents: false,
          asRoot: false
        })
      )
    ).toMatchObject({
      code: "not_found"
    })
    expect(await fails(w.ops.readFile(w.session, { path: w.dir }))).toMatchObject({ code: "usage" })
  })
})

describe("list_dir, stat and exec on a POSIX shell", () => {
  const w = world("serve")
  /** Names a listing must carry verbatim: spaces, quotes, shell syntax, a newline, a leading dash, non-ASCII. */
  const hostile = [
    "a b",
    "it's",
    '"dq"',
    "$(touch pwned)",
    "`id`",
    "new\nline",
    "-rf",
    "--help",
    "ünï",
    "*",
    ".hidden",
    "..dots",
    "x;y|z&"
  ]

  it("lists every hostile name verbatim, with types and octal modes, and runs none of them", async () => {
    const dir = mkdtempSync(join(tmpdir(), "stoat-ls-"))
    try {
      for (const name of hostile) writeFileSync(join(dir, name), name)
      mkdirSync(join(dir, "sub"), { mode: 0o700 })
      symlinkSync("nowhere", join(dir, "dangling"))
      const listing = await ok(w.ops.listDir(w.session, dir))
      expect(listing.truncated).toBe(false)
      expect(listing.entries.map((entry) => entry.name).sort()).toEqual([...hostile, "sub", "dangling"].sort())
      const byName = new Map(listing.entries.map((entry) => [entry.name, entry]))
      expect(byName.get("new\nline")).toMatchObject({ type: "file", size: "new\nline".length, mode: "0644" })
      expect(byName.get("sub")).toMatchObject({ type: "dir", mode: "0700" })
      expect(byName.get("dangling")).toMatchObject({ type: "symlink" })
      expect(byName.get("it's")?.mtime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
      expect(await ok(w.ops.stat(w.session, join(dir, "dangling")))).toMatchObject({
        name: "dangling",
        type: "symlink"
      })
      expect(statSync(join(dir, "pwned"), { throwIfNoEntry: false })).toBeUndefined()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("caps at 2000 entries of 2500, in name order", async () => {
    const dir = mkdtempSync(join(tmpdir(), "stoat-many-"))
    try {
      for (let i = 0; i < 2500; i++) writeFileSync(join(dir, `f${String(i).padStart(4, "0")}`), "")
      const listing = await ok(w.ops.listDir(w.session, dir))
      expect(listing.truncated).toBe(true)
      expect(listing.entries).toHaveLength(2000)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("not_found for a missing folder, and for a file where a folder was meant", async () => {
    expect(await fails(w.ops.listDir(w.session, "/no/such/dir"))).toMatchObject({
      code: "not_found",
      subject: "/no/such/dir"
    })
    expect(await fails(w.ops.listDir(w.session, "/etc/hostname"))).toMatchObject({ code: "not_found" })
    expect(await fails(w.ops.stat(w.session, "/no/such"))).toMatchObject({ code: "not_found" })
  })

  it("ps lists this host's processes with elapsed times (procps)", async () => {
    const list = await ok(w.ops.ps(w.session))
    expect(list.processes.length).toBeGreaterThan(1)
    expect(list.processes.find((p) => p.pid === 1)).toMatchObject({ ppid: 0 })
    expect(list.processes[0]?.elapsed).toMatch(/^[\d:-]+$/)
  })

  it("exec stops at timeout_seconds, with the output so far and a pointer to exec_bg", async () => {
    const result = await ok(
      w.ops.exec(w.session, { argv: ["sh", "-c", "echo started; sleep 30; echo never"], timeoutSeconds: 1 })
    )
    // The wrapper's TERM ended the command's group and the wrapper itself (143).
    expect(result).toMatchObject({ stdout: "started\n", timed_out: true, exit_code: 143 })
    expect(result.message).toMatch(/exec_bg/)
  })

  it("exec returns non-UTF-8 output per stream as base64, and text as text", async () => {
    const result = await ok(
      w.ops.exec(w.session, { argv: ["sh", "-c", "printf '\\377\\000A'; printf 'ok' >&2"], timeoutSeconds: 10 })
    )
    expect(result).toEqual({
      exit_code: 0,
      stdout_base64: Buffer.from([0xff, 0x00, 0x41]).toString("base64"),
      stdout_encoding: "base64",
      stderr: "ok"
    })
    expect([...streamBytes(result, "stdout")]).toEqual([0xff, 0x00, 0x41])
  })

  it("exec keeps argv verbatim behind the timeout wrapper, with cwd and env", async () => {
    const words = ["a b", "it's", "$(id)", "`id`", "-n", "new\nline", ""]
    const result = await ok(
      w.ops.exec(w.session, { argv: ["printf", "%s|", ...words], cwd: "/tmp", env: { X: "$(id)" }, timeoutSeconds: 10 })
    )
    expect(result.stdout).toBe(words.map((word) => `${word}|`).join(""))
    const env = await ok(
      w.ops.exec(w.session, {
        argv: ["sh", "-c", 'printf "%s %s" "$PWD" "$X"'],
        cwd: "/tmp",
        env: { X: "$(id)" },
        timeoutSeconds: 10
      })
    )
    expect(env.stdout).toBe("/tmp $(id)")
  })

  it("templates get any value as $1 and never as shell syntax (property)", async () => {
    const echoGuest: Guest = {
      ...tiny,
      cmd: { useradd: 'printf "[%s]" {name}' },
      svc: { ...tiny.svc, start: 'printf "<%s>"' }
    }
    const session = { ...w.session, guest: echoGuest }
    const value = fc.string({ unit: "binary", minLength: 1, maxLength: 30 }).filter((v) => !v.includes("\0"))
    await fc.assert(
      fc.asyncProperty(value, async (name) => {
        expect((await ok(w.ops.useradd(session, name))).stdout).toBe(`[${name}]`)
      }),
      { numRuns: 40 }
    )
    // A template without {name} gets the value appended as "$@".
    expect((await ok(w.ops.svc(session, "$(reboot)", "start"))).stdout).toBe("<$(reboot)>")
  })
})
