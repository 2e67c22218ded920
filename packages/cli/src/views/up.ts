import type { Vm } from "@stoat/wire"

/** `stoat up <vm>`'s line for people. */
export const renderUp = (vm: Pick<Vm, "name" | "ssh_port">, waited: boolean): string =>
  `${vm.name} is running (ssh port ${vm.ssh_port})${waited ? "; ssh is up" : ""}`
