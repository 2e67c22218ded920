import { randomBytes } from "node:crypto"
import { Context, Data, Duration, Effect, Layer, Schedule } from "effect"
import {
  AccessDenied,
  CannotReach,
  Internal,
  NotFound,
  Usage,
  type CapabilityUnavailable,
  type InvalidSpec,
  type Timeout
} from "../errors.js"
import { DataRoot } from "../platform/data-root.js"
import { Locks } from "../platform/locks.js"
import type * as fs from "../platform/fs.js"
import { pollUntil } from "../platform/poll.js"
import { GuestTransport, type SshTarget } from "../ports/guest-transport.js"
import { readJobs, updateJobs, type JobRecord } from "./job-registry.js"
import {
  JOB_FACTS,
  JOB_LAUNCHER,
  JOB_SIGNAL,
  JOB_WRAPPER,
  jobDir,
  LAUNCHED,
  LAUNCH_NO_CWD,
  LAUNCH_NO_DIR,
  SIGNAL_NO_PROCESS,
  SIGNAL_REFUSED
} from "./job-scripts.js"

export type JobState = "starting" | "running" | "exited" | "unknown"

/** What the guest says about one job folder (JOB_FACTS). */
export interface JobFacts {
  readonly dirExists: boolean
  readonly alive: boolean
  readonly pid: number | undefined
  readonly exitCode: number | undefined
}

/**
 * The state machine: an `exit` file ⇒ exited with its code; no folder (the guest rebooted and
 * /run was cleared) ⇒ unknown; no pid yet ⇒ starting; a live pid ⇒ running; else unknown.
 */
export const jobState = (facts: JobFacts): { readonly state: JobState; readonly exit_code?: number } => {
  if (facts.exitCode !== undefined) return { state: "exited", exit_code: facts.exitCode }
  if (!facts.dirExists) return { state: "unknown" }
  if (facts.pid === undefined) return { state: "starting" }
  return { state: facts.alive ? "running" : "unknown" }
}

const numberOr = (field: string | undefined): number | undefined =>
  field !== undefined && /^[0-9]{1,10}$/.test(field) ? Number(field) : undefined

/** One JOB_FACTS line; a line that is not one (never written by the script) reads as nothing known. */
export const parseFacts = (line: string): JobFacts => {
  const [dir, alive, pid, exit] = line.split("\t")
  return { dirExists: dir === "1", alive: alive === "1", pid: numberOr(pid), exitCode: numberOr(exit) }
}

export interface StartJob {
  readonly argv: ReadonlyArray<string>
  readonly cwd?: string
  readonly env?: Readonly<Record<string, string>>
}

export interface JobOutput {
  readonly data: Uint8Array
  readonly size: number
  readonly truncated: boolean
}

export interface JobSummary {
  readonly job_id: string
  readonly state: JobState
  readonly exit_code?: number
}

export type JobsError =
  | CannotReach
  | NotFound
  | AccessDenied
  | CapabilityUnavailable
  | Internal
  | InvalidSpec
  | Timeout
  | Usage
  | fs.FsError

/** Longest `job_output` read, and what `max_bytes: 0` means. */
export const JOB_OUTPUT_CAP = 1024 * 1024
/** Bytes of each stream `job_wait` returns. */
export const JOB_TAIL_BYTES = 4096

/**
 * Background jobs on a guest: started detached by a constant shell body (argv only as
 * positional parameters), their files under /run/stoat/jobs/<id>/ on the guest, and a host
 * registry `<vm>/jobs.toml` so `list` works while the VM is stopped.
 */
export class Jobs extends Context.Tag("stoat/Jobs")<
  Jobs,
  {
    readonly start: (
      target: SshTarget,
      job: StartJob
    ) => Effect.Effect<{ readonly job_id: string; readonly dir: string }, JobsError>
    readonly status: (target: SshTarget, id: string) => Effect.Effect<JobSummary, JobsError>
    /** Until the job exits (or is unknown) or `timeoutSeconds` pass; then the state and the tail of both streams. */
    readonly wait: (
      target: SshTarget,
      id: string,
      timeoutSeconds: number
    ) => Effect.Effect<JobSummary & { readonly stdout_tail: string; readonly stderr_tail: string }, JobsError>
    readonly output: (
      target: SshTarget,
      id: string,
      options: { readonly stream: "stdout" | "stderr"; readonly offset: number; readonly maxBytes: number }
    ) => Effect.Effect<JobOutput, JobsError>
    /** Signals a running job (its process group); any other job is left alone with `signaled: false`. */
    readonly kill: (
      target: SshTarget,
      id: string,
      signal: string
    ) => Effect.Effect<JobSummary & { readonly signaled: boolean }, JobsError>
    /** The registry of VM `vm`; states are asked of the guest when `target` is given (a running VM), else unknown. */
    readonly list: (
      vm: string,
      target: SshTarget | undefined
    ) => Effect.Effect<ReadonlyArray<JobSummary & Omit<JobRecord, "dir">>, JobsError>
  }
