import { basename } from "node:path"
import { Effect, Option, Schema } from "effect"
import { CapabilityReport, PruneResult, type Capability } from "@stoat/wire"
import * as fs from "../platform/fs.js"
import { HostProbe } from "../platform/host.js"
import { Images, type StaleImageFile } from "../images/service.js"
import { Locks } from "../platform/locks.js"
import { Hypervisor } from "../ports/hypervisor.js"
import { Checkpoints, MAX_FORKS_PER_CALL } from "../checkpoints/index.js"
import { ProjectScope } from "../projects/service.js"
import { effectiveAccess } from "../vm/config.js"
import { ACCESS_ORDER } from "../context/access-policy.js"
import { VmStore } from "../vm/store.js"
import { STOAT_VERSION } from "../version.js"
import { VmName } from "./inputs.js"
import { defineOperation, DESTRUCTIVE, READ } from "./operation.js"

type PruneClass = "broken_vm" | "orphaned_checkpoint" | "crash_leftover" | StaleImageFile["class"]

export const prune = defineOperation({
  key: "host.prune",
  tool: "prune",
  expose: { cli: "prune", mcp: true },
  title: "Remove stale files",
  description:
    "Find stale files (partial downloads, orphaned checkpoint files, what a crashed VM left; with broken, broken VMs; with images, unused images) and, with apply=true, delete them.",
  kind: "command",
  input: Schema.Struct({
    apply: Schema.optional(Schema.Boolean).annotations({
      description: "Delete what was found (default false: a dry run)"
    }),
    broken: Schema.optional(Schema.Boolean).annotations({
      description: "Include broken VMs, never a running one (default false)"
    }),
    images: Schema.optional(Schema.Boolean).annotations({ description: "Include images no VM uses (default false)" })
  }),
  output: PruneResult,
  annotations: DESTRUCTIVE,
  touches: ["deletes"],
  access: null,
  // A dry run deletes nothing; applying is confirmed with the word "prune".
  confirm: (input) => (input.apply === true ? "prune" : undefined),
  run: (input) =>
    Effect.gen(function* () {
      const images = yield* Images
      const store = yield* VmStore
      const hypervisor = yield* Hypervisor
      return yield* (yield* Locks).withRootLock(
        Effect.gen(function* () {
          const items: Array<{ class: PruneClass; path: string }> = [
            ...(yield* images.stale({ unreferenced: input.images === true }))
          ]
          for (const path of yield* (yield* Checkpoints).orphans) items.push({ class: "orphaned_checkpoint", path })
          for (const record of yield* store.list) {
            const state = yield* hypervisor.status({ name: record.name, dir: record.dir })
            // A running VM's files are in use, a broken one's included; leave them alone.
            if (state.running) continue
            for (const path of state.leftovers ?? []) items.push({ class: "crash_leftover", path })
            if (input.broken && record.kind === "broken") items.push({ class: "broken_vm", path: record.dir })
          }
          const label = (item: { class: PruneClass; path: string }) => `${item.class}: ${item.path}`
          items.sort((a, b) => label(a).localeCompare(label(b)))
          if (input.apply) {
            for (const item of items) {
              yield* item.class === "broken_vm"
                ? store.remove(basename(item.path))
                : fs.remove(item.path, { force: true, recursive: item.class === "orphaned_checkpoint" })
            }
          }
          return { dry_run: input.apply !== true, items }
        })
      )
    })
})

const capability = (
  name: string,
  status: Capability["status"],
  scope: string,
  extra: Partial<Capability> = {}
): Capability => ({
  name,
  status,
  scope,
  requirements: [],
  limits: [],
  evidence: [],
  ...extra
})

