import { randomBytes } from "node:crypto"
import { readFileSync } from "node:fs"
import { isAbsolute, join } from "node:path"
import { isBaseImage, type DiskRef, type VmDisk, type VmRef } from "../ports/hypervisor.js"
import type { VmRecord } from "./store.js"
import { vmRef } from "./records.js"

/** Names the overlay a VM writes to after a checkpoint (relative to its folder); absent until the first one. */
export const topPointerPath = (dir: string): string => join(dir, "disk.top")

/**
 * The disk file a VM writes to: `disk.qcow2`, or after a checkpoint the overlay `disk.top` names
 * (a checkpoint freezes the file the VM wrote to, which the running QEMU still reads by its name,
 * so the new top gets a new name rather than the old file being moved).
 */
export const diskPath = (record: VmRecord): string => join(record.dir, diskFile(record))

/** The disk file a VM writes to, relative to its folder (see diskPath). */
export const diskFile = (record: VmRecord): string => readTopPointer(record.dir) ?? DISK_FILE

/** Where the overlays a VM writes to after a checkpoint or a restore from a frozen layer live. */
export const layersDir = (vmDir: string): string => join(vmDir, "layers")

/** A new, unique file name for a disk layer, relative to the VM's folder. */
export const newLayerFile = (): string =>
  `layers/${new Date().toISOString().replace(/[-:.]/g, "")}-${randomBytes(4).toString("hex")}.qcow2`

/** The name of a VM's first disk in its folder. */
const DISK_FILE = "disk.qcow2"

/** The disk a VM writes to, as the hypervisor addresses it. */
export const vmDisk = (record: VmRecord): VmDisk => ({ vm: vmRef(record), file: diskFile(record) })

/** The host file behind a disk reference: a VM's disk lies in its folder, a base image is the file it names. */
export const diskRefPath = (disk: DiskRef): string => (isBaseImage(disk) ? disk.image : join(disk.vm.dir, disk.file))

/** The disk a new VM (its folder being made) starts with. */
export const firstDisk = (vm: VmRef): VmDisk => ({ vm, file: DISK_FILE })

const readTopPointer = (dir: string): string | undefined => {
  try {
    const top = readFileSync(topPointerPath(dir), "utf8").trim()
    // Only a plain path inside the VM folder counts: the pointer is ours, but the folder is the user's.
    return top !== "" && !isAbsolute(top) && !top.split("/").includes("..") ? top : undefined
  } catch {
    return undefined
  }
}
