/**
 * The job scripts run by a real POSIX shell: the ssh test server executes commands with this
 * host's /bin/sh, so launch, detach, pid/exit files, facts and group signals are exercised for
 * real (the e2e suite repeats this on the tiny guest's busybox sh).
 */
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type Context, Effect, Exit, Layer, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { dataRootAt } from "../../src/platform/data-root.js"
import { Jobs, jobsLayer } from "../../src/guest/jobs.js"
import { LocksLive } from "../../src/platform/locks.js"
import { makeGuestTransport } from "../../src/ssh/live.js"
import { GuestTransport, type SshTarget } from "../../src/ports/guest-transport.js"
import { startTestServer, type TestSshServer } from "../ssh/server.js"

let server: TestSshServer
let scope: Scope.CloseableScope
let transport: Context.Tag.Service<GuestTransport>
let target: SshTarget
let jobsDir: string
let root: string

const jobs = <A, E>(use: (service: Context.Tag.Service<Jobs>) => Effect.Effect<A, E>) =>
  Effect.runPromise(
    Effect.flatMap(Jobs, use).pipe(
      Effect.provide(
        jobsLayer({ jobsDir }).pipe(
          Layer.provide(
            Layer.mergeAll(
              LocksLive.pipe(Layer.provideMerge(dataRootAt(root))),
              Layer.succeed(GuestTransport, transport)
            )
          )
        )
      )
    )
  )

/** Whether a process is alive on this host (the "guest" here); a zombie no one reaped yet is dead. */
const alive = (pid: number) => {
  try {
    return !/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${pid}/stat`, "utf8"))
  } catch {
    return false
  }
}

beforeAll(async () => {
  server = await startTestServer()
  scope = Effect.runSync(Scope.make())
  transport = await Effect.runPromise(Scope.extend(makeGuestTransport(), scope))
  target = { vm: "shell", port: server.port, user: "root", privateKeyPath: server.clientKey.privateKeyPath }
  jobsDir = mkdtempSync(join(tmpdir(), "stoat-jobs-"))
  // sftp-server may run as nobody (see server.ts): it must read the job files.
  chmodSync(jobsDir, 0o755)
  root = mkdtempSync(join(tmpdir(), "stoat-jobs-root-"))
})
afterAll(async () => {
  // A failed test may leave its job running on this host: end every job group this suite started.
  for (const id of readdirSync(jobsDir).filter((name) => name.startsWith("j-"))) {
    const pid = Number(readFileSync(join(jobsDir, id, "pid"), { encoding: "utf8", flag: "a+" }))
    try {
      if (pid > 1) process.kill(-pid, "SIGKILL")
    } catch {
      // Already gone.
    }
  }
  await Effect.runPromise(Scope.close(scope, Exit.void))
  await server?.close()
  rmSync(jobsDir, { recursive: true, force: true })
  rmSync(root, { recursive: true, force: true })
})

describe("background jobs under a real shell", () => {
  it("runs argv verbatim in the background, outliving the ssh connection, and records its exit", async () => {
    const tricky = ["it's", "$(id)", "`id`", "-n", "a b", ""]
    const { job_id, dir } = await jobs((j) =>
      j.start(target, {
        argv: ["sh", "-c", 'sleep 1; printf "%s|" "$@"; echo oops >&2; exit 3', "x", ...tricky],
        cwd: "/tmp",
        env: { FOO: "$(bar)" }
      })
    )
    expect(dir).toBe(join(jobsDir, job_id))
    await Effect.runPromise(transport.release())
    expect((await jobs((j) => j.status(target, job_id))).state).toMatch(/^(starting|running)$/)
    const waited = await jobs((j) => j.wait(target, job_id, 30))
    expect(waited).toEqual({
      job_id,
      state: "exited",
      exit_code: 3,
      stdout_tail: `${tricky.join("|")}|`,
      stderr_tail: "oops\n"
    })
    const out = await jobs((j) => j.output(target, job_id, { stream: "stdout", offset: 5, maxBytes: 4 }))
    expect(Buffer.from(out.data).toString()).toBe(tricky.join("|").slice(5, 9))
  })

  it("hands env and cwd to the job", async () => {
    const { job_id } = await jobs((j) =>
      j.start(target, { argv: ["sh", "-c", 'echo "$FOO"; pwd'], cwd: "/tmp", env: { FOO: "$(bar) 'q'" } })
    )
    expect((await jobs((j) => j.wait(target, job_id, 30))).stdout_tail).toBe("$(bar) 'q'\n/tmp\n")
  })

  it("a flag-like command word is a command name, not an option of setsid or sh", async () => {
    const { job_id } = await jobs((j) => j.start(target, { argv: ["--help"] }))
    expect(await jobs((j) => j.wait(target, job_id, 30))).toMatchObject({ state: "exited", exit_code: 127 })
  })

  it("kill TERMs the job's whole process group, once", async () => {
    const { job_id, dir } = await jobs((j) =>
      j.start(target, { argv: ["sh", "-c", "sleep 300 & echo $! > child; wait"], cwd: jobsDir })
    )
    let state = ""
    for (let i = 0; i < 100 && state !== "running"; i++) state = (await jobs((j) => j.status(target, job_id))).state
    expect(state).toBe("running")
    const pid = Number(readFileSync(join(dir, "pid"), "utf8"))
    let child = 0
    for (let i = 0; i < 100 && child === 0; i++)
      child = Number(readFileSync(join(jobsDir, "child"), { encoding: "utf8", flag: "a+" }) || 0)
    expect(alive(child)).toBe(true)
    expect(await jobs((j) => j.kill(target, job_id, "TERM"))).toEqual({
      job_id,
      state: "exited",
      exit_code: 143,
      signaled: true
    })
    expect(alive(pid)).toBe(false)
    expect(alive(child)).toBe(false)
    expect(await jobs((j) => j.kill(target, job_id, "TERM"))).toEqual({
      job_id,
      state: "exited",
      exit_code: 143,
      signaled: false
    })
  })

  it("a signal name the shell's kill does not know is usage; the job keeps running", async () => {
    const { job_id } = await jobs((j) => j.start(target, { argv: ["sleep", "300"] }))
    for (let i = 0; i < 100 && (await jobs((j) => j.status(target, job_id))).state !== "running"; i++);
    const refused = await jobs((j) => Effect.flip(j.kill(target, job_id, "NOPE")))
    expect(refused.code).toBe("usage")
    expect((await jobs((j) => j.status(target, job_id))).state).toBe("running")
    expect((await jobs((j) => j.kill(target, job_id, "KILL"))).exit_code).toBe(137)
  })

  it("a job whose processes and folder are gone (a guest reboot clears /run) is unknown", async () => {
    const { job_id, dir } = await jobs((j) => j.start(target, { argv: ["sleep", "300"] }))
    for (let i = 0; i < 100 && (await jobs((j) => j.status(target, job_id))).state !== "running"; i++);
    const pid = Number(readFileSync(join(dir, "pid"), "utf8"))
    // What a reboot leaves: no job process and an empty /run.
    process.kill(-pid, "SIGKILL")
    for (let i = 0; i < 100 && alive(pid); i++) await new Promise((resolve) => setTimeout(resolve, 20))
    rmSync(dir, { recursive: true, force: true })
    expect(await jobs((j) => j.status(target, job_id))).toEqual({ job_id, state: "unknown" })
  })
})
