import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { BootPlan } from "../../src/ports/hypervisor.js"
import { GuestTransport, type SshTarget } from "../../src/ports/guest-transport.js"
import { FakeGuest, FakeGuestState, FakeHypervisorState } from "../../src/testing/index.js"

const target: SshTarget = { vm: "web", port: 2222, user: "root", privateKeyPath: "/nowhere" }
const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8")

/** Runs `body` against a FakeGuest without a hypervisor (every port answers). */
const standalone = <A, E>(state: FakeGuestState, body: (transport: GuestTransport["Type"]) => Effect.Effect<A, E>) =>
  Effect.provide(Effect.flatMap(GuestTransport, body), FakeGuest(state))

describe("FakeGuest exec: the default interpreter", () => {
  it.effect("true, false, echo (and echo -n)", () =>
    standalone(new FakeGuestState(), (guest) =>
      Effect.gen(function* () {
        expect((yield* guest.exec(target, ["true"])).exitCode).toBe(0)
        expect((yield* guest.exec(target, ["false"])).exitCode).toBe(1)
        expect(text((yield* guest.exec(target, ["echo", "a", "b c"])).stdout)).toBe("a b c\n")
        expect(text((yield* guest.exec(target, ["echo", "-n", "x"])).stdout)).toBe("x")
      })
    )
  )

  it.effect("cat reads guest files (relative to cwd), stdin without a path, and reports missing files", () => {
    const state = new FakeGuestState()
    state.fs("web").writeText("/etc/motd", "hello\n")
    state.fs("web").writeText("/srv/app/conf", "k=v\n")
    return standalone(state, (guest) =>
      Effect.gen(function* () {
        expect(text((yield* guest.exec(target, ["cat", "/etc/motd"])).stdout)).toBe("hello\n")
        expect(text((yield* guest.exec(target, ["cat", "conf"], { cwd: "/srv/app" })).stdout)).toBe("k=v\n")
        expect(text((yield* guest.exec(target, ["cat"], { stdin: "piped" })).stdout)).toBe("piped")
        const missing = yield* guest.exec(target, ["cat", "/nope"])
        expect(missing.exitCode).toBe(1)
        expect(text(missing.stderr)).toMatch(/No such file/)
        // Another VM has its own filesystem.
        expect((yield* guest.exec({ ...target, vm: "other" }, ["cat", "/etc/motd"])).exitCode).toBe(1)
      })
    )
  })

  it.effect("sh -c runs exactly those commands, with quotes; other shell syntax and unknown programs fail", () =>
    standalone(new FakeGuestState(), (guest) =>
      Effect.gen(function* () {
        expect(text((yield* guest.exec(target, ["sh", "-c", `echo 'a  b' "c \\"d\\"" e\\ f`])).stdout)).toBe(
          'a  b c "d" e f\n'
        )
        expect((yield* guest.exec(target, ["sh", "-c", "false"])).exitCode).toBe(1)
        expect((yield* guest.exec(target, ["sh", "-c", "echo hi | cat"])).exitCode).toBe(2)
        expect((yield* guest.exec(target, ["sh", "-c", "echo $HOME"])).exitCode).toBe(2)
        expect((yield* guest.exec(target, ["sh", "-c", "echo 'open"])).exitCode).toBe(2)
        const unknown = yield* guest.exec(target, ["apt-get", "install", "x"])
        expect(unknown.exitCode).toBe(127)
        expect(text(unknown.stderr)).toMatch(/apt-get: not found/)
      })
    )
  )

  it.effect("a custom handler scripts results; output is capped per stream and streamed to the callbacks", () => {
    const state = new FakeGuestState()
    state.execHandler = (argv) => ({ exitCode: 7, stdout: "0123456789", stderr: argv.join(",") })
    const chunks: string[] = []
    return standalone(state, (guest) =>
      Effect.gen(function* () {
        const out = yield* guest.exec(target, ["a", "b"], {
          maxOutputBytes: 4,
          onStdout: (chunk) => chunks.push(text(chunk))
        })
        expect(out).toMatchObject({ exitCode: 7, truncated: true, timedOut: false })
        expect(text(out.stdout)).toBe("0123")
        expect(text(out.stderr)).toBe("a,b")
        expect(chunks).toEqual(["0123"])
        expect(state.execs.map((call) => call.argv)).toEqual([["a", "b"]])
      })
    )
  })
})

