import { randomBytes } from "node:crypto"
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Cause, type Context, Effect, Exit, Fiber, Option, Scope } from "effect"
import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { waitForSsh, type CannotReach } from "../../src/errors.js"
import { makeGuestTransport } from "../../src/ssh/live.js"
import type { GuestTransport, SshTarget } from "../../src/ports/guest-transport.js"
import {
  closedPort,
  sftpIdentity,
  sftpServerPath,
  startSilentListener,
  startTestServer,
  type TestSshServer
} from "./server.js"
import { alive } from "../processes.js"

type Transport = Context.Tag.Service<GuestTransport>

const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect)
const failure = async <A, E>(effect: Effect.Effect<A, E>): Promise<E> => {
  const exit = await Effect.runPromiseExit(effect)
  if (Exit.isSuccess(exit)) throw new Error("expected a failure")
  const error = Cause.failureOption(exit.cause)
  if (Option.isNone(error)) throw new Error(`expected a typed failure, got ${Cause.pretty(exit.cause)}`)
  return error.value
}
const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8")
const word = fc.string({ unit: "binary", maxLength: 40 }).filter((w) => !w.includes("\0"))

let server: TestSshServer
let scope: Scope.CloseableScope
let transport: Transport
let target: SshTarget

/** A transport of its own (so connection counts start at zero), closed with the suite. */
const freshTransport = async () => run(Scope.extend(makeGuestTransport({ killGraceMs: 500 }), scope))

beforeAll(async () => {
  server = await startTestServer()
  scope = Effect.runSync(Scope.make())
  transport = await freshTransport()
  target = { vm: "alpha", port: server.port, user: "root", privateKeyPath: server.clientKey.privateKeyPath }
})
afterAll(async () => {
  await run(Scope.close(scope, Exit.void))
  await server.close()
})

