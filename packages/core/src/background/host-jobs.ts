import { randomBytes } from "node:crypto"
import { Clock, Context, Deferred, Duration, Effect, Exit, Fiber, Layer, Option, Ref } from "effect"
import type { JobInfo, JobKilled, JobStatus, JobWaited } from "@stoat/wire"
import { NotFound, toErrorInfo } from "../errors.js"

/**
 * `h-` + 8 hex digits: a stoat call that went on in the background after its caller stopped
 * waiting (an MCP call that outlived its budget). It runs in this process, on the host, so its
 * id cannot be taken for a guest job's (`j-…`).
 */
export const HOST_JOB_ID = /^h-[0-9a-f]{8}$/

export const isHostJobId = (id: string): boolean => HOST_JOB_ID.test(id)

/** A finished job is kept this long for job_status/job_wait/job_output, then forgotten. */
const KEEP_FINISHED = Duration.hours(1)
/** job_wait's tails, as for guest jobs. */
const TAIL_BYTES = 4096
/** What `kill -TERM` gives a guest job: 128 + 15. */
const KILLED_EXIT_CODE = 143

interface Finished {
  readonly exitCode: number
  /** The call's result as JSON (success), or empty. */
  readonly stdout: string
  /** The call's ErrorInfo as JSON (failure), or empty. */
  readonly stderr: string
  readonly at: number
}

interface HostJob {
  readonly id: string
  readonly tool: string
  /** The VMs the call is about; its job is found through any of them. */
  readonly vms: ReadonlyArray<string>
  readonly started: string
  readonly fiber: Fiber.RuntimeFiber<unknown, unknown>
  /** Completed by the job's watcher once the call has ended. */
  readonly finished: Deferred.Deferred<Finished>
  readonly killed: Ref.Ref<boolean>
}

export interface HostJobOutput {
  readonly data: Uint8Array
  readonly size: number
  readonly truncated: boolean
}

export interface HostJobsApi {
  /** Takes over a running call: it goes on after its caller stops waiting, under a new job id. */
  readonly adopt: (
    fiber: Fiber.RuntimeFiber<unknown, unknown>,
    tool: string,
    vms: ReadonlyArray<string>
  ) => Effect.Effect<string>
  readonly status: (vm: string, id: string) => Effect.Effect<typeof JobStatus.Type, NotFound>
  readonly wait: (vm: string, id: string, seconds: number) => Effect.Effect<typeof JobWaited.Type, NotFound>
  readonly output: (
    vm: string,
    id: string,
    stream: "stdout" | "stderr",
    offset: number,
    maxBytes: number
  ) => Effect.Effect<HostJobOutput, NotFound>
  /** Interrupts the call (its work releases what it holds, as on a cancel). */
  readonly kill: (vm: string, id: string) => Effect.Effect<typeof JobKilled.Type, NotFound>
  readonly list: (vm: string) => Effect.Effect<ReadonlyArray<typeof JobInfo.Type>>
}

/** Calls of this process that outlived their callers; the job tools read them like guest jobs. */
export class HostJobs extends Context.Tag("@stoat/core/HostJobs")<HostJobs, HostJobsApi>() {}

const outcomeOf = (exit: Exit.Exit<unknown, unknown>, killed: boolean, at: number): Finished => {
  if (Exit.isSuccess(exit)) return { exitCode: 0, stdout: `${JSON.stringify(exit.value)}\n`, stderr: "", at }
  return {
    exitCode: killed ? KILLED_EXIT_CODE : 1,
    stdout: "",
    stderr: `${JSON.stringify(toErrorInfo(exit.cause))}\n`,
    at
  }
}

const tail = (text: string): string => {
  const bytes = Buffer.from(text)
  return bytes.length <= TAIL_BYTES ? text : bytes.subarray(bytes.length - TAIL_BYTES).toString("utf8")
}

