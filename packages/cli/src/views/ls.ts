import type { Vm } from "@stoat/wire"
import { mib, stateCell, table } from "../render.js"

/** The `stoat ls` table (and a line per broken VM with its reason). */
export const renderVmList = (vms: ReadonlyArray<Vm>): string => {
  if (vms.length === 0) return "no VMs; create one with: stoat create <name> --image tiny"
  const rows = vms.map((vm) =>
    vm.state === "broken"
      ? [vm.name, "-", stateCell("broken"), "local", "-", "-", vm.ssh_port ? String(vm.ssh_port) : "-"]
      : [vm.name, vm.mode, stateCell(vm.state), "local", String(vm.cpus), mib(vm.ram_mb), String(vm.ssh_port)]
  )
  const broken = vms.filter((vm) => vm.state === "broken").map((vm) => `${vm.name}: broken: ${vm.error ?? "unknown reason"}`)
  return [table(["NAME", "MODE", "STATE", "WHERE", "CPUS", "RAM", "SSH"], rows), ...broken].join("\n")
}
