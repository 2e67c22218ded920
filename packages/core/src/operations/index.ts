import { doctor, getVm, guestInfo, listGuests, listVms, version } from "./read.js"
import { execInGuest, guestOperations } from "./guest.js"
import { copyFrom, copyTo } from "./copy.js"
import { sshCommand } from "./ssh.js"
import { execBackground, jobKill, jobOutput, jobStatus, jobWait, listJobs } from "./job.js"
import { listImages, pullImage } from "./image.js"
import { capabilities, prune } from "./host.js"
import { deleteCheckpoint, forkCheckpoint, listCheckpoints, takeCheckpoint } from "./checkpoint.js"
import { deleteSnapshot, listSnapshots, restoreSnapshot, saveSnapshot } from "./snapshot.js"
import {
  cloneVm,
  createVm,
  destroyVm,
  forwardPorts,
  screenshotVm,
  startVm,
  stopVm,
  stoatLog,
  updateVm,
  vmLogs,
  waitVm
} from "./vm.js"
import {
  applyRecipes,
  checkRecipes,
  listRecipeEntries,
  listRecipes,
  newRecipe,
  planRecipes,
  recipeSchema,
  refreshRecipes
} from "./recipe.js"
import { projectOperations } from "./project.js"
import { remoteRecipeOperations } from "./remote-recipe.js"
import type { Operation } from "./operation.js"

export * from "./operation.js"
export * from "./inputs.js"
export * from "./read.js"
export * from "./vm.js"
export * from "./snapshot.js"
export * from "./guest.js"
export * from "./job.js"
export * from "./copy.js"
export * from "./ssh.js"
export * from "./image.js"
export * from "./host.js"
export * from "./checkpoint.js"
export * from "./recipe.js"
export * from "./project.js"
export * from "./remote-recipe.js"
export * from "./logs.js"

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
  listImages,
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