describe("exec", () => {
  it("delivers argv verbatim: spaces, quotes, $(), newlines, unicode", async () => {
    const tricky = [
      "a b",
      "it's",
      '"dq"',
      "$(echo pwned)",
      "`id`",
      "line1\nline2",
      "ünïcødé ✓ 𝄞",
      "",
      "*",
      "-n",
      "\\",
      ";|&<>"
    ]
    const out = await run(transport.exec(target, ["printf", "%s\\0", ...tricky]))
    expect(out.exitCode).toBe(0)
    expect(text(out.stdout)).toBe(tricky.map((w) => `${w}\0`).join(""))
  })

  it("delivers any argv verbatim (property)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(word, { minLength: 1, maxLength: 6 }), async (words) => {
        const out = await run(transport.exec(target, ["printf", "%s\\0", ...words]))
        expect(text(out.stdout)).toBe(words.map((w) => `${w}\0`).join(""))
      }),
      { numRuns: 60 }
    )
  })

  it("feeds stdin then EOF", async () => {
    const out = await run(transport.exec(target, ["cat"], { stdin: "hello\nworld" }))
    expect(text(out.stdout)).toBe("hello\nworld")
    const big = randomBytes(1024 * 1024)
    const counted = await run(transport.exec(target, ["wc", "-c"], { stdin: big }))
    expect(text(counted.stdout).trim()).toBe(String(big.length))
    // No stdin given: EOF at once, so `cat` does not wait.
    const empty = await run(transport.exec(target, ["cat"], { timeoutMs: 5_000 }))
    expect(empty.timedOut).toBe(false)
    expect(empty.stdout.length).toBe(0)
  })

  it("reports exit codes, a signal as 128+n, and stderr apart", async () => {
    const out = await run(transport.exec(target, ["sh", "-c", "echo out; echo err >&2; exit 3"]))
    expect(out).toMatchObject({ exitCode: 3, timedOut: false, truncated: false })
    expect(text(out.stdout)).toBe("out\n")
    expect(text(out.stderr)).toBe("err\n")
    const killed = await run(transport.exec(target, ["sh", "-c", "kill -TERM $$"]))
    expect(killed.exitCode).toBe(143)
  })

  it("sets env and cwd without shell interpretation", async () => {
    const dir = join(server.files, "it's a $(dir)")
    mkdirSync(dir)
    const out = await run(
      transport.exec(target, ["sh", "-c", 'printf "%s|%s|%s" "$PWD" "$A" "$B"'], {
        cwd: dir,
        env: { A: "x y", B: "$(echo no) 'q'" }
      })
    )
    expect(text(out.stdout)).toBe(`${dir}|x y|$(echo no) 'q'`)
    const missing = await run(transport.exec(target, ["true"], { cwd: "/nonexistent/dir" }))
    expect(missing.exitCode).not.toBe(0)
  })

  it("passes cwd and env values verbatim (property)", async () => {
    await fc.assert(
      fc.asyncProperty(word, fc.array(word, { maxLength: 4 }), async (value, words) => {
        const out = await run(
          transport.exec(target, ["sh", "-c", 'printf "%s\\0" "$PWD" "$V" "$@"', "x", ...words], {
            cwd: server.files,
            env: { V: value }
          })
        )
        expect(text(out.stdout)).toBe([server.files, value, ...words].map((w) => `${w}\0`).join(""))
      }),
      { numRuns: 30 }
    )
  })

  it("refuses a bad env name as a defect before contacting the guest", async () => {
    const exit = await Effect.runPromiseExit(transport.exec(target, ["true"], { env: { "A-B": "1" } }))
    expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
  })

  it("times out: stops the command with TERM and returns the partial output", async () => {
    const pidFile = join(server.files, `timeout-${Date.now()}.pid`)
    const out = await run(
      transport.exec(target, ["sh", "-c", `echo $$ > '${pidFile}'; echo partial; exec sleep 30`], { timeoutMs: 500 })
    )
    expect(out.timedOut).toBe(true)
    expect(text(out.stdout)).toBe("partial\n")
    expect(out.exitCode).toBe(143)
    expect(server.signals.at(-1)).toBe("TERM")
    const pid = Number(readFileSync(pidFile, "utf8"))
    await expect.poll(() => alive(pid), { timeout: 2_000 }).toBe(false)
  })

  it("times out: a command that ignores TERM gets KILL after the grace", async () => {
    const pidFile = join(server.files, `stubborn-${Date.now()}.pid`)
    const signals = server.signals.length
    const out = await run(
      transport.exec(target, ["sh", "-c", `trap '' TERM; echo $$ > '${pidFile}'; sleep 30`], { timeoutMs: 300 })
    )
    expect(out).toMatchObject({ timedOut: true, exitCode: 137 })
    expect(server.signals.slice(signals)).toEqual(["TERM", "KILL"])
    const pid = Number(readFileSync(pidFile, "utf8"))
    await expect.poll(() => alive(pid), { timeout: 2_000 }).toBe(false)
  })

  it("keeps an exit status that arrives in the same read as the exec's success reply", async () => {
    const outs = await run(
      Effect.all(
        Array.from({ length: 20 }, (_, i) => transport.exec(target, ["stoat-test-instant", String(i)])),
        { concurrency: 4 }
      )
    )
    expect(outs.map((out) => [out.exitCode, text(out.stdout)])).toEqual(
      Array.from({ length: 20 }, (_, i) => [i, "instant\n"])
    )
  })

  it("a channel closed without an exit status is cannot_reach, never exit code 255", async () => {
    server.withholdExitStatus = 1
    const error = await failure(transport.exec(target, ["sh", "-c", "echo done; exit 7"]))
    expect(error).toMatchObject({ code: "cannot_reach" })
    expect(error.message).toMatch(/without its exit status/)
    expect((await run(transport.exec(target, ["sh", "-c", "exit 7"]))).exitCode).toBe(7)
  })

  it("caps each stream and says so", async () => {
    const out = await run(
      transport.exec(target, ["sh", "-c", "head -c 100000 /dev/zero; head -c 10 /dev/zero >&2"], {
        maxOutputBytes: 1000
      })
    )
    expect(out.stdout.length).toBe(1000)
    expect(out.stderr.length).toBe(10)
    expect(out.truncated).toBe(true)
    expect(out.exitCode).toBe(0)
  })

  it("streams output to callbacks as it arrives", async () => {
    const seen: Array<string> = []
    const errs: Array<string> = []
    await run(
      transport.exec(target, ["sh", "-c", "echo one; echo two >&2"], {
        onStdout: (chunk) => seen.push(text(chunk)),
        onStderr: (chunk) => errs.push(text(chunk))
      })
    )
    expect(seen.join("")).toBe("one\n")
    expect(errs.join("")).toBe("two\n")
  })

  it("closes the channel when the exec is interrupted", async () => {
    const pidFile = join(server.files, `interrupt-${Date.now()}.pid`)
    const fiber = Effect.runFork(transport.exec(target, ["sh", "-c", `echo $$ > '${pidFile}'; exec sleep 30`]))
    await expect
      .poll(() => existsSync(pidFile) && readFileSync(pidFile, "utf8").trim() !== "", { timeout: 5_000 })
      .toBe(true)
    const pid = Number(readFileSync(pidFile, "utf8"))
    await run(Fiber.interrupt(fiber))
    await expect.poll(() => alive(pid), { timeout: 3_000 }).toBe(false)
  })
})

