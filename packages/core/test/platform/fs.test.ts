import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Option } from "effect"
import { afterEach, onTestFinished } from "vitest"
import { createVm, updateVm } from "../../src/operations/index.js"
import * as fs from "../../src/platform/fs.js"
import { harness } from "../harness.js"

const dirs: Array<string> = []
const scratch = () => {
  const dir = mkdtempSync(join(tmpdir(), "stoat-fs-"))
  dirs.push(dir)
  return dir
}
const frozen: Array<string> = []
afterEach(() => {
  for (const dir of frozen.splice(0)) execFileSync("chattr", ["-i", dir])
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

/** `chattr +i`: even root may not create entries in the folder; undone after the test. */
const immutable = (dir: string) => {
  execFileSync("chattr", ["+i", dir])
  frozen.push(dir)
}

describe("typed file-system failures", () => {
  it.effect("a file where a folder should be is invalid_spec naming the path, with the errno", () =>
    Effect.gen(function* () {
      const file = join(scratch(), "plain")
      writeFileSync(file, "x")
      const error = yield* Effect.flip(fs.makeDirectory(join(file, "sub")))
      expect(error).toMatchObject({
        _tag: "InvalidSpec",
        code: "invalid_spec",
        subject: join(file, "sub"),
        errno: "ENOTDIR"
      })
      expect(error.message).toContain(join(file, "sub"))
      const write = yield* Effect.flip(fs.writeFileAtomic(join(file, "vm.toml"), "x"))
      // Its folder is made first, over the file: EEXIST, still invalid_spec naming the path.
      expect(write).toMatchObject({ code: "invalid_spec", errno: "EEXIST", subject: join(file, "vm.toml") })
    })
  )

  it.effect("reading a folder as a file is invalid_spec (EISDIR); a missing file is not_found", () =>
    Effect.gen(function* () {
      const dir = scratch()
      expect(yield* Effect.flip(fs.readFileString(dir))).toMatchObject({
        code: "invalid_spec",
        errno: "EISDIR",
        subject: dir
      })
      expect(yield* Effect.flip(fs.readFileString(join(dir, "absent")))).toMatchObject({
        code: "not_found",
        errno: "ENOENT"
      })
      expect(yield* fs.readFileStringIfExists(join(dir, "absent"))).toEqual(Option.none())
      expect(yield* fs.statIfExists(join(dir, "absent", "deeper"))).toEqual(Option.none())
      expect(yield* fs.listDirectory(join(dir, "absent"))).toEqual([])
    })
  )

  it.effect("a folder nobody may write to is access_denied (EPERM), even for root", () =>
    Effect.gen(function* () {
      const dir = scratch()
      immutable(dir)
      const error = yield* Effect.flip(fs.writeFileAtomic(join(dir, "vm.toml"), "x"))
      expect(error).toMatchObject({
        _tag: "AccessDenied",
        code: "access_denied",
        errno: "EPERM",
        subject: join(dir, "vm.toml")
      })
      expect(yield* Effect.flip(fs.makeDirectory(join(dir, "sub")))).toMatchObject({ code: "access_denied" })
    })
  )

  it.effect(
    "a full device is limit_reached with the free space; other errnos are a typed internal, never a defect",
    () =>
      Effect.gen(function* () {
        const full = yield* Effect.flip(
          fs.attempt("write", "/dev/full", () => import("node:fs/promises").then((m) => m.writeFile("/dev/full", "x")))
        )
        expect(full).toMatchObject({
          _tag: "LimitReached",
          code: "limit_reached",
          errno: "ENOSPC",
          subject: "/dev/full",
          needed_mb: 1
        })
        expect(full._tag === "LimitReached" && typeof full.available_mb).toBe("number")
        const io = yield* Effect.flip(
          fs.attempt("write", "/proc/version", () =>
            import("node:fs/promises").then((m) => m.writeFile("/proc/version", "x"))
          )
        )
        expect(io).toMatchObject({ _tag: "Internal", code: "internal", errno: "EIO", subject: "/proc/version" })
      })
  )
})

describe("operations on a data root that will not take the write", () => {
  it("create: a file standing where the VM's shared folder goes answers invalid_spec naming it, and leaves no VM", async () => {
    const h = harness()
    mkdirSync(join(h.root, "shared"), { recursive: true })
    writeFileSync(h.sharedDir("web"), "not a folder")
    const error = await h.fail(createVm, { name: "web", image: "tiny" })
    expect(error).toMatchObject({ code: "invalid_spec", subject: h.sharedDir("web") })
    expect(h.vmFolders()).toEqual([])
  })

  it("update: a VM folder that refuses writes answers access_denied naming vm.toml, not internal", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    immutable(h.vmDir("web"))
    const error = await h.fail(updateVm, { vm: "web", cpus: 3 })
    expect(error).toMatchObject({ code: "access_denied", subject: join(h.vmDir("web"), "vm.toml") })
  })

  it("update secrets: a secrets.toml that does not parse is invalid_spec naming the file, without quoting it", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    const file = join(h.vmDir("web"), "secrets.toml")
    writeFileSync(file, 'broken = "hunter2', { mode: 0o600 })
    const error = await h.fail(updateVm, { vm: "web", secrets: { hello: { token: "s3cret" } } })
    expect(error).toMatchObject({ code: "invalid_spec", subject: file })
    expect(JSON.stringify(error)).not.toMatch(/hunter2|s3cret/)
  })
})

