import { Schema } from "effect"
import { Int } from "./primitives.js"

/** Output of `exec`: a stream that is not valid UTF-8 travels as base64 in `<stream>_base64`. */
export const ExecResult = Schema.Struct({
  exit_code: Int,
  stdout: Schema.optional(Schema.String),
  stdout_base64: Schema.optional(Schema.String),
  stdout_encoding: Schema.optional(Schema.Literal("base64")),
  stderr: Schema.optional(Schema.String),
  stderr_base64: Schema.optional(Schema.String),
  stderr_encoding: Schema.optional(Schema.Literal("base64")),
  /** The command was stopped at timeout_seconds; the output is what it wrote until then. */
  timed_out: Schema.optional(Schema.Boolean),
  /** A stream went past the output cap and was cut there. */
  truncated: Schema.optional(Schema.Boolean),
  /** What to do next, when something needs saying (a timeout points at exec_bg). */
  message: Schema.optional(Schema.String)
})
export type ExecResult = typeof ExecResult.Type
/** `stoat exec --json`: the VM name plus ExecResult (a non-UTF-8 stream as base64, as there). */
export const CliExecResult = Schema.Struct({
  vm: Schema.String,
  ...ExecResult.fields
})

export const CommandResult = Schema.Struct({ stdout: Schema.String, stderr: Schema.String, exit_code: Int })
export type CommandResult = typeof CommandResult.Type
export const SvcStatus = Schema.Struct({
  ...CommandResult.fields,
  active: Schema.Boolean,
  enabled: Schema.Boolean
})

export type SvcStatus = typeof SvcStatus.Type
export const FileContent = Schema.Struct({
  content: Schema.String,
  encoding: Schema.optional(Schema.Literal("base64")),
  size: Int,
  truncated: Schema.Boolean
})
export type FileContent = typeof FileContent.Type

export const DirEntry = Schema.Struct({
  name: Schema.String,
  type: Schema.String,
  size: Int,
  /** Octal permission bits, e.g. "0644". */
  mode: Schema.String,
  mtime: Schema.String,
  owner: Schema.String
})
export type DirEntry = typeof DirEntry.Type
export const DirListing = Schema.Struct({ entries: Schema.Array(DirEntry), truncated: Schema.Boolean })

export type DirListing = typeof DirListing.Type
export const ProcessInfo = Schema.Struct({
  pid: Int,
  ppid: Int,
  user: Schema.String,
  elapsed: Schema.optional(Schema.String),
  command: Schema.String
})
export const ProcessList = Schema.Struct({ processes: Schema.Array(ProcessInfo), truncated: Schema.Boolean })
export type ProcessList = typeof ProcessList.Type
export const TailLines = Schema.Struct({ lines: Schema.Array(Schema.String) })
export type TailLines = typeof TailLines.Type
export const WriteFileResult = Schema.Struct({ path: Schema.String, bytes: Int, mode: Schema.String })

export type WriteFileResult = typeof WriteFileResult.Type
export const JobState = Schema.Literal("starting", "running", "exited", "unknown")
export const JobStarted = Schema.Struct({ job_id: Schema.String, dir: Schema.String })
export const JobStatus = Schema.Struct({
  job_id: Schema.String,
  state: JobState,
  exit_code: Schema.optional(Int)
})
export const JobKilled = Schema.Struct({
  job_id: Schema.String,
  state: JobState,
  exit_code: Schema.optional(Int),
  signaled: Schema.Boolean
})
export const JobWaited = Schema.Struct({
  job_id: Schema.String,
  state: JobState,
  exit_code: Schema.optional(Int),
  stdout_tail: Schema.String,
  stderr_tail: Schema.String
})
export const JobInfo = Schema.Struct({
  job_id: Schema.String,
  argv: Schema.Array(Schema.String),
  user: Schema.String,
  cwd: Schema.optional(Schema.String),
  started: Schema.String,
  state: JobState
})
export const JobList = Schema.Struct({ jobs: Schema.Array(JobInfo) })
