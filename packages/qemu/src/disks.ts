import { isAbsolute, join } from "node:path"
import { isBaseImage, type DiskRef, type VmRef } from "@stoat/core"

/** A file core names relative to a VM's folder, on this host. Core never names one outside it; doing so is a bug. */
export const vmFilePath = (vm: VmRef, file: string): string => {
  if (file === "" || isAbsolute(file) || file.split("/").includes("..")) throw new Error(`"${file}" is not a file inside the folder of VM "${vm.name}"`)
  return join(vm.dir, file)
}

/** The host file behind a disk reference: a VM's disk lies in its folder, a base image is its own file. */
export const hostPathOf = (disk: DiskRef): string => (isBaseImage(disk) ? disk.image : vmFilePath(disk.vm, disk.file))