describe("replaceDirectoryThen", () => {
  const setup = () => {
    const dir = mkdtempSync(join(tmpdir(), "stoat-replace-"))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const folder = (name: string, text: string) => {
      mkdirSync(join(dir, name))
      writeFileSync(join(dir, name, "mark"), text)
      return join(dir, name)
    }
    return { dir, folder, mark: (path: string) => readFileSync(join(path, "mark"), "utf8") }
  }

  it("installs the staged folder and drops the old one when the writes succeed", async () => {
    const { dir, folder, mark } = setup()
    const dest = folder("dest", "old")
    const staged = folder("stage", "new")
    expect(await Effect.runPromise(fs.replaceDirectoryThen(staged, dest, Effect.succeed(7)))).toBe(7)
    expect(mark(dest)).toBe("new")
    expect(readdirSync(dir)).toEqual(["dest"])
  })

  it("puts the old folder back and removes the staged one when the writes fail", async () => {
    const { dir, folder, mark } = setup()
    const dest = folder("dest", "old")
    const staged = folder("stage", "new")
    const exit = await Effect.runPromiseExit(fs.replaceDirectoryThen(staged, dest, Effect.fail("lock write failed")))
    expect(exit).toEqual(Exit.fail("lock write failed"))
    expect(mark(dest)).toBe("old")
    expect(readdirSync(dir)).toEqual(["dest"])
  })

  it("leaves nothing at the destination when there was nothing before and the writes fail", async () => {
    const { dir, folder } = setup()
    const staged = folder("stage", "new")
    const exit = await Effect.runPromiseExit(fs.replaceDirectoryThen(staged, join(dir, "dest"), Effect.fail("no")))
    expect(Exit.isFailure(exit)).toBe(true)
    expect(readdirSync(dir)).toEqual([])
  })
})

describe("readSmallFileSync (files read on every listing)", () => {
  const codeOf = (read: () => unknown): string | undefined => {
    try {
      read()
      return undefined
    } catch (error) {
      return (error as { code?: string }).code
    }
  }

  it("reads a regular file, and refuses a FIFO, a device, a folder and an oversized file without reading", () => {
    const dir = scratch()
    writeFileSync(join(dir, "plain"), "name = 'x'\n")
    expect(fs.readSmallFileSync(join(dir, "plain"), 1024)).toBe("name = 'x'\n")
    execFileSync("mkfifo", [join(dir, "fifo")])
    // A FIFO with no writer: a blocking read would never return.
    expect(codeOf(() => fs.readSmallFileSync(join(dir, "fifo"), 1024))).toBe(fs.NOT_REGULAR)
    expect(codeOf(() => fs.readSmallFileSync("/dev/zero", 1024))).toBe(fs.NOT_REGULAR)
    expect(codeOf(() => fs.readSmallFileSync(dir, 1024))).toBe("EISDIR")
    expect(codeOf(() => fs.readSmallFileSync(join(dir, "plain"), 4))).toBe("EFBIG")
    expect(codeOf(() => fs.readSmallFileSync(join(dir, "missing"), 1024))).toBe("ENOENT")
  })

  it("leaves no descriptor open, whatever the outcome", () => {
    const dir = scratch()
    execFileSync("mkfifo", [join(dir, "fifo")])
    writeFileSync(join(dir, "big"), "0123456789")
    const open = () => readdirSync("/proc/self/fd").length
    const before = open()
    for (let i = 0; i < 50; i++) {
      codeOf(() => fs.readSmallFileSync(join(dir, "fifo"), 1024))
      codeOf(() => fs.readSmallFileSync(join(dir, "big"), 4))
      codeOf(() => fs.readSmallFileSync(dir, 1024))
    }
    expect(open()).toBe(before)
  })
})