describe("connection pool", () => {
  it("runs calls one after another over one TCP connection", async () => {
    const own = await freshTransport()
    const before = server.connections
    for (let i = 0; i < 5; i++) await run(own.exec(target, ["true"]))
    writeFileSync(join(server.files, "one.txt"), "1")
    await run(own.readFile(target, join(server.files, "one.txt")))
    expect(server.connections - before).toBe(1)
  })

  it("never opens a channel on a connection while a command runs on it; concurrent calls use up to maxConnectionsPerVm connections", async () => {
    const own = await run(Scope.extend(makeGuestTransport({ maxConnectionsPerVm: 3 }), scope))
    const before = server.connections
    server.mostCommandsAtOnce = 0
    const pooled = { ...target, vm: "pooled" }
    const outs = await run(
      Effect.all(
        Array.from({ length: 20 }, (_, i) => own.exec(pooled, ["sh", "-c", `sleep 0.05; echo ${i}`])),
        { concurrency: "unbounded" }
      )
    )
    expect(outs.map((o) => text(o.stdout))).toEqual(Array.from({ length: 20 }, (_, i) => `${i}\n`))
    expect(server.mostCommandsAtOnce).toBe(1)
    expect(server.connections - before).toBeGreaterThan(1)
    expect(server.connections - before).toBeLessThanOrEqual(3)
  })

  it("reconnects after the server drops the connection", async () => {
    const own = await freshTransport()
    const before = server.connections
    expect(text((await run(own.exec(target, ["echo", "a"]))).stdout)).toBe("a\n")
    server.dropAll()
    // Straight after the drop, before the client may have noticed: one transparent retry.
    expect(text((await run(own.exec(target, ["echo", "b"]))).stdout)).toBe("b\n")
    server.dropAll()
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(text((await run(own.exec(target, ["echo", "c"]))).stdout)).toBe("c\n")
    expect(server.connections - before).toBe(3)
  })

  it("fails CannotReach when the connection dies during an exec, and the next call reconnects", async () => {
    const own = await freshTransport()
    const fiber = Effect.runFork(Effect.either(own.exec(target, ["sleep", "5"])))
    await expect.poll(() => server.commands.at(-1), { timeout: 5_000 }).toBe("'sleep' '5'")
    server.dropAll()
    const result = await run(Fiber.join(fiber))
    expect(result._tag).toBe("Left")
    if (result._tag === "Left") expect(result.left.message).toMatch(/was lost/)
    expect(text((await run(own.exec(target, ["echo", "again"]))).stdout)).toBe("again\n")
  })

  it("uses SFTP again after the connection was dropped", async () => {
    const own = await freshTransport()
    writeFileSync(join(server.files, "again.txt"), "x")
    await run(own.readFile(target, join(server.files, "again.txt")))
    server.dropAll()
    expect(text((await run(own.readFile(target, join(server.files, "again.txt")))).data)).toBe("x")
  })

  it("turns a throwing output callback into a defect and still closes the channel", async () => {
    const exit = await Effect.runPromiseExit(
      transport.exec(target, ["echo", "x"], {
        onStdout: () => {
          throw new Error("sink broke")
        }
      })
    )
    expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
    expect(text((await run(transport.exec(target, ["echo", "ok"]))).stdout)).toBe("ok\n")
  })

  it("an exec sshd refuses fails cannot_reach at once: it is never asked again", async () => {
    await run(transport.exec(target, ["true"]))
    const before = server.commands.length
    server.refuseExecs = 2
    const error = await failure(transport.exec(target, ["echo", "never"]))
    expect(server.refuseExecs).toBe(1)
    server.refuseExecs = 0
    expect(error).toMatchObject({ code: "cannot_reach" })
    expect(error.message).toMatch(/refused to start the command/)
    expect(server.commands.length).toBe(before)
  })

  it("release(vm) closes that VM's connection", async () => {
    const own = await freshTransport()
    const before = server.connections
    await run(own.exec(target, ["true"]))
    await run(own.release("alpha"))
    await run(own.exec(target, ["true"]))
    expect(server.connections - before).toBe(2)
  })

  it("fails CannotReach advising vm.wait first on a closed port", async () => {
    const port = await closedPort()
    const error = (await failure(transport.exec({ ...target, vm: "ghost", port }, ["true"]))) as CannotReach
    expect(error._tag).toBe("CannotReach")
    expect(error.code).toBe("cannot_reach")
    expect(error.message).toContain(`ssh could not connect to VM ghost on port ${port}`)
    expect(error.hint).toEqual(waitForSsh("ghost"))
    expect(error.subject).toBe("ghost")
  })

  it("fails CannotReach within readyTimeout when the port accepts but no sshd answers", async () => {
    const silent = await startSilentListener()
    try {
      const own = await run(Scope.extend(makeGuestTransport({ readyTimeoutMs: 300 }), scope))
      const started = Date.now()
      const error = await failure(own.exec({ ...target, vm: "booting", port: silent.port }, ["true"]))
      expect(error._tag).toBe("CannotReach")
      expect(Date.now() - started).toBeLessThan(3_000)
    } finally {
      await silent.close()
    }
  })

  it("fails CannotReach when the key is refused", async () => {
    const error = await failure(
      transport.exec({ ...target, vm: "wrongkey", privateKeyPath: server.root.hostKey }, ["true"])
    )
    expect(error._tag).toBe("CannotReach")
  })
})

