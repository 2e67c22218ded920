import { execFileSync } from "node:child_process"
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync
} from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Cause, Effect, Exit, Option, type Scope } from "effect"
import { describe, expect, it, onTestFinished } from "vitest"
import { copyFrom, copyTo, createVm, startVm } from "../../src/operations/index.js"
import { toErrorInfo } from "../../src/errors.js"
import { openForRead, resolveHostPath } from "../../src/guest/confine.js"
import { harness } from "../harness.js"

/** A running VM "web", its (real) shared folder, and a folder outside it with a secret. */
const world = async () => {
  const h = harness()
  await h.ok(createVm, { name: "web", image: "tiny", agent_access: "manage" })
  await h.ok(startVm, { vm: "web" })
  const shared = h.sharedDir("web")
  mkdirSync(shared, { recursive: true })
  const outside = mkdtempSync(join(tmpdir(), "stoat-outside-"))
  onTestFinished(() => rmSync(outside, { recursive: true, force: true }))
  writeFileSync(join(outside, "secret"), "top secret")
  const guest = h.guest.fs("web")
  guest.write("/root/in.txt", "from the guest")
  return { h, shared, outside, guest }
}

const failure = async <A, E>(effect: Effect.Effect<A, E, Scope.Scope>) => {
  const exit = await Effect.runPromiseExit(Effect.scoped(effect))
  if (Exit.isSuccess(exit)) throw new Error(`expected a failure, got ${JSON.stringify(exit.value)}`)
  if (Option.isNone(Cause.failureOption(exit.cause))) throw new Error(Cause.pretty(exit.cause))
  return toErrorInfo(exit.cause)
}

describe("copy_to / copy_from inside the shared folder", () => {
  it("copies a relative path both ways and reports the resolved host path", async () => {
    const { h, shared, guest } = await world()
    writeFileSync(join(shared, "up.txt"), "to the guest")
    expect(await h.ok(copyTo, { vm: "web", local: "up.txt", remote: "/tmp/up.txt" })).toEqual({
      vm: "web",
      local: join(shared, "up.txt"),
      remote: "/tmp/up.txt",
      to_remote: true
    })
    expect(guest.readText("/tmp/up.txt")).toBe("to the guest")
    mkdirSync(join(shared, "sub"))
    expect(await h.ok(copyFrom, { vm: "web", local: "sub/in.txt", remote: "/root/in.txt" })).toMatchObject({
      local: join(shared, "sub", "in.txt"),
      to_remote: false
    })
    expect(readFileSync(join(shared, "sub", "in.txt"), "utf8")).toBe("from the guest")
  })

  it("accepts an absolute path inside, a symlink that stays inside, and a name with quotes and $()", async () => {
    const { h, shared, guest } = await world()
    writeFileSync(join(shared, "real.txt"), "real")
    symlinkSync("real.txt", join(shared, "link.txt"))
    await h.ok(copyTo, { vm: "web", local: join(shared, "link.txt"), remote: "/tmp/a" })
    expect(guest.readText("/tmp/a")).toBe("real")
    const odd = "it's $(id) `x`.txt"
    await h.ok(copyFrom, { vm: "web", local: odd, remote: "/root/in.txt" })
    expect(readFileSync(join(shared, odd), "utf8")).toBe("from the guest")
  })

  it("creates the shared folder of a VM that has none yet", async () => {
    const { h, shared } = await world()
    rmSync(shared, { recursive: true })
    await h.ok(copyFrom, { vm: "web", local: "in.txt", remote: "/root/in.txt" })
    expect(readFileSync(join(shared, "in.txt"), "utf8")).toBe("from the guest")
  })
})

describe("the shared folder confines the host side (access_denied)", () => {
  const cases: Array<[string, (w: Awaited<ReturnType<typeof world>>) => string]> = [
    ["an absolute path outside", ({ outside }) => join(outside, "secret")],
    ["/etc/passwd", () => "/etc/passwd"],
    ["a .. escape", () => "../../etc/passwd"],
    ["a .. escape through a subfolder", ({ shared }) => (mkdirSync(join(shared, "a")), "a/../../web2/x")],
    [
      "the shared folder's sibling with a common prefix",
      ({ shared, outside }) => (
        mkdirSync(`${shared}2`, { recursive: true }), writeFileSync(`${shared}2/x`, "x"), void outside, `${shared}2/x`
      )
    ],
    [
      "a symlink pointing outside",
      ({ shared, outside }) => (symlinkSync(join(outside, "secret"), join(shared, "link")), "link")
    ],
    [
      "a symlinked folder pointing outside",
      ({ shared, outside }) => (symlinkSync(outside, join(shared, "dir")), "dir/secret")
    ],
    [
      "a dangling symlink",
      ({ shared, outside }) => (symlinkSync(join(outside, "nothing"), join(shared, "dangling")), "dangling")
    ],
    [
      "a dangling symlink to a name inside",
      ({ shared }) => (symlinkSync("missing", join(shared, "dangling-in")), "dangling-in")
    ],
    ["a symlink loop", ({ shared }) => (symlinkSync("loop", join(shared, "loop")), "loop")],
    ["/dev/zero through a symlink", ({ shared }) => (symlinkSync("/dev/zero", join(shared, "zero")), "zero")]
  ]
  for (const [name, make] of cases) {
    it(`${name}: copy_to and copy_from both refuse, and nothing outside changes`, async () => {
      const w = await world()
      const local = make(w)
      expect((await w.h.fail(copyTo, { vm: "web", local, remote: "/tmp/x" })).code).toBe("access_denied")
      expect(w.guest.files.has("/tmp/x")).toBe(false)
      expect((await w.h.fail(copyFrom, { vm: "web", local, remote: "/root/in.txt" })).code).toBe("access_denied")
      expect(readFileSync(join(w.outside, "secret"), "utf8")).toBe("top secret")
      expect(existsSync(join(w.outside, "nothing"))).toBe(false)
    })
  }
})

