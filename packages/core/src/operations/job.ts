import { Effect, Schema } from "effect"
import { FileContent, JobKilled, JobList, JobStarted, JobStatus, JobWaited } from "@stoat/wire"
import { DataRoot } from "../platform/data-root.js"
import { HostJobs, HOST_JOB_ID, isHostJobId } from "../background/host-jobs.js"
import { JOB_ID } from "../guest/job-registry.js"
import { textOrBase64 } from "../guest/encoding.js"
import { JOB_OUTPUT_CAP, Jobs } from "../guest/jobs.js"
import { runningTarget } from "../guest/session.js"
import { isRunning, loadVm, sshTarget } from "../vm/records.js"
import { EnvName, GuestPath, VmName } from "./inputs.js"
import { IntRange } from "../vm/limits.js"
import { defineOperation, EXEC, READ } from "./operation.js"

const NO_NUL = /^[^\0]*$/
/** One argv word: no NUL (no C string carries one) and small enough for any guest's ARG_MAX. */
const ArgWord = Schema.String.pipe(
  Schema.pattern(NO_NUL, { message: () => "argv words contain no NUL" }),
  Schema.maxLength(16_384)
)
const EnvValue = Schema.String.pipe(
  Schema.pattern(NO_NUL, { message: () => "environment values contain no NUL" }),
  Schema.maxLength(16_384)
)
/** A guest job's id or a host job's: which one decides who answers. */
const ANY_JOB_ID = new RegExp(`${JOB_ID.source}|${HOST_JOB_ID.source}`)
const JobId = Schema.String.pipe(
  Schema.pattern(ANY_JOB_ID, {
    message: () => "job ids look like j-0123abcd (from exec_bg) or h-0123abcd (a call that went on in the background)"
  })
).annotations({ description: "Job id: j-… from exec_bg, or h-… from a call that went on in the background" })
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
    "Start argv in the background of a running VM and return its job_id at once; output goes to files in the guest. Poll with job_status or job_wait, read with job_output, stop with job_kill.",
  kind: "command",
  input: Schema.Struct({
    vm: VmName,
    argv: Schema.NonEmptyArray(ArgWord)
      .pipe(Schema.maxItems(1024))
      .annotations({ description: 'Command and arguments, e.g. ["sh","-c","..."]; at most 1024 words of 16 KiB' }),
    cwd: Schema.optional(GuestPath).annotations({
      description: "Absolute working folder (default the ssh user's home)"
    }),
    env: Schema.optional(Schema.Record({ key: EnvName, value: EnvValue })).annotations({
      description: "Extra environment variables, {NAME: value}"
    })
  }),
  output: JobStarted,
  annotations: EXEC,
  touches: ["guest"],
  access: "exec",
  run: (input) =>
    Effect.flatMap(runningTarget(input.vm), (target) =>
      Effect.flatMap(Jobs, (jobs) =>
        jobs.start(target, {
          argv: input.argv,
          ...(input.cwd !== undefined ? { cwd: input.cwd } : {}),
          ...(input.env !== undefined ? { env: input.env } : {})
        })
      )
    )
})

export const jobStatus = defineOperation({
  key: "guest.job_status",
  tool: "job_status",
  expose: { cli: "jobs status", mcp: true },
  title: "Show a background job's state",
  description: "A job's state: starting, running, then exited with exit_code; unknown after a guest reboot.",
  kind: "query",
  input: JobInput,
  output: JobStatus,
  annotations: READ,
  access: "exec",
  run: (input) =>
    Effect.if(isHostJobId(input.job_id), {
      onTrue: () => Effect.flatMap(HostJobs, (host) => host.status(input.vm, input.job_id)),
      onFalse: () =>
        Effect.flatMap(runningTarget(input.vm), (target) =>
          Effect.flatMap(Jobs, (jobs) => jobs.status(target, input.job_id))
        )
    })
})

