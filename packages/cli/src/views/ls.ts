import type { Vm } from "@stoat/wire"
import { mib, stateCell, table } from "../render.js"

/** Where a VM runs: local (QEMU here), or libvirt and its host. */
const whereOf = (vm: Vm): string =>
  vm.provider === "libvirt" ? `libvirt:${vm.host ?? "qemu:///system"}` : (vm.provider ?? "local")

/** The `stoat ls` table, and a line per VM with something to say: a broken one's reason, a crashed one's way back. */
export const renderVmList = (vms: ReadonlyArray<Vm>): string => {
  if (vms.length === 0) return "no VMs; create one with: stoat create <name> --image tiny"
  const rows = vms.map((vm) =>
    vm.state === "broken"
      ? // A broken vm.toml tells nothing but the name; a VM whose host does not answer keeps its mode and place.
        [vm.name, vm.mode || "-", stateCell("broken"), whereOf(vm), "-", "-", vm.ssh_port ? String(vm.ssh_port) : "-"]
      : [vm.name, vm.mode, stateCell(vm.state), whereOf(vm), String(vm.cpus), mib(vm.ram_mb), String(vm.ssh_port)]
  )
  const notes = vms.flatMap((vm) =>
    vm.state === "broken"
      ? [`${vm.name}: broken: ${vm.error ?? "unknown reason"}`]
      : vm.error !== undefined
        ? [`${vm.name}: ${vm.error}`]
        : []
  )
  return [table(["NAME", "MODE", "STATE", "WHERE", "CPUS", "RAM", "SSH"], rows), ...notes].join("\n")
}
