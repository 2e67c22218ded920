import { doctor, getVm, guestInfo, listGuests, listVms, version } from "./read-ops.js"
import type { Operation } from "./operation.js"

export * from "./operation.js"
export * from "./inputs.js"
export * from "./read-ops.js"

/** Every operation Stoat offers, in the order tools are listed. */
export const catalog: ReadonlyArray<Operation> = [listVms, getVm, listGuests, guestInfo, doctor, version]

export const operationByKey = (key: string): Operation | undefined => catalog.find((operation) => operation.key === key)
