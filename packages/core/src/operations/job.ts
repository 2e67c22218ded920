import { Effect, Schema } from "effect"
import { FileContent, JobKilled, JobList, JobStarted, JobStatus, JobWaited } from "@stoat/wire"
import { DataRoot } from "../platform/data-root.js"
import { JOB_ID } from "../guest/job-registry.js"
import { textOrBase64 } from "../guest/encoding.js"
import { JOB_OUTPUT_CAP, Jobs } from "../guest/jobs.js"
import { runningTarget } from "../guest/session.js"
import { isRunning, loadVm, sshTarget } from "../vm/records.js"
import { EnvName, GuestPath, IntRange, VmName } from "./inputs.js"
import { defineOperation, EXEC, READ } from "./operation.js"

const NO_NUL = /^[^\0]*$/
/** One argv word: no NUL (no C string carries one) and small enough for any guest's ARG_MAX. */
const ArgWord = Schema.String.pipe(Schema.pattern(NO_NUL, { message: () => "argv words contain no NUL" }), Schema.maxLength(16_384))
const EnvValue = Schema.String.pipe(Schema.pattern(NO_NUL, { message: () => "environment values contain no NUL" }), Schema.maxLength(16_384))
const JobId = Schema.String.pipe(Schema.pattern(JOB_ID, { message: () => "job ids look like j-0123abcd (j- and 8 hex digits)" })).annotations({
  description: "job id from exec_bg, j- and 8 hex digits"
})
/** A signal name as `kill -s` takes it: TERM, KILL, USR1, RTMIN1 … (no SIG prefix). */
// Two checks rather than a lookahead: schema-derived arbitraries (fuzz, property tests) cannot draw from `(?!…)`.
const SIGNAL_MESSAGE = () => "signal names are like TERM, KILL or USR1 (no SIG prefix)"
const SignalName = Schema.String.pipe(
  Schema.pattern(/^[A-Z]{2,10}[0-9]?$/, { message: SIGNAL_MESSAGE }),
  Schema.filter((name) => !name.startsWith("SIG"), { message: SIGNAL_MESSAGE })
)

const JobInput = Schema.Struct({ vm: VmName, job_id: JobId })

const fileContent = (data: Uint8Array, size: number, truncated: boolean) => ({ ...textOrBase64(data), size, truncated })

export const execBackground = defineOperation({
  key: "guest.exec_bg",
  tool: "exec_bg",
  expose: { cli: "jobs start", mcp: true },
  title: "Start a background job in a VM",
  description:
    "Start argv (an argument array, not a shell string) in the background of a running VM and return its job_id at once. The job outlives the call; its stdout and stderr go to files under /run/stoat/jobs/<job_id>/ on the guest. Poll it with job_status or job_wait, read output with job_output, stop it with job_kill.",
  kind: "command",
  input: Schema.Struct({
    vm: VmName,
    argv: Schema.NonEmptyArray(ArgWord).pipe(Schema.maxItems(1024)),
    cwd: Schema.optional(GuestPath),
    env: Schema.optional(Schema.Record({ key: EnvName, value: EnvValue }))
  }),
  output: JobStarted,
  annotations: EXEC,
  access: "exec",
  run: (input) =>
    Effect.flatMap(runningTarget(input.vm), (target) =>
      Effect.flatMap(Jobs, (jobs) =>
        jobs.start(target, { argv: input.argv, ...(input.cwd !== undefined ? { cwd: input.cwd } : {}), ...(input.env !== undefined ? { env: input.env } : {}) })
      )
    )
})

export const jobStatus = defineOperation({
  key: "guest.job_status",
  tool: "job_status",
  expose: { cli: "jobs status", mcp: true },
  title: "Show a background job's state",
  description:
    "The state of a job started by exec_bg: starting until the guest records its pid, then running, then exited with exit_code. unknown means the guest was restarted (which clears the job files).",
  kind: "query",
  input: JobInput,
  output: JobStatus,
  annotations: READ,
  access: "exec",
  run: (input) => Effect.flatMap(runningTarget(input.vm), (target) => Effect.flatMap(Jobs, (jobs) => jobs.status(target, input.job_id)))
})

