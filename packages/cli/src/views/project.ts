import type { ProjectRun, ProjectStatus } from "@stoat/wire"
import { stateCell, table } from "../render.js"

/** `stoat status`: KEY NAME STATE HEALTH DRIFT; an immutable mismatch shows its error instead of drift. */
export const renderProjectStatus = (status: typeof ProjectStatus.Type): string => {
  if (status.vms.length === 0)
    return `project ${status.project} declares no VMs; add one under [vms.<key>] in stoat.toml`
  const rows = status.vms.map((vm) => [
    vm.key,
    vm.name,
    stateCell(vm.state),
    vm.health,
    vm.error !== undefined
      ? `error: ${vm.error}`
      : vm.drift.length === 0
        ? "-"
        : vm.drift
            .map((d) => `${d.field} ${d.from || "(none)"}→${d.to || "(none)"}${d.needs_restart ? " (restart)" : ""}`)
            .join("; ")
  ])
  return table(["KEY", "NAME", "STATE", "HEALTH", "DRIFT"], rows)
}

/** A fan-out's outcome: one line per declared VM, in declaration order. */
export const renderProjectRun = (run: typeof ProjectRun.Type, done: string): string =>
  run.vms.length === 0
    ? `project ${run.project} declares no VMs`
    : run.vms
        .map(
          (vm) =>
            `${vm.key} (${vm.name}): ${vm.status === "ok" ? done : vm.status}${vm.error !== undefined ? `: ${vm.error}` : ""}`
        )
        .join("\n")

/** A fan-out with a failed VM exits 1, though its result (in JSON too) is the whole report. */
export const runFailed = (run: typeof ProjectRun.Type): boolean => run.vms.some((vm) => vm.status === "error")