export const capabilities = defineOperation({
  key: "host.capabilities",
  tool: "capabilities",
  expose: { cli: "capabilities", mcp: true },
  title: "Report capabilities",
  description:
    "What this host and build can do (lifecycle, snapshots, recipes, projects, MCP access levels) and what is unavailable. Reads host checks and stored metadata only.",
  kind: "query",
  input: Schema.Struct({
    vm: Schema.optional(VmName).annotations({ description: "One VM to report on; omit for host and project scope" })
  }),
  output: CapabilityReport,
  annotations: READ,
  access: null,
  run: (input) =>
    Effect.gen(function* () {
      const host = yield* HostProbe
      const qemu = yield* host.which("qemu-system-x86_64")
      const qemuImg = yield* host.which("qemu-img")
      const kvm = yield* fs.isPresent("/dev/kvm")
      // The frontend's project (its working directory): a stoat.toml that does not decode is unknown.
      const project = yield* Effect.either((yield* ProjectScope).current)
      const projectState =
        project._tag === "Left"
          ? ("unknown" as const)
          : Option.isSome(project.right)
            ? ("available" as const)
            : ("absent" as const)
      const record = input.vm === undefined ? undefined : yield* (yield* VmStore).get(input.vm)
      const target =
        record?.kind === "ok"
          ? { name: record.name, mode: record.config.mode, agent_access: effectiveAccess(record.config) }
          : undefined
      const evidence = (name: string, found: string | undefined) => ({
        kind: "program",
        source: name,
        result: found ?? "missing"
      })
      const qemuOk = qemu !== undefined && qemuImg !== undefined
      const missing = { code: "host_requirement_missing" }
      const qemuProfile = capability("qemu-x86_64", qemuOk ? (kvm ? "supported" : "limited") : "unsupported", "host", {
        requirements: [
          { kind: "program", name: "qemu-system-x86_64", value: "" },
          { kind: "program", name: "qemu-img", value: "" },
          { kind: "device", name: "/dev/kvm", value: "optional (TCG otherwise)" }
        ],
        limits: qemuOk ? [] : [missing],
        evidence: [
          evidence("qemu-system-x86_64", qemu),
          evidence("qemu-img", qemuImg),
          { kind: "device", source: "/dev/kvm", result: kvm ? "present" : "absent" }
        ]
      })
      const notBuilt = { reason: { code: "not_implemented" } }
      const guestLevel = (level: "observe" | "manage" | "exec") => {
        if (!target) return capability(`mcp.guest.${level}`, "limited", "vm", { limits: [{ code: "target_required" }] })
        const allowed = ACCESS_ORDER.indexOf(target.agent_access) >= ACCESS_ORDER.indexOf(level)
        return capability(
          `mcp.guest.${level}`,
          allowed ? "supported" : "limited",
          "vm",
          allowed ? {} : { limits: [{ code: "agent_access_required", value: level }] }
        )
      }
      return {
        schema: 1,
        stoat_version: STOAT_VERSION,
        host: { os: process.platform, arch: process.arch, project_state: projectState },
        ...(target ? { target } : {}),
        access_policy: {
          mcp_agent_access_enforced: true,
          cli_agent_access_enforced: false,
          cli_commands: ["exec", "cp"]
        },
        profiles: [
          qemuProfile,
          capability("recipe-sh", "supported", "host"),
          // python3 recipes need the guest definition to name a python3 package (tiny names none).
          capability("recipe-python3", "limited", "vm")
        ],
        capabilities: [
          capability("vm.lifecycle", qemuOk ? "supported" : "unsupported", "host", qemuOk ? {} : { limits: [missing] }),
          target?.mode === "live"
            ? capability("vm.snapshot", "limited", "vm", { limits: [{ code: "disk_required" }] })
            : capability("vm.snapshot", qemuOk ? "supported" : "unsupported", target ? "vm" : "host"),
          target?.mode === "live"
            ? capability("vm.checkpoint", "limited", "vm", { limits: [{ code: "disk_required" }] })
            : capability("vm.checkpoint", qemuOk ? "supported" : "unsupported", target ? "vm" : "host", {
                requirements: [{ kind: "vm_state", name: "running", value: "the source runs" }],
                limits: [
                  { code: "shares_remounted", value: "9p shares are unmounted in the guest during the checkpoint" },
                  ...(qemuOk ? [] : [missing])
                ]
              }),
          target?.mode === "live"
            ? capability("vm.fork", "limited", "vm", { limits: [{ code: "disk_required" }] })
            : capability("vm.fork", qemuOk ? "supported" : "unsupported", target ? "vm" : "host", {
                requirements: [{ kind: "checkpoint", name: "checkpoint", value: "a usable checkpoint of the source" }],
                limits: [
                  { code: "max_forks_per_call", value: String(MAX_FORKS_PER_CALL) },
                  { code: "same_accelerator", value: "forks run under the accelerator the checkpoint was taken under" },
                  {
                    code: "same_devices",
                    value: "forks keep the source's RAM size, vCPUs and devices at the checkpoint"
                  },
                  ...(qemuOk ? [] : [missing])
                ]
              }),
          capability("recipes", "supported", "host"),
          projectState === "available"
            ? capability("project.operations", "supported", "project")
            : capability("project.operations", "limited", "project", {
                limits: [{ code: "project_file_required" }],
                ...(projectState === "unknown" ? { reason: { code: "project_state_unknown" } } : {})
              }),
          guestLevel("observe"),
          guestLevel("manage"),
          guestLevel("exec"),
          capability("cli.guest.shell", "supported", "host"),
          capability("host.diagnostics", "supported", "host")
        ],
        unavailable: [capability("runtime.continuation", "unsupported", "vm", notBuilt)]
      }
    })
})
