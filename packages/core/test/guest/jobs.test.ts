import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { parse } from "smol-toml"
import {
  createVm,
  execBackground,
  jobKill,
  jobOutput,
  jobStatus,
  jobWait,
  listJobs,
  startVm,
  stopVm,
  type Operation
} from "../../src/operations/index.js"
import { jobState, parseFacts } from "../../src/guest/jobs.js"
import { JOB_LAUNCHER, JOB_WRAPPER } from "../../src/guest/job-scripts.js"
import { FakeJobs } from "../../src/testing/index.js"
import { harness } from "../harness.js"

/** A running VM "web" whose fake guest runs background jobs. */
const world = async () => {
  const h = harness()
  const jobs = new FakeJobs()
  jobs.install(h.guest)
  await h.ok(createVm, { name: "web", image: "tiny", agent_access: "exec" })
  await h.ok(startVm, { vm: "web" })
  const fs = h.guest.fs("web")
  const start = (argv: string[], extra: Record<string, unknown> = {}) =>
    h.ok(execBackground, { vm: "web", argv, ...extra })
  const registry = () =>
    parse(readFileSync(join(h.vmDir("web"), "jobs.toml"), "utf8")) as {
      schema: number
      jobs: Record<string, Record<string, unknown>>
    }
  return { h, jobs, fs, start, registry }
}

describe("the job state machine", () => {
  it.each([
    [
      { dirExists: true, alive: false, pid: 5, exitCode: 0 },
      { state: "exited", exit_code: 0 }
    ],
    [
      { dirExists: false, alive: false, pid: undefined, exitCode: 3 },
      { state: "exited", exit_code: 3 }
    ],
    [{ dirExists: false, alive: false, pid: undefined, exitCode: undefined }, { state: "unknown" }],
    [{ dirExists: true, alive: false, pid: undefined, exitCode: undefined }, { state: "starting" }],
    [{ dirExists: true, alive: true, pid: 7, exitCode: undefined }, { state: "running" }],
    [{ dirExists: true, alive: false, pid: 7, exitCode: undefined }, { state: "unknown" }]
  ] as const)("%j → %j", (facts, expected) => {
    expect(jobState(facts)).toEqual(expected)
  })

  it("reads the facts script's line, and ignores fields that are not numbers", () => {
    expect(parseFacts("1\t1\t42\t-")).toEqual({ dirExists: true, alive: true, pid: 42, exitCode: undefined })
    expect(parseFacts("1\t0\t42\t137")).toEqual({ dirExists: true, alive: false, pid: 42, exitCode: 137 })
    expect(parseFacts("garbage")).toEqual({ dirExists: false, alive: false, pid: undefined, exitCode: undefined })
    expect(parseFacts("1\t1\t-1\t1e9")).toEqual({ dirExists: true, alive: true, pid: undefined, exitCode: undefined })
  })
})