>() {}

/** How long one guest round trip of the job scripts may take. */
const SCRIPT_TIMEOUT_MS = 30_000
const SCRIPT_OUTPUT_CAP = 1024 * 1024
/** job_wait looks again after 100 ms, doubling up to once a second. */
const WAIT_SCHEDULE = Schedule.union(Schedule.exponential(Duration.millis(100)), Schedule.spaced(Duration.seconds(1)))
/** After a signal, how long kill waits for the job to leave `running` before reporting its state. */
const KILL_SETTLE = Duration.seconds(3)

class WaitTimedOut extends Data.TaggedError("WaitTimedOut") {}

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes).trim()

export interface JobsOptions {
  /** The guest folder holding job folders (tests against a host shell use a temp folder). */
  readonly jobsDir?: string
}

export const makeJobs = (options: JobsOptions = {}) =>
  Effect.gen(function* () {
    const root = yield* DataRoot
    const transport = yield* GuestTransport
    const locks = yield* Locks
    const withLocks = Effect.provideService(Locks, locks)

    /** Runs one of the constant scripts with its positional parameters. */
    const script = (
      target: SshTarget,
      body: string,
      args: ReadonlyArray<string>,
      env?: Readonly<Record<string, string>>
    ) =>
      Effect.flatMap(
        transport.exec(target, ["sh", "-c", body, "stoat_job", ...args], {
          timeoutMs: SCRIPT_TIMEOUT_MS,
          maxOutputBytes: SCRIPT_OUTPUT_CAP,
          ...(env !== undefined ? { env } : {})
        }),
        (output) =>
          output.timedOut
            ? Effect.fail(
                new CannotReach({
                  message: `VM ${target.vm} did not answer a job command within ${SCRIPT_TIMEOUT_MS / 1000} s`,
                  subject: target.vm
                })
              )
            : Effect.succeed(output)
      )

    const recordOf = (vm: string, id: string) =>
      Effect.flatMap(readJobs(root.vmDir(vm)), (jobs) => {
        const found = jobs.find(([jobId]) => jobId === id)
        return found
          ? Effect.succeed(found[1])
          : Effect.fail(new NotFound({ message: `no job ${id} on VM ${vm}; list_jobs shows its jobs`, subject: id }))
      })

    const factsOf = (target: SshTarget, dirs: ReadonlyArray<string>) =>
      Effect.flatMap(script(target, JOB_FACTS, dirs), (output) => {
        const lines = text(output.stdout).split("\n")
        if (output.exitCode !== 0 || lines.length !== dirs.length)
          return Effect.fail(
            new Internal({
              message: `the job status script failed on VM ${target.vm}: ${text(output.stderr) || `exit ${output.exitCode}`}`,
              subject: target.vm
            })
          )
        return Effect.succeed(lines.map(parseFacts))
      })

    const summaryOf = (target: SshTarget, id: string, record: JobRecord): Effect.Effect<JobSummary, JobsError> =>
      Effect.map(factsOf(target, [record.dir]), ([facts]) => ({ job_id: id, ...jobState(facts!) }))

    const status = (target: SshTarget, id: string) =>
      Effect.flatMap(recordOf(target.vm, id), (record) => summaryOf(target, id, record))

    const start = (target: SshTarget, job: StartJob) =>
      Effect.gen(function* () {
        const id = `j-${randomBytes(4).toString("hex")}`
        const dir = jobDir(id, options.jobsDir)
        const vmDir = root.vmDir(target.vm)
        const record: JobRecord = {
          argv: [...job.argv],
          user: target.user,
          ...(job.cwd !== undefined ? { cwd: job.cwd } : {}),
          dir,
          started: new Date().toISOString()
        }
        // Recorded before it is launched, so a job never runs unlisted; a launch that fails takes its entry back out.
        yield* withLocks(updateJobs(vmDir, (jobs) => [...jobs, [id, record]]))
        const launched = script(target, JOB_LAUNCHER, [JOB_WRAPPER, dir, job.cwd ?? "", ...job.argv], job.env).pipe(
          Effect.flatMap((output): Effect.Effect<void, JobsError> => {
            if (output.exitCode === 0 || text(output.stdout) === LAUNCHED) return Effect.void
            if (output.exitCode === LAUNCH_NO_DIR)
              return Effect.fail(
                new AccessDenied({
                  message: `cannot create the job folder ${dir} on VM ${target.vm} as ${target.user}: ${text(output.stderr)}`,
                  subject: dir
                })
              )
            if (output.exitCode === LAUNCH_NO_CWD)
              return Effect.fail(
                new NotFound({
                  message: `cwd ${job.cwd} is not a directory ${target.user} can enter on VM ${target.vm}`,
                  subject: job.cwd ?? ""
                })
              )
            return Effect.fail(
              new Internal({
                message: `starting the job on VM ${target.vm} failed: ${text(output.stderr) || `exit ${output.exitCode}`}`,
                subject: target.vm
              })
            )
          })
        )
        yield* Effect.onError(launched, () =>
          Effect.ignore(withLocks(updateJobs(vmDir, (jobs) => jobs.filter(([jobId]) => jobId !== id))))
        )
        return { job_id: id, dir }
      })

    /** The last JOB_TAIL_BYTES of a job file as text ("" when the file is gone). */
    const tail = (target: SshTarget, path: string) =>
      Effect.gen(function* () {
        const { size } = yield* transport.readFile(target, path, { maxBytes: 0 })
        const { data } = yield* transport.readFile(target, path, { offset: Math.max(0, size - JOB_TAIL_BYTES) })
        // A cut through a multi-byte character decodes to U+FFFD at the start; drop it.
        return new TextDecoder().decode(data).replace(/^\uFFFD+/, "")
      }).pipe(Effect.catchTag("NotFound", () => Effect.succeed("")))

    const wait = (target: SshTarget, id: string, timeoutSeconds: number) =>
      Effect.gen(function* () {
        const record = yield* recordOf(target.vm, id)
        const look = summaryOf(target, id, record)
        const summary = yield* pollUntil(look, {
          schedule: WAIT_SCHEDULE,
          until: (s) => s.state === "exited" || s.state === "unknown",
          within: Duration.seconds(timeoutSeconds),
          onTimeout: () => new WaitTimedOut()
        }).pipe(Effect.catchTag("WaitTimedOut", () => look))
        const [stdout_tail, stderr_tail] = yield* Effect.all([
          tail(target, `${record.dir}/out`),
          tail(target, `${record.dir}/err`)
        ])
        return { ...summary, stdout_tail, stderr_tail }
      })

    const output = (
      target: SshTarget,
      id: string,
      options: { readonly stream: "stdout" | "stderr"; readonly offset: number; readonly maxBytes: number }
    ) =>
      Effect.gen(function* () {
        const record = yield* recordOf(target.vm, id)
        const path = `${record.dir}/${options.stream === "stdout" ? "out" : "err"}`
        const maxBytes = options.maxBytes === 0 ? JOB_OUTPUT_CAP : Math.min(options.maxBytes, JOB_OUTPUT_CAP)
        const read = yield* transport.readFile(target, path, { offset: options.offset, maxBytes }).pipe(
          Effect.catchTag("NotFound", () =>
            Effect.fail(
              new NotFound({
                message: `job ${id} has no ${options.stream} on VM ${target.vm} any more (the guest was restarted, which clears /run)`,
                subject: id
              })
            )
          )
        )
        return { data: read.data, size: read.size, truncated: options.offset + read.data.length < read.size }
      })

    const kill = (target: SshTarget, id: string, signal: string) =>
      Effect.gen(function* () {
        const record = yield* recordOf(target.vm, id)
        const look = summaryOf(target, id, record)
        const before = yield* look
        if (before.state !== "running") return { ...before, signaled: false }
        const sent = yield* script(target, JOB_SIGNAL, [record.dir, signal])
        if (sent.exitCode === SIGNAL_REFUSED)
          return yield* new Usage({ message: `the guest's kill does not know the signal ${signal}`, subject: signal })
        if (sent.exitCode === SIGNAL_NO_PROCESS) return { ...(yield* look), signaled: false }
        if (sent.exitCode !== 0)
          return yield* new Internal({
            message: `signalling job ${id} on VM ${target.vm} failed: ${text(sent.stderr) || `exit ${sent.exitCode}`}`,
            subject: id
          })
        // A signal the job handles or ignores leaves it running; that is reported as it is.
        const after = yield* pollUntil(look, {
          schedule: WAIT_SCHEDULE,
          until: (s) => s.state !== "running",
          within: KILL_SETTLE,
          onTimeout: () => new WaitTimedOut()
        }).pipe(Effect.catchTag("WaitTimedOut", () => look))
        return { ...after, signaled: true }
      })

    const list = (vm: string, target: SshTarget | undefined) =>
      Effect.gen(function* () {
        const jobs = yield* readJobs(root.vmDir(vm))
        if (jobs.length === 0) return []
        // A stopped VM's jobs are gone with its /run; a running one answers for all of them in one round trip.
        const facts =
          target === undefined
            ? undefined
            : yield* factsOf(
                target,
                jobs.map(([, record]) => record.dir)
              )
        return jobs.map(([job_id, { dir: _dir, ...record }], index) => ({
          job_id,
          ...record,
          ...(facts === undefined ? { state: "unknown" as const } : jobState(facts[index]!))
        }))
      })

    return { start, status, wait, output, kill, list } satisfies Context.Tag.Service<Jobs>
  })

export const jobsLayer = (options: JobsOptions = {}): Layer.Layer<Jobs, never, DataRoot | GuestTransport | Locks> =>
  Layer.effect(Jobs, makeJobs(options))

export const JobsLive = jobsLayer()