describe("special files are usage", () => {
  it("a FIFO and a directory in the shared folder, for both directions", async () => {
    const { h, shared } = await world()
    execFileSync("mkfifo", [join(shared, "fifo")])
    mkdirSync(join(shared, "folder"))
    for (const local of ["fifo", "folder"]) {
      expect(await h.fail(copyTo, { vm: "web", local, remote: "/tmp/x" }), local).toMatchObject({
        code: "usage",
        subject: local
      })
      expect(await h.fail(copyFrom, { vm: "web", local, remote: "/root/in.txt" }), local).toMatchObject({
        code: "usage",
        subject: local
      })
    }
  })

  it("unconfined (the CLI), /dev/zero through a symlink and a FIFO are usage, and any readable host file is copied", async () => {
    const { h, shared, outside, guest } = await world()
    symlinkSync("/dev/zero", join(outside, "zero"))
    execFileSync("mkfifo", [join(outside, "fifo")])
    for (const local of [join(outside, "zero"), join(outside, "fifo"), "/dev/null", outside])
      expect((await h.fail(copyTo, { vm: "web", local, remote: "/tmp/x", unconfined: true })).code, local).toBe("usage")
    await h.ok(copyTo, { vm: "web", local: join(outside, "secret"), remote: "/tmp/x", unconfined: true })
    expect(guest.readText("/tmp/x")).toBe("top secret")
    await h.ok(copyFrom, { vm: "web", local: join(outside, "back"), remote: "/root/in.txt", unconfined: true })
    expect(readFileSync(join(outside, "back"), "utf8")).toBe("from the guest")
    expect((await h.fail(copyTo, { vm: "web", local: "relative", remote: "/tmp/x", unconfined: true })).code).toBe(
      "usage"
    )
    void shared
  })
})

describe("input guards", () => {
  it.each([
    ["a relative guest path", { local: "a", remote: "tmp/x" }],
    ["a NUL in the guest path", { local: "a", remote: "/tmp/\0x" }],
    ["a NUL in the host path", { local: "a\0b", remote: "/tmp/x" }],
    ["an empty host path", { local: "", remote: "/tmp/x" }],
    ["a huge host path", { local: "x".repeat(5000), remote: "/tmp/x" }],
    ["an unknown field", { local: "a", remote: "/tmp/x", mode: "0644" }]
  ])("%s is usage", async (_, input) => {
    const { h } = await world()
    expect((await h.fail(copyTo, { vm: "web", ...input })).code).toBe("usage")
    expect((await h.fail(copyFrom, { vm: "web", ...input })).code).toBe("usage")
  })

  it("a stopped VM is not_running; a missing host file not_found; a missing host folder not_found", async () => {
    const { h } = await world()
    expect((await h.fail(copyTo, { vm: "web", local: "absent", remote: "/tmp/x" })).code).toBe("not_found")
    expect((await h.fail(copyFrom, { vm: "web", local: "no/such/folder/x", remote: "/root/in.txt" })).code).toBe(
      "not_found"
    )
    expect((await h.fail(copyFrom, { vm: "web", local: "x", remote: "/root/absent" })).code).toBe("not_found")
    await h.ok(createVm, { name: "cold", image: "tiny" })
    expect((await h.fail(copyTo, { vm: "cold", local: "x", remote: "/tmp/x" })).code).toBe("not_running")
  })
})

describe("a path that changes between the check and the open", () => {
  it("a file swapped for a symlink after resolving is refused at open (O_NOFOLLOW)", async () => {
    const { shared, outside } = await world()
    writeFileSync(join(shared, "f"), "mine")
    const resolved = await Effect.runPromise(resolveHostPath("f", shared))
    unlinkSync(join(shared, "f"))
    symlinkSync(join(outside, "secret"), join(shared, "f"))
    expect(await failure(openForRead(resolved, "f", shared))).toMatchObject({ code: "access_denied", subject: "f" })
  })

  it("a folder swapped for a symlink to outside after resolving is refused by the descriptor's real path", async () => {
    const { shared, outside } = await world()
    mkdirSync(join(shared, "sub"))
    writeFileSync(join(shared, "sub", "secret"), "mine")
    const resolved = await Effect.runPromise(resolveHostPath("sub/secret", shared))
    renameSync(join(shared, "sub"), join(shared, "old"))
    symlinkSync(outside, join(shared, "sub"))
    expect(await failure(openForRead(resolved, "sub/secret", shared))).toMatchObject({ code: "access_denied" })
  })

  it("once opened, a swap of the name changes nothing: the opened file is what is read", async () => {
    const { shared, outside } = await world()
    writeFileSync(join(shared, "f"), "mine")
    const content = await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const opened = yield* openForRead(yield* resolveHostPath("f", shared), "f", shared)
          unlinkSync(join(shared, "f"))
          symlinkSync(join(outside, "secret"), join(shared, "f"))
          return readFileSync(opened.path, "utf8")
        })
      )
    )
    expect(content).toBe("mine")
  })
})