export const jobWait = defineOperation({
  key: "guest.job_wait",
  tool: "job_wait",
  longRunning: true,
  expose: { cli: "jobs wait", mcp: true },
  title: "Wait for a background job",
  description:
    "Block until the job exits or timeout_seconds pass; returns its state, exit_code once exited, and the last 4 KiB of stdout and stderr. Still running at the timeout is not an error.",
  kind: "query",
  input: Schema.Struct({
    vm: VmName,
    job_id: JobId,
    timeout_seconds: Schema.optional(IntRange(1, 600)).annotations({
      description: "Seconds to wait (default 300, max 600)"
    })
  }),
  output: JobWaited,
  annotations: READ,
  access: "exec",
  run: (input) =>
    Effect.if(isHostJobId(input.job_id), {
      onTrue: () => Effect.flatMap(HostJobs, (host) => host.wait(input.vm, input.job_id, input.timeout_seconds ?? 60)),
      onFalse: () =>
        Effect.flatMap(runningTarget(input.vm), (target) =>
          Effect.flatMap(Jobs, (jobs) => jobs.wait(target, input.job_id, input.timeout_seconds ?? 60))
        )
    })
})

export const jobOutput = defineOperation({
  key: "guest.job_output",
  tool: "job_output",
  expose: { cli: "jobs output", mcp: true },
  title: "Read a background job's output",
  description:
    "Read a job's stdout or stderr from a byte offset: content (base64 with encoding when not UTF-8), the stream's size so far, and truncated when more follows.",
  kind: "query",
  input: Schema.Struct({
    vm: VmName,
    job_id: JobId,
    stream: Schema.optional(Schema.Literal("stdout", "stderr")).annotations({
      description: "Which stream (default stdout)"
    }),
    offset: Schema.optional(Schema.NonNegativeInt).annotations({ description: "Byte offset to read from (default 0)" }),
    max_bytes: Schema.optional(IntRange(0, JOB_OUTPUT_CAP)).annotations({
      description: "Bytes to read (default and max 1 MiB; 0 = max)"
    })
  }),
  output: FileContent,
  annotations: READ,
  access: "exec",
  run: (input) => {
    const stream = input.stream ?? "stdout"
    const offset = input.offset ?? 0
    const maxBytes = input.max_bytes ?? 0
    const read = Effect.if(isHostJobId(input.job_id), {
      onTrue: () => Effect.flatMap(HostJobs, (host) => host.output(input.vm, input.job_id, stream, offset, maxBytes)),
      onFalse: () =>
        Effect.flatMap(runningTarget(input.vm), (target) =>
          Effect.flatMap(Jobs, (jobs) => jobs.output(target, input.job_id, { stream, offset, maxBytes }))
        )
    })
    return Effect.map(read, (got) => fileContent(got.data, got.size, got.truncated))
  }
})

export const jobKill = defineOperation({
  key: "guest.job_kill",
  tool: "job_kill",
  expose: { cli: "jobs kill", mcp: true },
  title: "Signal a background job",
  description:
    "Signal a running job and its process group. A job that is not running is not signalled: the result has its state and signaled=false.",
  kind: "command",
  input: Schema.Struct({
    vm: VmName,
    job_id: JobId,
    signal: Schema.optional(SignalName).annotations({
      description: "Signal name without SIG, e.g. KILL (default TERM)"
    })
  }),
  output: JobKilled,
  annotations: EXEC,
  touches: ["guest"],
  access: "exec",
  run: (input) =>
    Effect.if(isHostJobId(input.job_id), {
      onTrue: () => Effect.flatMap(HostJobs, (host) => host.kill(input.vm, input.job_id)),
      onFalse: () =>
        Effect.flatMap(runningTarget(input.vm), (target) =>
          Effect.flatMap(Jobs, (jobs) => jobs.kill(target, input.job_id, input.signal ?? "TERM"))
        )
    })
})

export const listJobs = defineOperation({
  key: "guest.list_jobs",
  tool: "list_jobs",
  expose: { cli: "jobs ls", mcp: true },
  title: "List a VM's background jobs",
  description:
    "Every job exec_bg started on the VM (host registry; works on a stopped VM) with argv, user, cwd, started and state (unknown when the VM is stopped or unreachable).",
  kind: "query",
  input: Schema.Struct({ vm: VmName }),
  output: JobList,
  annotations: READ,
  access: "exec",
  run: (input) =>
    Effect.gen(function* () {
      const record = yield* loadVm(input.vm)
      const jobs = yield* Jobs
      const running = yield* isRunning(record).pipe(Effect.orElseSucceed(() => false))
      const target = running ? sshTarget(yield* DataRoot, record) : undefined
      const listed = yield* jobs
        .list(input.vm, target)
        .pipe(Effect.catchTag("CannotReach", () => jobs.list(input.vm, undefined)))
      const onHost = yield* Effect.flatMap(HostJobs, (host) => host.list(input.vm))
      return { jobs: [...listed, ...onHost] }
    })
})