describe("exec_bg and the job tools (fake guest)", () => {
  it("starts a job, records it in jobs.toml, and follows it from running to exited", async () => {
    const { h, jobs, fs, start, registry } = await world()
    const started = await start(["sleep", "100"], { cwd: "/tmp" })
    expect(started.job_id).toMatch(/^j-[0-9a-f]{8}$/)
    expect(started.dir).toBe(`/run/stoat/jobs/${started.job_id}`)
    const text = readFileSync(join(h.vmDir("web"), "jobs.toml"), "utf8")
    expect(text.startsWith("# written by stoat; do not edit\n")).toBe(true)
    expect(registry()).toMatchObject({
      schema: 1,
      jobs: { [started.job_id]: { argv: ["sleep", "100"], user: "root", cwd: "/tmp", dir: started.dir } }
    })
    const running = await h.ok(jobStatus, { vm: "web", job_id: started.job_id })
    expect(running).toEqual({ job_id: started.job_id, state: "running" })
    jobs.finish(fs, started.dir, 4, "done\n", "warn\n")
    expect(await h.ok(jobStatus, { vm: "web", job_id: started.job_id })).toEqual({
      job_id: started.job_id,
      state: "exited",
      exit_code: 4
    })
    expect(await h.ok(jobWait, { vm: "web", job_id: started.job_id })).toEqual({
      job_id: started.job_id,
      state: "exited",
      exit_code: 4,
      stdout_tail: "done\n",
      stderr_tail: "warn\n"
    })
  })

  it("reads starting until the guest records the pid", async () => {
    const { h, jobs, fs, start } = await world()
    jobs.holdPid = true
    const { job_id, dir } = await start(["sleep", "1"])
    expect(await h.ok(jobStatus, { vm: "web", job_id })).toEqual({ job_id, state: "starting" })
    expect(await h.ok(jobKill, { vm: "web", job_id })).toEqual({ job_id, state: "starting", signaled: false })
    jobs.releasePid(fs, dir)
    expect((await h.ok(jobStatus, { vm: "web", job_id })).state).toBe("running")
  })

  it("passes argv, cwd and env only as parameters of the constant launcher", async () => {
    const { h, start } = await world()
    const hostile = ["-h", "--", "$(reboot)", "a'b\"c", "`id`", "x; rm -rf /", "\n", ""]
    await start(hostile, { cwd: "/tmp", env: { FOO: "$(id)'" } })
    const launch = h.guest.execs.find((call) => call.argv[2] === JOB_LAUNCHER)!
    expect(launch.argv.slice(0, 5)).toEqual(["sh", "-c", JOB_LAUNCHER, "stoat_job", JOB_WRAPPER])
    expect(launch.argv.slice(6)).toEqual(["/tmp", ...hostile])
    expect(launch.options.env).toEqual({ FOO: "$(id)'" })
  })

  it("a launch whose exit status sshd never sent still counts when the launcher said it started the job", async () => {
    const { h, start, registry } = await world()
    const jobsHandler = h.guest.execHandler
    h.guest.execHandler = (argv, context) => {
      const result = jobsHandler(argv, context)
      return argv[2] === JOB_LAUNCHER ? { ...result, exitCode: 255 } : result
    }
    const { job_id } = await start(["sleep", "100"])
    expect((await h.ok(jobStatus, { vm: "web", job_id })).state).toBe("running")
    h.guest.execHandler = (argv, context) => (argv[2] === JOB_LAUNCHER ? { exitCode: 255 } : jobsHandler(argv, context))
    expect((await h.fail(execBackground, { vm: "web", argv: ["true"] })).code).toBe("internal")
    expect(Object.keys(registry().jobs)).toEqual([job_id])
  })

  it("a job that is not a sleep runs at once: output, offsets, stderr, base64 and the cap", async () => {
    const { h, start } = await world()
    const { job_id } = await start(["echo", "hello", "world"])
    expect(await h.ok(jobStatus, { vm: "web", job_id })).toEqual({ job_id, state: "exited", exit_code: 0 })
    expect(await h.ok(jobOutput, { vm: "web", job_id })).toEqual({
      content: "hello world\n",
      size: 12,
      truncated: false
    })
    expect(await h.ok(jobOutput, { vm: "web", job_id, offset: 6, max_bytes: 3 })).toEqual({
      content: "wor",
      size: 12,
      truncated: true
    })
    expect(await h.ok(jobOutput, { vm: "web", job_id, offset: 100 })).toEqual({
      content: "",
      size: 12,
      truncated: false
    })
    expect(await h.ok(jobOutput, { vm: "web", job_id, stream: "stderr" })).toEqual({
      content: "",
      size: 0,
      truncated: false
    })
    const failing = await start(["cat", "/nope"])
    expect((await h.ok(jobOutput, { vm: "web", job_id: failing.job_id, stream: "stderr" })).content).toContain(
      "No such file"
    )
    h.guest.fs("web").write(`/run/stoat/jobs/${job_id}/out`, new Uint8Array([0xff, 0xfe, 0x00, 0x41]))
    expect(await h.ok(jobOutput, { vm: "web", job_id })).toEqual({
      content: "//4AQQ==",
      encoding: "base64",
      size: 4,
      truncated: false
    })
    h.guest.fs("web").write(`/run/stoat/jobs/${job_id}/out`, "x".repeat(1024 * 1024 + 10))
    const capped = await h.ok(jobOutput, { vm: "web", job_id, max_bytes: 0 })
    expect(capped).toMatchObject({ size: 1024 * 1024 + 10, truncated: true })
    expect(capped.content.length).toBe(1024 * 1024)
  })

  it("kill signals a running job once; a job that is not running is left alone", async () => {
    const { h, start } = await world()
    const { job_id } = await start(["sleep", "100"])
    expect(await h.ok(jobKill, { vm: "web", job_id })).toEqual({
      job_id,
      state: "exited",
      exit_code: 143,
      signaled: true
    })
    expect(await h.ok(jobKill, { vm: "web", job_id })).toEqual({
      job_id,
      state: "exited",
      exit_code: 143,
      signaled: false
    })
    const other = await start(["sleep", "100"])
    expect(await h.ok(jobKill, { vm: "web", job_id: other.job_id, signal: "KILL" })).toMatchObject({
      state: "exited",
      exit_code: 137,
      signaled: true
    })
  })

  it("a signal the job ignores is sent and the job is reported still running", async () => {
    const { h, jobs, start } = await world()
    jobs.ignoredSignals.add("USR1")
    const { job_id } = await start(["sleep", "100"])
    expect(await h.ok(jobKill, { vm: "web", job_id, signal: "USR1" })).toEqual({
      job_id,
      state: "running",
      signaled: true
    })
  })

  it.each([["term"], ["SIGTERM"], ["9"], ["-9"], ["KILL;id"], ["T"], [""], ["ABCDEFGHIJK"]])(
    "the signal %j is usage",
    async (signal) => {
      const { h, start } = await world()
      const { job_id } = await start(["sleep", "100"])
      expect((await h.fail(jobKill, { vm: "web", job_id, signal })).code).toBe("usage")
    }
  )

  it("a well-formed signal name the guest's kill does not know is usage naming it", async () => {
    const { h, start } = await world()
    const { job_id } = await start(["sleep", "100"])
    expect(await h.fail(jobKill, { vm: "web", job_id, signal: "NOPE" })).toMatchObject({
      code: "usage",
      subject: "NOPE"
    })
    expect((await h.ok(jobStatus, { vm: "web", job_id })).state).toBe("running")
  })

  it("a guest restart under a running job makes it unknown, and its output gone", async () => {
    const { h, jobs, fs, start } = await world()
    const { job_id } = await start(["sleep", "100"])
    jobs.reboot(fs, "web")
    expect(await h.ok(jobStatus, { vm: "web", job_id })).toEqual({ job_id, state: "unknown" })
    expect(await h.ok(jobWait, { vm: "web", job_id, timeout_seconds: 5 })).toEqual({
      job_id,
      state: "unknown",
      stdout_tail: "",
      stderr_tail: ""
    })
    expect(await h.fail(jobOutput, { vm: "web", job_id })).toMatchObject({ code: "not_found", subject: job_id })
    expect(await h.ok(jobKill, { vm: "web", job_id })).toEqual({ job_id, state: "unknown", signaled: false })
  })

  it("job_wait returns a job still running at its timeout as running", async () => {
    const { h, start } = await world()
    const { job_id } = await start(["sleep", "100"])
    expect(await h.ok(jobWait, { vm: "web", job_id, timeout_seconds: 1 })).toEqual({
      job_id,
      state: "running",
      stdout_tail: "",
      stderr_tail: ""
    })
  })

  it("list_jobs reads the registry: states from a running guest, unknown on a stopped VM", async () => {
    const { h, jobs, fs, start } = await world()
    const a = await start(["sleep", "100"])
    const b = await start(["sleep", "100"], { cwd: "/tmp" })
    jobs.finish(fs, b.dir, 0)
    const listed = await h.ok(listJobs, { vm: "web" })
    expect(listed.jobs.map((job) => [job.job_id, job.state])).toEqual([
      [a.job_id, "running"],
      [b.job_id, "exited"]
    ])
    expect(listed.jobs[1]).toMatchObject({ argv: ["sleep", "100"], user: "root", cwd: "/tmp" })
    expect(listed.jobs[0]!.started).toMatch(/^\d{4}-\d\d-\d\dT/)
    await h.ok(stopVm, { vm: "web" })
    expect((await h.ok(listJobs, { vm: "web" })).jobs.map((job) => job.state)).toEqual(["unknown", "unknown"])
    expect((await h.fail(jobStatus, { vm: "web", job_id: a.job_id })).code).toBe("not_running")
    expect((await h.fail(execBackground, { vm: "web", argv: ["true"] })).code).toBe("not_running")
  })

  it("list_jobs of a VM without jobs is empty; an unreachable running VM lists its jobs as unknown", async () => {
    const { h, start } = await world()
    expect(await h.ok(listJobs, { vm: "web" })).toEqual({ jobs: [] })
    await start(["sleep", "100"])
    h.guest.unreachablePorts.add(h.hypervisor.running.values().next().value!.plan.sshPort)
    expect((await h.ok(listJobs, { vm: "web" })).jobs.map((job) => job.state)).toEqual(["unknown"])
  })

  it("twenty parallel exec_bg calls on one VM all land in the registry", async () => {
    const { start, registry } = await world()
    const started = await Promise.all(Array.from({ length: 20 }, (_, i) => start(["sleep", String(i)])))
    expect(new Set(started.map((job) => job.job_id)).size).toBe(20)
    expect(Object.keys(registry().jobs).sort()).toEqual(started.map((job) => job.job_id).sort())
  })

  it("an unknown job id is not_found; a malformed one is usage", async () => {
    const { h } = await world()
    expect(await h.fail(jobStatus, { vm: "web", job_id: "j-00000000" })).toMatchObject({
      code: "not_found",
      subject: "j-00000000"
    })
    for (const job_id of ["j-XYZ00000", "j-0000000", "j-000000000", "../etc", "j-00000000\n", "", "J-00000000"])
      expect((await h.fail(jobStatus, { vm: "web", job_id })).code, job_id).toBe("usage")
  })

  it.each([
    ["an empty argv", { argv: [] }],
    ["a NUL in argv", { argv: ["a\0b"] }],
    ["a huge argv word", { argv: ["x".repeat(16_385)] }],
    ["too many argv words", { argv: Array.from({ length: 1025 }, () => "x") }],
    ["a relative cwd", { argv: ["true"], cwd: "tmp" }],
    ["a NUL in cwd", { argv: ["true"], cwd: "/t\0mp" }],
    ["a bad env name", { argv: ["true"], env: { "A-B": "1" } }],
    ["a NUL in an env value", { argv: ["true"], env: { A: "\0" } }],
    ["a shell string for argv", { argv: "true" }],
    ["an unknown field", { argv: ["true"], extra: 1 }]
  ])("exec_bg refuses %s with usage and records nothing", async (_, input) => {
    const { h } = await world()
    expect((await h.fail(execBackground, { vm: "web", ...input })).code).toBe("usage")
    expect(h.exists("web", "jobs.toml")).toBe(false)
  })

  it("a missing cwd is not_found, an unwritable job folder access_denied; neither stays in the registry", async () => {
    const { h, fs, start, registry } = await world()
    expect(await h.fail(execBackground, { vm: "web", argv: ["true"], cwd: "/nowhere" })).toMatchObject({
      code: "not_found",
      subject: "/nowhere"
    })
    fs.denied.add("/run/stoat")
    expect((await h.fail(execBackground, { vm: "web", argv: ["true"] })).code).toBe("access_denied")
    expect(registry().jobs).toEqual({})
    fs.denied.clear()
    await start(["true"])
    expect(Object.keys(registry().jobs)).toHaveLength(1)
  })

  it.each([
    ["not TOML", "this is [not toml"],
    ["not jobs", 'schema = 1\n[jobs.j-00000000]\nargv = "sleep"\n'],
    ["a future schema", "schema = 2\n"],
    ["a bad id", 'schema = 1\n[jobs.bad]\nargv = []\nuser = "root"\ndir = "/x"\nstarted = "now"\n']
  ])("a corrupted jobs.toml (%s) is invalid_spec naming the file, for every job tool", async (_, text) => {
    const { h } = await world()
    const path = join(h.vmDir("web"), "jobs.toml")
    writeFileSync(path, text)
    const calls: ReadonlyArray<readonly [Operation, object]> = [
      [listJobs, { vm: "web" }],
      [execBackground, { vm: "web", argv: ["true"] }],
      [jobStatus, { vm: "web", job_id: "j-00000000" }]
    ]
    for (const [operation, input] of calls) {
      const error = await h.fail(operation, input)
      expect(error).toMatchObject({ code: "invalid_spec", subject: path })
      expect(error.message).toContain(path)
    }
    expect(readFileSync(path, "utf8")).toBe(text)
    expect(h.guest.execs.some((call) => call.argv[2] === JOB_LAUNCHER)).toBe(false)
  })
})
