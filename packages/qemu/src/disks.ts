import { existsSync } from "node:fs"
import { isAbsolute, join, relative, resolve, sep } from "node:path"
import { isBaseImage, type DiskInfo, type DiskRef, type VmRef } from "@stoat/core"
import type { ImageInfo } from "./qemu-img.js"

/** A file core names relative to a VM's folder, on this host. Core never names one outside it; doing so is a bug. */
export const vmFilePath = (vm: VmRef, file: string): string => {
  if (file === "" || isAbsolute(file) || file.split("/").includes(".."))
    throw new Error(`"${file}" is not a file inside the folder of VM "${vm.name}"`)
  return join(vm.dir, file)
}

/** The host file behind a disk reference: a VM's disk lies in its folder, a base image is its own file. */
export const hostPathOf = (disk: DiskRef): string => (isBaseImage(disk) ? disk.image : vmFilePath(disk.vm, disk.file))

/**
 * The reference for a host file QEMU names (a backing file): a disk of the VM whose folder holds
 * it (a folder of the data root with a vm.toml), else a base image of its own.
 */
export const diskRefAt = (dataRoot: string, path: string): DiskRef => {
  const root = resolve(dataRoot)
  const absolute = resolve(path)
  const [name, ...rest] = relative(root, absolute).split(sep)
  if (name === undefined || name === ".." || rest.length === 0) return { image: absolute }
  const dir = join(root, name)
  return existsSync(join(dir, "vm.toml")) ? { vm: { name, dir }, file: rest.join("/") } : { image: absolute }
}

/** qemu-img's answer as the port's: the backing file as a disk reference. */
export const diskInfoOf = (dataRoot: string, info: ImageInfo): DiskInfo => ({
  virtualSize: info.virtualSize,
  actualSize: info.actualSize,
  format: info.format,
  ...(info.backingPath !== undefined ? { backing: diskRefAt(dataRoot, info.backingPath) } : {})
})