const make = Effect.gen(function* () {
  const jobs = new Map<string, HostJob>()

  const outcome = (job: HostJob) =>
    Effect.flatMap(Deferred.poll(job.finished), (done) =>
      done._tag === "Some" ? Effect.asSome(done.value) : Effect.succeedNone
    )

  const forgetOld = (now: number) =>
    Effect.forEach(
      [...jobs.values()],
      (job) =>
        Effect.map(
          outcome(job),
          (done) => Option.exists(done, (d) => now - d.at > Duration.toMillis(KEEP_FINISHED)) && jobs.delete(job.id)
        ),
      { discard: true }
    )

  const find = (vm: string, id: string) =>
    Effect.suspend(() => {
      const job = jobs.get(id)
      return job !== undefined && job.vms.includes(vm)
        ? Effect.succeed(job)
        : Effect.fail(new NotFound({ message: `vm "${vm}" has no job ${id}; list_jobs shows its jobs`, subject: id }))
    })

  const stateOf = (job: HostJob) =>
    Effect.map(outcome(job), (done) =>
      Option.match(done, {
        onNone: () => ({ job_id: job.id, state: "running" as const }),
        onSome: (d) => ({ job_id: job.id, state: "exited" as const, exit_code: d.exitCode })
      })
    )

  yield* Effect.addFinalizer(() =>
    Effect.forEach([...jobs.values()], (job) => Fiber.interrupt(job.fiber), { discard: true })
  )

  return HostJobs.of({
    adopt: (fiber, tool, vms) =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        yield* forgetOld(now)
        let id: string
        do id = `h-${randomBytes(4).toString("hex")}`
        while (jobs.has(id))
        const job: HostJob = {
          id,
          tool,
          vms,
          started: new Date(now).toISOString(),
          fiber,
          finished: yield* Deferred.make<Finished>(),
          killed: yield* Ref.make(false)
        }
        jobs.set(id, job)
        // The watcher outlives the call that adopted the job, like the job itself.
        yield* Effect.forkDaemon(
          Effect.gen(function* () {
            const exit = yield* Fiber.await(fiber)
            const at = yield* Clock.currentTimeMillis
            yield* Deferred.succeed(job.finished, outcomeOf(exit, yield* Ref.get(job.killed), at))
          })
        )
        return id
      }),
    status: (vm, id) => Effect.flatMap(find(vm, id), stateOf),
    wait: (vm, id, seconds) =>
      Effect.gen(function* () {
        const job = yield* find(vm, id)
        const done = yield* Deferred.await(job.finished).pipe(Effect.timeoutOption(Duration.seconds(seconds)))
        return Option.match(done, {
          onNone: () => ({ job_id: job.id, state: "running" as const, stdout_tail: "", stderr_tail: "" }),
          onSome: (d) => ({
            job_id: job.id,
            state: "exited" as const,
            exit_code: d.exitCode,
            stdout_tail: tail(d.stdout),
            stderr_tail: tail(d.stderr)
          })
        })
      }),
    output: (vm, id, stream, offset, maxBytes) =>
      Effect.gen(function* () {
        const job = yield* find(vm, id)
        const done = yield* outcome(job)
        const text = Option.match(done, {
          onNone: () => "",
          onSome: (d) => (stream === "stdout" ? d.stdout : d.stderr)
        })
        const bytes = Buffer.from(text)
        const end = maxBytes === 0 ? bytes.length : Math.min(bytes.length, offset + maxBytes)
        const data = bytes.subarray(Math.min(offset, bytes.length), end)
        return { data, size: bytes.length, truncated: end < bytes.length }
      }),
    kill: (vm, id) =>
      Effect.gen(function* () {
        const job = yield* find(vm, id)
        const running = !(yield* Deferred.isDone(job.finished))
        if (running) {
          yield* Ref.set(job.killed, true)
          yield* Fiber.interrupt(job.fiber)
          yield* Deferred.await(job.finished)
        }
        return { ...(yield* stateOf(job)), signaled: running }
      }),
    list: (vm) =>
      Effect.forEach(
        [...jobs.values()].filter((job) => job.vms.includes(vm)),
        (job) =>
          Effect.map(stateOf(job), ({ state }) => ({
            job_id: job.id,
            argv: [job.tool],
            user: "(host)",
            started: job.started,
            state
          }))
      )
  })
})

/** The registry of one process; jobs still running when the layer is released are interrupted. */
export const HostJobsLive = Layer.scoped(HostJobs, make)
