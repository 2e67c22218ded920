import { Schema } from "effect"
import { Int } from "./primitives.js"

export const VmState = Schema.Literal("stopped", "running", "broken")
export const Mode = Schema.Literal("live", "disk", "cloud")
export const Backend = Schema.Literal("apkovl", "cloudinit", "ssh", "direct")
export const AgentAccess = Schema.Literal("none", "observe", "manage", "exec")
export type AgentAccess = typeof AgentAccess.Type
export const Health = Schema.Literal("ok", "failed", "unknown")
/** Effective display surface on the wire; "" when not known (a stopped VM with `auto`). */
export const DisplaySurface = Schema.Literal("window", "vnc", "")

export const Forward = Schema.Struct({ host_port: Int, guest_port: Int })
export type Forward = typeof Forward.Type

/** A VM as the contract shows it. Never carries host paths, the VNC socket, console password, iso or base. */
export const Vm = Schema.Struct({
  name: Schema.String,
  os: Schema.String,
  mode: Schema.String,
  backend: Schema.String,
  state: VmState,
  cpus: Int,
  ram_mb: Int,
  disk: Schema.String,
  share: Schema.String,
  recipes: Schema.Array(Schema.String),
  ssh_port: Int,
  ssh_user: Schema.String,
  installed: Schema.Boolean,
  forwards: Schema.Array(Forward),
  allow_exec: Schema.Boolean,
  agent_access: Schema.String,
  display: DisplaySurface,
  error: Schema.optional(Schema.String),
  project: Schema.String,
  key: Schema.String,
  project_missing: Schema.Boolean,
  provider: Schema.optional(Schema.String),
  /** A libvirt VM's host: its libvirt URI (absent for the local default, qemu:///system). */
  host: Schema.optional(Schema.String),
  gcp_project: Schema.optional(Schema.String),
  gcp_zone: Schema.optional(Schema.String),
  machine_type: Schema.optional(Schema.String),
  address: Schema.optional(Schema.String),
  hard_deadline: Schema.optional(Schema.String),
  soft_deadline: Schema.optional(Schema.String),
  shared_dir: Schema.String,
  shared_mount: Schema.String
})
export type Vm = typeof Vm.Type

export const RecipeDetail = Schema.Struct({
  name: Schema.String,
  applied: Schema.Boolean,
  version: Schema.String,
  at: Schema.String,
  health: Schema.String,
  /** Secret params show as `<set>` / `<unset>`. */
  params: Schema.Record({ key: Schema.String, value: Schema.String }),
  outputs: Schema.Record({ key: Schema.String, value: Schema.String })
})
export type RecipeDetail = typeof RecipeDetail.Type

export const VmStatus = Schema.Struct({
  ...Vm.fields,
  health: Schema.String,
  recipes_detail: Schema.Array(RecipeDetail)
})
export type VmStatus = typeof VmStatus.Type

export const VmList = Schema.Struct({ vms: Schema.Array(Vm) })
export type VmList = typeof VmList.Type
export const VmGet = Schema.Struct({ vm: VmStatus })
export const VmResult = Schema.Struct({ vm: Vm })

export const AppliesAt = Schema.Literal("now", "next_start")
export const UpdateResult = Schema.Struct({
  vm: Vm,
  changed: Schema.Array(Schema.String),
  applies_at: AppliesAt,
  pending_restart: Schema.Array(Schema.String)
})
/** `stoat update --json` data (reference §4): the MCP result without its pending_restart list. */
export const CliUpdateResult = Schema.Struct({ vm: Vm, changed: Schema.Array(Schema.String), applies_at: AppliesAt })
export const WaitResult = Schema.Struct({
  vm: Schema.String,
  until: Schema.String,
  reached: Schema.Boolean,
  waited_ms: Int,
  healthy: Schema.optional(Schema.Boolean)
})
export const DestroyResult = Schema.Struct({ name: Schema.String, destroyed: Schema.Boolean })
export const RmResult = Schema.Struct({ deleted: Schema.Boolean, name: Schema.String })
export const CloneResult = Schema.Struct({ forwards_copied: Schema.Boolean, source: Schema.String, vm: Vm })
export const ForwardResult = Schema.Struct({
  vm: Schema.String,
  forwards: Schema.Array(Forward),
  active: Schema.Boolean,
  applies_at: Schema.optional(AppliesAt)
})
export const LogLines = Schema.Struct({
  vm: Schema.optional(Schema.String),
  which: Schema.optional(Schema.String),
  lines: Schema.Array(Schema.String)
})
export const ScreenshotResult = Schema.Struct({
  vm: Schema.String,
  path: Schema.String,
  bytes: Int,
  width: Int,
  height: Int
})
export const SshCommand = Schema.Struct({ argv: Schema.Array(Schema.String) })
export const CopyResult = Schema.Struct({
  vm: Schema.String,
  direction: Schema.Literal("to_guest", "from_guest"),
  local: Schema.String,
  remote: Schema.String
})
export const McpCopyResult = Schema.Struct({
  vm: Schema.String,
  local: Schema.String,
  remote: Schema.String,
  to_remote: Schema.Boolean
})