describe("pool lifetime", () => {
  const dialFailures = <A, E>(effects: ReadonlyArray<Effect.Effect<A, E>>) =>
    run(
      Effect.all(
        effects.map((e) => Effect.flip(e)),
        { concurrency: "unbounded" }
      )
    )

  it("concurrent first calls to one VM, execs and SFTP mixed, dial no more than maxConnectionsPerVm connections", async () => {
    const own = await run(Scope.extend(makeGuestTransport({ maxConnectionsPerVm: 2 }), scope))
    const before = server.connections
    writeFileSync(join(server.files, "shared.txt"), "s")
    const execs = Array.from({ length: 6 }, (_, i) =>
      Effect.map(own.exec(target, ["echo", String(i)]), (out) => text(out.stdout))
    )
    const reads = Array.from({ length: 4 }, () =>
      Effect.map(own.readFile(target, join(server.files, "shared.txt")), (got) => text(got.data))
    )
    const outs = await run(Effect.all([...execs, ...reads], { concurrency: "unbounded" }))
    expect(outs).toEqual(["0\n", "1\n", "2\n", "3\n", "4\n", "5\n", "s", "s", "s", "s"])
    expect(server.connections - before).toBeLessThanOrEqual(2)
  })

  it("concurrent first calls to a VM whose sshd never answers share one failed dial; the next call dials again", async () => {
    const silent = await startSilentListener()
    try {
      const own = await run(Scope.extend(makeGuestTransport({ readyTimeoutMs: 300 }), scope))
      const booting = { ...target, vm: "booting", port: silent.port }
      const errors = await dialFailures(Array.from({ length: 5 }, () => own.exec(booting, ["true"])))
      expect(errors.map((e) => e._tag)).toEqual(Array.from({ length: 5 }, () => "CannotReach"))
      expect(silent.accepted()).toBe(1)
      // A failed dial is not remembered: the next call tries again.
      expect((await failure(own.exec(booting, ["true"])))._tag).toBe("CannotReach")
      expect(silent.accepted()).toBe(2)
    } finally {
      await silent.close()
    }
  })

  it("closes a VM's connection once it has been idle, never during a call, and dials again on the next call", async () => {
    const own = await run(Scope.extend(makeGuestTransport({ idleTimeoutMs: 150 }), scope))
    const idle = { ...target, vm: "idle" }
    const before = server.connections
    const open = server.openConnections()
    // A call longer than the idle time keeps its connection: idleness counts from the last call's end.
    expect(text((await run(own.exec(idle, ["sh", "-c", "sleep 0.5; echo done"]))).stdout)).toBe("done\n")
    expect(server.connections - before).toBe(1)
    await expect.poll(() => server.openConnections(), { timeout: 10_000 }).toBe(open)
    expect(text((await run(own.exec(idle, ["echo", "back"]))).stdout)).toBe("back\n")
    expect(server.connections - before).toBe(2)
  })

  it("redials after a dropped connection, and the calls after it share the new ones", async () => {
    const own = await run(Scope.extend(makeGuestTransport({ maxConnectionsPerVm: 2 }), scope))
    const before = server.connections
    await run(own.exec(target, ["true"]))
    server.dropAll()
    await expect.poll(() => server.openConnections(), { timeout: 5_000 }).toBe(0)
    const outs = await run(
      Effect.all(
        Array.from({ length: 10 }, (_, i) => own.exec(target, ["echo", String(i)])),
        { concurrency: "unbounded" }
      )
    )
    expect(outs.map((out) => text(out.stdout))).toEqual(Array.from({ length: 10 }, (_, i) => `${i}\n`))
    expect(server.connections - before).toBeLessThanOrEqual(3)
  })

  it("closes every pooled connection when the transport's scope closes", async () => {
    const own = Effect.runSync(Scope.make())
    const transport = await run(Scope.extend(makeGuestTransport(), own))
    const open = server.openConnections()
    await run(transport.exec({ ...target, vm: "scoped" }, ["true"]))
    expect(server.openConnections()).toBe(open + 1)
    await run(Scope.close(own, Exit.void))
    await expect.poll(() => server.openConnections(), { timeout: 5_000 }).toBe(open)
  })
})

