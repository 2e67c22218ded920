import { Schema } from "effect"
import { Int } from "./primitives.js"

export const HostCheck = Schema.Struct({
  name: Schema.String,
  ok: Schema.Boolean,
  detail: Schema.String,
  fix: Schema.Array(Schema.String),
  optional: Schema.Boolean
})
export type HostCheck = typeof HostCheck.Type

/** healthy is false exactly when a non-optional check failed. */
export const DoctorReport = Schema.Struct({ healthy: Schema.Boolean, checks: Schema.Array(HostCheck) })
export type DoctorReport = typeof DoctorReport.Type

export const VersionInfo = Schema.Struct({ version: Schema.String, contract: Int })
export type VersionInfo = typeof VersionInfo.Type

const Requirement = Schema.Struct({ kind: Schema.String, name: Schema.String, value: Schema.String })
const Limit = Schema.Struct({ code: Schema.String, value: Schema.optional(Schema.String) })
const Evidence = Schema.Struct({ kind: Schema.String, source: Schema.String, result: Schema.String })
export const CapabilityStatus = Schema.Literal("supported", "limited", "unsupported", "unknown")

export const Capability = Schema.Struct({
  name: Schema.String,
  status: CapabilityStatus,
  scope: Schema.String,
  requirements: Schema.Array(Requirement),
  limits: Schema.Array(Limit),
  reason: Schema.optional(Schema.Struct({ code: Schema.String })),
  evidence: Schema.Array(Evidence)
})
export type Capability = typeof Capability.Type

export const CapabilityReport = Schema.Struct({
  schema: Int,
  stoat_version: Schema.String,
  host: Schema.Struct({
    os: Schema.String,
    arch: Schema.String,
    project_state: Schema.Literal("available", "absent", "unknown")
  }),
  target: Schema.optional(Schema.Struct({ name: Schema.String, mode: Schema.String, agent_access: Schema.String })),
  access_policy: Schema.Struct({
    mcp_agent_access_enforced: Schema.Boolean,
    cli_agent_access_enforced: Schema.Boolean,
    cli_commands: Schema.Array(Schema.String)
  }),
  profiles: Schema.Array(Capability),
  capabilities: Schema.Array(Capability),
  unavailable: Schema.Array(Capability)
})
export type CapabilityReport = typeof CapabilityReport.Type