describe("FakeGuest files", () => {
  it.effect("readFile honours offset and maxBytes and reports the full size", () => {
    const state = new FakeGuestState()
    state.fs("web").writeText("/root/f", "abcdef")
    return standalone(state, (guest) =>
      Effect.gen(function* () {
        expect(yield* guest.readFile(target, "/root/f", { offset: 2, maxBytes: 3 })).toEqual({
          data: new Uint8Array(Buffer.from("cde")),
          size: 6
        })
        expect((yield* Effect.flip(guest.readFile(target, "/root/missing")))._tag).toBe("NotFound")
        expect((yield* Effect.flip(guest.readFile(target, "/root")))._tag).toBe("Usage")
      })
    )
  })

  it.effect("writeFile needs the parent folder, keeps or sets the mode, appends, and honours denied paths", () => {
    const state = new FakeGuestState()
    state.fs("web").denied.add("/etc/shadow")
    return standalone(state, (guest) =>
      Effect.gen(function* () {
        yield* guest.writeFile(target, "/tmp/a", Buffer.from("one"), { mode: 0o600 })
        yield* guest.writeFile(target, "/tmp/a", Buffer.from("two"), { append: true })
        expect(state.fs("web").files.get("/tmp/a")).toEqual({
          data: new Uint8Array(Buffer.from("onetwo")),
          mode: 0o600
        })
        expect((yield* Effect.flip(guest.writeFile(target, "/no/such/dir/f", Buffer.from("x"))))._tag).toBe("NotFound")
        expect((yield* Effect.flip(guest.writeFile(target, "/etc/shadow", Buffer.from("x"))))._tag).toBe("AccessDenied")
        expect((yield* Effect.flip(guest.readFile(target, "/etc/shadow")))._tag).toBe("AccessDenied")
      })
    )
  })

  it.effect("upload and download copy between the host and the guest", () => {
    const dir = mkdtempSync(join(tmpdir(), "stoat-fake-guest-"))
    const state = new FakeGuestState()
    writeFileSync(join(dir, "up.txt"), "from host")
    return standalone(state, (guest) =>
      Effect.gen(function* () {
        yield* guest.upload(target, join(dir, "up.txt"), "/root/up.txt")
        expect(state.fs("web").readText("/root/up.txt")).toBe("from host")
        yield* guest.download(target, "/root/up.txt", join(dir, "down.txt"))
        expect(readFileSync(join(dir, "down.txt"), "utf8")).toBe("from host")
        expect((yield* Effect.flip(guest.upload(target, join(dir, "missing"), "/root/x")))._tag).toBe("NotFound")
      })
    ).pipe(Effect.ensuring(Effect.sync(() => rmSync(dir, { recursive: true, force: true }))))
  })
})

describe("FakeGuest reachability", () => {
  const plan = (port: number) => ({ vm: { name: "web", dir: "/data/web" }, sshPort: port }) as unknown as BootPlan

  it.effect(
    "probe follows the shared FakeHypervisorState and unreachablePorts; guest calls to a stopped VM are cannot_reach",
    () => {
      const hypervisor = new FakeHypervisorState()
      const state = new FakeGuestState()
      return Effect.provide(
        Effect.gen(function* () {
          const guest = yield* GuestTransport
          expect(yield* guest.probe(2222)).toBe(false)
          expect((yield* Effect.flip(guest.exec(target, ["true"])))._tag).toBe("CannotReach")
          hypervisor.running.set("/data/web", { plan: plan(2222), startedAt: "now" })
          expect(yield* guest.probe(2222)).toBe(true)
          expect(yield* guest.probe(2223)).toBe(false)
          state.unreachablePorts.add(2222)
          expect(yield* guest.probe(2222)).toBe(false)
          expect((yield* Effect.flip(guest.readFile(target, "/etc/motd")))._tag).toBe("CannotReach")
          expect(state.probes).toEqual([2222, 2222, 2223, 2222])
          yield* guest.release("web")
          yield* guest.release()
          expect(state.releases).toEqual(["web", undefined])
        }),
        FakeGuest(state, hypervisor)
      )
    }
  )
})