export const jobWait = defineOperation({
  key: "guest.job_wait",
  tool: "job_wait",
  longRunning: true,
  expose: { cli: "jobs wait", mcp: true },
  title: "Wait for a background job",
  description:
    "Block until the job exits or timeout_seconds (default 60, max 600) pass, then return its state, exit_code once exited, and the last 4 KiB of stdout and stderr. A job still running at the timeout is not an error: state says running.",
  kind: "query",
  input: Schema.Struct({ vm: VmName, job_id: JobId, timeout_seconds: Schema.optional(IntRange(1, 600)) }),
  output: JobWaited,
  annotations: READ,
  access: "exec",
  run: (input) =>
    Effect.flatMap(runningTarget(input.vm), (target) => Effect.flatMap(Jobs, (jobs) => jobs.wait(target, input.job_id, input.timeout_seconds ?? 60)))
})

export const jobOutput = defineOperation({
  key: "guest.job_output",
  tool: "job_output",
  expose: { cli: "jobs output", mcp: true },
  title: "Read a background job's output",
  description: `Read a job's stdout (default) or stderr from byte offset (default 0), at most max_bytes (0 or absent = the cap of ${JOB_OUTPUT_CAP} bytes). Returns content (base64 with encoding when not UTF-8), the stream's size so far and truncated when more follows.`,
  kind: "query",
  input: Schema.Struct({
    vm: VmName,
    job_id: JobId,
    stream: Schema.optional(Schema.Literal("stdout", "stderr")),
    offset: Schema.optional(IntRange(0, Number.MAX_SAFE_INTEGER)),
    max_bytes: Schema.optional(IntRange(0, JOB_OUTPUT_CAP))
  }),
  output: FileContent,
  annotations: READ,
  access: "exec",
  run: (input) =>
    Effect.flatMap(runningTarget(input.vm), (target) =>
      Effect.flatMap(Jobs, (jobs) =>
        Effect.map(
          jobs.output(target, input.job_id, { stream: input.stream ?? "stdout", offset: input.offset ?? 0, maxBytes: input.max_bytes ?? 0 }),
          (read) => fileContent(read.data, read.size, read.truncated)
        )
      )
    )
})

export const jobKill = defineOperation({
  key: "guest.job_kill",
  tool: "job_kill",
  expose: { cli: "jobs kill", mcp: true },
  title: "Signal a background job",
  description:
    "Send signal (default TERM; a name such as KILL, INT or USR1, without SIG) to a running job and its process group. A job that is not running is not signalled: the result has its state and signaled=false.",
  kind: "command",
  input: Schema.Struct({ vm: VmName, job_id: JobId, signal: Schema.optional(SignalName) }),
  output: JobKilled,
  annotations: EXEC,
  access: "exec",
  run: (input) => Effect.flatMap(runningTarget(input.vm), (target) => Effect.flatMap(Jobs, (jobs) => jobs.kill(target, input.job_id, input.signal ?? "TERM")))
})

export const listJobs = defineOperation({
  key: "guest.list_jobs",
  tool: "list_jobs",
  expose: { cli: "jobs ls", mcp: true },
  title: "List a VM's background jobs",
  description:
    "Every job exec_bg started on the VM, from the host's registry (works on a stopped VM), with argv, user, cwd, started and state. States are asked of the guest when the VM runs; a stopped or unreachable VM's jobs read unknown.",
  kind: "query",
  input: Schema.Struct({ vm: VmName }),
  output: JobList,
  annotations: READ,
  access: "exec",
  run: (input) =>
    Effect.gen(function* () {
      const record = yield* loadVm(input.vm)
      const jobs = yield* Jobs
      const target = (yield* isRunning(record)) ? sshTarget(yield* DataRoot, record) : undefined
      const listed = yield* jobs.list(input.vm, target).pipe(Effect.catchTag("CannotReach", () => jobs.list(input.vm, undefined)))
      return { jobs: listed }
    })
})
