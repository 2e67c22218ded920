import { doctor, getVm, guestInfo, listGuests, listVms, version } from "./read-ops.js"
import { execInGuest, guestOperations } from "./guest-ops.js"
import { copyFrom, copyTo } from "./copy-ops.js"
import { sshCommand } from "./ssh-ops.js"
import { execBackground, jobKill, jobOutput, jobStatus, jobWait, listJobs } from "./job-ops.js"
import { listImagesOp, pullImage } from "./image-ops.js"
import { capabilities, prune } from "./maintenance-ops.js"
import { deleteCheckpoint, forkCheckpoint, listCheckpoints, takeCheckpoint } from "./checkpoint-ops.js"
import { deleteSnapshot, listSnapshots, restoreSnapshot, saveSnapshot } from "./snapshot-ops.js"
import { cloneVm, createVm, destroyVm, forwardPorts, screenshotVm, startVm, stopVm, stoatLog, updateVm, vmLogs, waitVm } from "./vm-ops.js"
import { applyRecipes, checkRecipes, listRecipeEntries, listRecipes, newRecipe, planRecipes, recipeSchema, refreshRecipes } from "./recipe-ops.js"
import { projectOperations } from "./project-ops.js"
import { remoteRecipeOperations } from "./remote-recipe-ops.js"
import type { Operation } from "./operation.js"

export * from "./operation.js"
export * from "./inputs.js"
export * from "./read-ops.js"
export * from "./vm-ops.js"
export * from "./snapshot-ops.js"
export * from "./guest-ops.js"
export * from "./job-ops.js"
export * from "./copy-ops.js"
export * from "./ssh-ops.js"
export * from "./image-ops.js"
export * from "./maintenance-ops.js"
export * from "./checkpoint-ops.js"
export * from "./recipe-ops.js"
export * from "./project-ops.js"
export * from "./remote-recipe-ops.js"

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
  takeCheckpoint,
  listCheckpoints,
  deleteCheckpoint,
  forkCheckpoint,
  execInGuest,
  ...guestOperations,
  execBackground,
  jobStatus,
  jobWait,
  jobOutput,
  jobKill,
  listJobs,
  copyTo,
  copyFrom,
  sshCommand,
  listImagesOp,
  pullImage,
  prune,
  capabilities,
  listRecipes,
  listRecipeEntries,
  recipeSchema,
  checkRecipes,
  planRecipes,
  applyRecipes,
  newRecipe,
  refreshRecipes,
  ...projectOperations,
  ...remoteRecipeOperations
]

export const operationByKey = (key: string): Operation | undefined => catalog.find((operation) => operation.key === key)
