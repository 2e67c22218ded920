import { doctor, getVm, guestInfo, listGuests, listVms, version } from "./read-ops.js"
import { execInGuest, guestOperations } from "./guest-ops.js"
import { listImagesOp, pullImage } from "./image-ops.js"
import { capabilities, prune } from "./maintenance-ops.js"
import { deleteSnapshot, listSnapshots, restoreSnapshot, saveSnapshot } from "./snapshot-ops.js"
import { cloneVm, createVm, destroyVm, forwardPorts, screenshotVm, startVm, stopVm, stoatLog, updateVm, vmLogs, waitVm } from "./vm-ops.js"
import type { Operation } from "./operation.js"

export * from "./operation.js"
export * from "./inputs.js"
export * from "./read-ops.js"
export * from "./vm-ops.js"
export * from "./snapshot-ops.js"
export * from "./guest-ops.js"
export * from "./image-ops.js"
export * from "./maintenance-ops.js"

/** Every operation Stoat offers, in the order tools are listed. */
export const catalog: ReadonlyArray<Operation> = [
  listVms,
  getVm,
  listGuests,
  guestInfo,
  doctor,
  version,
  createVm,
  startVm,
  stopVm,
  waitVm,
  destroyVm,
  updateVm,
  cloneVm,
  forwardPorts,
  vmLogs,
  stoatLog,
  screenshotVm,
  listSnapshots,
  saveSnapshot,
  restoreSnapshot,
  deleteSnapshot,
  execInGuest,
  ...guestOperations,
  listImagesOp,
  pullImage,
  prune,
  capabilities
]

export const operationByKey = (key: string): Operation | undefined => catalog.find((operation) => operation.key === key)
