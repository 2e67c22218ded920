import { Schema } from "effect"
import { ErrorCode } from "./errors.js"

export const InitResult = Schema.Struct({
  path: Schema.String,
  project: Schema.String,
  gitignore_updated: Schema.Boolean
})
export const Drift = Schema.Struct({
  field: Schema.String,
  from: Schema.String,
  to: Schema.String,
  needs_restart: Schema.Boolean
})
export const ProjectVmStatus = Schema.Struct({
  key: Schema.String,
  name: Schema.String,
  /** A VM state, or `missing` when the declared VM does not exist yet. */
  state: Schema.String,
  health: Schema.String,
  drift: Schema.Array(Drift),
  error: Schema.optional(Schema.String)
})
export const ProjectStatus = Schema.Struct({
  project: Schema.String,
  dir: Schema.String,
  vms: Schema.Array(ProjectVmStatus)
})
export const ProjectRunVm = Schema.Struct({
  key: Schema.String,
  name: Schema.String,
  status: Schema.Literal("ok", "error", "skipped"),
  error: Schema.optional(Schema.String),
  /** The failure's wire code (with error), so a caller branches on it as on a tool's own error. */
  code: Schema.optional(ErrorCode)
})
export const ProjectRun = Schema.Struct({ project: Schema.String, vms: Schema.Array(ProjectRunVm) })
