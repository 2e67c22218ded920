import { join } from "node:path"
import { Duration, Effect, Option, Schedule, Schema } from "effect"
import { parse, stringify } from "smol-toml"
import { InvalidSpec, Timeout, type InUse } from "../errors.js"
import { Locks } from "../platform/locks.js"
import * as fs from "../platform/fs.js"

/** `j-` + 8 hex digits, as the original names jobs. */
export const JOB_ID = /^j-[0-9a-f]{8}$/

export const JobRecord = Schema.Struct({
  argv: Schema.Array(Schema.String),
  user: Schema.String,
  cwd: Schema.optional(Schema.String),
  dir: Schema.String,
  started: Schema.String
})
export type JobRecord = typeof JobRecord.Type

const JobsFile = Schema.Struct({
  schema: Schema.Literal(1),
  // A refined key schema would drop a non-matching key silently; a key that is no job id is corruption.
  jobs: Schema.optionalWith(
    Schema.Record({ key: Schema.String, value: JobRecord }).pipe(
      Schema.filter((jobs) => Object.keys(jobs).every((id) => JOB_ID.test(id)))
    ),
    { default: () => ({}) }
  )
})

export const jobsFilePath = (vmDir: string): string => join(vmDir, "jobs.toml")
const HEADER = "# written by stoat; do not edit\n"

const corrupt = (path: string, why: string) =>
  new InvalidSpec({
    message: `the job registry ${path} is corrupted (${why}); move it away to start a new one`,
    subject: path
  })

/** The jobs recorded for one VM, in the order they were started. A missing file is no jobs. */
export const readJobs = (
  vmDir: string
): Effect.Effect<ReadonlyArray<readonly [string, JobRecord]>, InvalidSpec | fs.FsError> =>
  Effect.gen(function* () {
    const path = jobsFilePath(vmDir)
    const text = yield* fs.readFileStringIfExists(path)
    if (Option.isNone(text)) return []
    const table = yield* Effect.try({
      try: () => parse(text.value),
      catch: () => corrupt(path, "it does not parse as TOML")
    })
    const decoded = yield* Schema.decodeUnknown(JobsFile)(table).pipe(
      Effect.mapError(() => corrupt(path, "its entries are not jobs stoat wrote"))
    )
    return Object.entries(decoded.jobs)
  })

/** How long a registry change waits for another process's change to the same VM's registry. */
const LOCK_WAIT = Duration.seconds(10)
const LOCK_RETRY = Schedule.union(Schedule.exponential(Duration.millis(5)), Schedule.spaced(Duration.millis(50))).pipe(
  Schedule.upTo(LOCK_WAIT)
)

/**
 * Read-modify-write of the registry under `<vm>/.jobs.lock` (a cross-process lock, so parallel
 * `exec_bg` calls from the CLI and MCP servers lose no entry), written atomically (temp + rename).
 */
export const updateJobs = (
  vmDir: string,
  change: (jobs: Array<readonly [string, JobRecord]>) => Array<readonly [string, JobRecord]>
): Effect.Effect<void, InvalidSpec | fs.FsError | Timeout, Locks> =>
  Effect.gen(function* () {
    const locks = yield* Locks
    const path = jobsFilePath(vmDir)
    const write = Effect.gen(function* () {
      const jobs = change([...(yield* readJobs(vmDir))])
      yield* fs.writeFileAtomic(path, `${HEADER}${stringify({ schema: 1, jobs: Object.fromEntries(jobs) })}\n`)
    })
    yield* locks.tryLock(join(vmDir, ".jobs.lock"), `a job registry change for ${path}`, write).pipe(
      Effect.retry({ schedule: LOCK_RETRY, while: (error) => error._tag === "InUse" }),
      Effect.catchTag("InUse", (error: InUse) =>
        Effect.fail(
          new Timeout({
            message: `timed out waiting for the job registry lock of ${path}`,
            subject: error.subject ?? path
          })
        )
      )
    )
  })