describe("probe", () => {
  it("is true only once the SSH- banner arrives", async () => {
    expect(await run(transport.probe(server.port, 2_000))).toBe(true)
    const silent = await startSilentListener()
    try {
      const started = Date.now()
      expect(await run(transport.probe(silent.port, 300))).toBe(false)
      expect(Date.now() - started).toBeLessThan(2_000)
      expect(silent.accepted()).toBe(1)
    } finally {
      await silent.close()
    }
    expect(await run(transport.probe(await closedPort(), 300))).toBe(false)
  })

  it("is gentle: concurrent probes of one port use one connection at a time", async () => {
    const silent = await startSilentListener()
    try {
      const started = Date.now()
      await run(
        Effect.all([transport.probe(silent.port, 200), transport.probe(silent.port, 200)], { concurrency: "unbounded" })
      )
      expect(Date.now() - started).toBeGreaterThanOrEqual(390)
      expect(silent.accepted()).toBe(2)
    } finally {
      await silent.close()
    }
  })
})

describe("sftp", () => {
  it("has OpenSSH's sftp-server to serve files (scripts/setup.sh installs openssh-sftp-server)", () => {
    expect(sftpServerPath).toBeDefined()
  })

  const file = (name: string) => join(server.files, name)
  /** A file the sftp-server user may not touch. */
  const forbidden = (name: string, content = "secret") => {
    writeFileSync(file(name), content)
    chmodSync(file(name), 0o000)
    if (sftpIdentity) chownSync(file(name), 0, 0)
    return file(name)
  }

  it("reads whole files, ranges, and reports the full size", async () => {
    writeFileSync(file("read.txt"), "0123456789")
    expect(await run(transport.readFile(target, file("read.txt")))).toEqual({
      data: Buffer.from("0123456789"),
      size: 10
    })
    const part = await run(transport.readFile(target, file("read.txt"), { offset: 3, maxBytes: 4 }))
    expect(text(part.data)).toBe("3456")
    expect(part.size).toBe(10)
    expect(text((await run(transport.readFile(target, file("read.txt"), { offset: 8 }))).data)).toBe("89")
    expect(await run(transport.readFile(target, file("read.txt"), { offset: 20 }))).toEqual({
      data: Buffer.alloc(0),
      size: 10
    })
    // Files whose stat size is 0 but which have content (/proc): read to EOF, size from what was read.
    const proc = await run(transport.readFile(target, "/proc/self/status"))
    expect(text(proc.data)).toMatch(/^Name:/)
    expect(proc.size).toBe(proc.data.length)
    const big = randomBytes(300_000)
    writeFileSync(file("big.bin"), big)
    const got = await run(transport.readFile(target, file("big.bin"), { offset: 1000, maxBytes: 200_000 }))
    expect(Buffer.from(got.data).equals(big.subarray(1000, 201_000))).toBe(true)
    expect(got.size).toBe(300_000)
  })

  it("maps a missing path to NotFound and a forbidden one to AccessDenied", async () => {
    const missing = await failure(transport.readFile(target, file("nope.txt")))
    expect(missing).toMatchObject({ _tag: "NotFound", code: "not_found", subject: file("nope.txt") })
    const denied = await failure(transport.readFile(target, forbidden("secret.txt")))
    expect(denied).toMatchObject({ _tag: "AccessDenied", code: "access_denied", subject: file("secret.txt") })
    expect(await failure(transport.writeFile(target, file("no/such/dir/x"), Buffer.from("x")))).toMatchObject({
      _tag: "NotFound"
    })
    expect(await failure(transport.writeFile(target, forbidden("ro.txt"), Buffer.from("x")))).toMatchObject({
      _tag: "AccessDenied"
    })
  })

  it("writes, appends and sets the mode exactly", async () => {
    await run(transport.writeFile(target, file("w.txt"), Buffer.from("hello "), { mode: 0o640 }))
    await run(transport.writeFile(target, file("w.txt"), Buffer.from("world"), { append: true }))
    expect(readFileSync(file("w.txt"), "utf8")).toBe("hello world")
    expect(statSync(file("w.txt")).mode & 0o777).toBe(0o640)
    await run(transport.writeFile(target, file("w.txt"), Buffer.from("new"), { mode: 0o755 }))
    expect(readFileSync(file("w.txt"), "utf8")).toBe("new")
    expect(statSync(file("w.txt")).mode & 0o777).toBe(0o755)
    const big = randomBytes(700_000)
    await run(transport.writeFile(target, file("big-w.bin"), big))
    expect(readFileSync(file("big-w.bin")).equals(big)).toBe(true)
  })

  it("uploads and downloads files", async () => {
    const local = join(server.root.root, "local.bin")
    const data = randomBytes(2 * 1024 * 1024)
    writeFileSync(local, data)
    await run(transport.upload(target, local, file("up.bin")))
    expect(readFileSync(file("up.bin")).equals(data)).toBe(true)
    const back = join(server.root.root, "back.bin")
    await run(transport.download(target, file("up.bin"), back))
    expect(readFileSync(back).equals(data)).toBe(true)
    expect(
      await failure(transport.download(target, file("absent.bin"), join(server.root.root, "x.bin")))
    ).toMatchObject({ _tag: "NotFound" })
    expect(existsSync(join(server.root.root, "x.bin"))).toBe(false)
    expect(await failure(transport.upload(target, join(server.root.root, "absent"), file("y.bin")))).toMatchObject({
      _tag: "NotFound",
      subject: join(server.root.root, "absent")
    })
  })
})

describe("latency", () => {
  it("measures exec round trips over one pooled connection", async () => {
    await run(transport.exec(target, ["true"]))
    const times: Array<number> = []
    for (let i = 0; i < 200; i++) {
      const started = performance.now()
      await run(transport.exec(target, ["true"]))
      times.push(performance.now() - started)
    }
    times.sort((a, b) => a - b)
    const median = times[100] ?? 0
    console.log(
      `exec round trip over one pooled connection: median ${median.toFixed(2)} ms, p90 ${(times[180] ?? 0).toFixed(2)} ms (200 runs of true)`
    )
    expect(median).toBeLessThan(1_000)
  })
})
