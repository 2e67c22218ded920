// The public API of @stoat/core, named one by one: the catalog, services and their layers, ports,
// errors and the types their signatures use. Internal helpers (parsers, guest scripts, one
// service's own functions) stay inside; testing, ssh and version are subpath entries.

// The operation catalog and how to run it
export { deleteCheckpoint, forkCheckpoint, listCheckpoints, takeCheckpoint } from "./operations/checkpoint.js"
export { copyFrom, copyTo } from "./operations/copy.js"
export {
  execInGuest,
  guestOperations,
  listDirOp,
  MAX_WRITE_BYTES,
  pkgInstallOp,
  psOp,
  readFileOp,
  statOp,
  svcOp,
  svcStatusOp,
  tailLogOp,
  useraddOp,
  writeFileOp
} from "./operations/guest.js"
export { capabilities, prune } from "./operations/host.js"
export { listImages, pullImage } from "./operations/image.js"
export { catalog, operationByKey } from "./operations/index.js"
export { EnvName, GuestPath, NoInput, SshPort, VmName } from "./operations/inputs.js"
export { execBackground, jobKill, jobOutput, jobStatus, jobWait, listJobs } from "./operations/job.js"
export { followLog } from "./operations/logs.js"
export {
  accessOf,
  type Annotations,
  cliDataOf,
  confirmationOf,
  defineOperation,
  DESTRUCTIVE,
  EXEC,
  type Exposure,
  hostOnly,
  hostOnlyFields,
  HostOnlyId,
  MUTATE,
  type Operation,
  READ,
  type RequiredAccess,
  targetsOf
} from "./operations/operation.js"
export {
  projectApply,
  projectDown,
  projectInit,
  projectOperations,
  projectRm,
  projectStatus,
  projectUp,
  projectVms,
  projectWait
} from "./operations/project.js"
export { doctor, getVm, guestInfo, listGuests, listVms, version, viewVms } from "./operations/read.js"
export {
  applyDryRunView,
  applyRecipes,
  checkRecipes,
  listRecipeEntries,
  listRecipes,
  newRecipe,
  planRecipes,
  RecipeName,
  recipeSchema,
  recipeSchemaView,
  recipeSummary,
  refreshRecipes
} from "./operations/recipe.js"
export {
  addRecipe,
  lockRecipes,
  remoteRecipeOperations,
  removeRecipe,
  searchRecipes,
  syncRecipes,
  updateRecipe
} from "./operations/remote-recipe.js"
export { auditCall, describeInputError, runOperation, type RunOptions } from "./operations/run.js"
export { deleteSnapshot, listSnapshots, restoreSnapshot, saveSnapshot } from "./operations/snapshot.js"
export { sshArgv, sshCommand } from "./operations/ssh.js"
export {
  cloneVm,
  createVm,
  destroyVm,
  forwardPorts,
  logFile,
  screenshotVm,
  StartFields,
  startVm,
  stoatLog,
  stopVm,
  updateVm,
  vmLogs,
  waitVm
} from "./operations/vm.js"

// Frontend context: who calls, what they may do, progress, the audit log
export { ACCESS_ORDER, AccessLevel, AccessPolicy, callerContext, callerLayer } from "./context/access-policy.js"
export { type AuditEntry, AuditLog, AuditLogLive, makeAuditLog } from "./context/audit-log.js"
export { CALLERS, Caller, cliCaller, CliCaller, McpCaller, ToolkitCaller } from "./context/caller.js"
export { type ExecutionContext } from "./context/execution.js"
export { Progress, type ProgressEvent, progressLine, progressReporter, stageReporter } from "./context/progress.js"
export { HintWording } from "./context/hint-wording.js"

// Typed errors
export { awaitSsh } from "./lifecycle/readiness.js"
export { elapsedSince, pollUntil, pollWithin, type PollOptions } from "./platform/poll.js"
export {
  advise,
  adviseFirst,
  adviseLookup,
  catalogWords,
  checkHostAt,
  checkTheHost,
  fixOrDelete,
  type Hint,
  type HintStep,
  type HintWords,
  messageOf,
  personWords,
  startIt,
  waitForSsh
} from "./errors.js"
export {
  AccessDenied,
  AlreadyRunning,
  Broken,
  Canceled,
  CannotReach,
  CapabilityUnavailable,
  ChecksumMismatch,
  ConfirmationRequired,
  DiskShrink,
  DownloadFailed,
  DownloadStalled,
  ERROR_CLASSES,
  GitRequired,
  ImageNotDownloaded,
  ImmutableField,
  Internal,
  internalError,
  InUse,
  InvalidSpec,
  isStoatError,
  AcceleratorUnusable,
  LimitReached,
  LockOutOfDate,
  ControlRejected,
  ControlUnreachable,
  NameTaken,
  NoConsolePassword,
  NoDisk,
  NoSuchImage,
  NotFound,
  NotRunning,
  NoXattr,
  ProviderMissing,
  ProviderStartFailed,
  RateLimited,
  RecipeNotApplicable,
  ScreenshotFailed,
  ShareInvalid,
  type StoatError,
  type StoatErrorShape,
  StoatErrorTypeId,
  StillRunning,
  Timeout,
  toErrorInfo,
  UnknownLog,
  Usage
} from "./errors.js"

// Ports a provider implements
export {
  type ExecOptions,
  type ExecOutput,
  GuestTransport,
  type SftpError,
  type SshEndpoint,
  type SshJump,
  type SshTarget
} from "./ports/guest-transport.js"
export {
  type Acceleration,
  type BaseImage,
  type BootPlan,
  type CheckpointRequest,
  type CheckpointTaken,
  type DiskInfo,
  type DiskRef,
  GuestSignals,
  HostChecks,
  Hypervisor,
  isBaseImage,
  type ResumePlan,
  type RunState,
  type Screenshot,
  type StartedVm,
  type VmDisk,
  type VmRef
} from "./ports/hypervisor.js"
export { type BuildOptions, ImageBuilder, type LocalImage } from "./ports/image-builder.js"

// Live layers
export { CoreLive, coreLayer, type CorePorts } from "./layers.js"
export { LazyGuestTransportLive } from "./ssh/lazy.js"

// VMs
export { DiskSize, DiskSizeInput, effectiveAccess, type ParsedVm, type VmConfig, VmFile } from "./vm/config.js"
export {
  type Placement,
  readPlacement,
  routedProviderLayer,
  sshJumpOf,
  routeGuestSignals,
  routeHypervisor
} from "./vm/placement.js"
export {
  type CreateSpec,
  type StartOptions,
  type UpdateOutcome,
  type UpdateSpec,
  Vms,
  VmsLive,
  type WaitOptions,
  type WaitOutcome
} from "./lifecycle/lifecycle.js"
export { Projects, ProjectsLive } from "./lifecycle/projects.js"
export { type LoadedVm, LoadedVms } from "./vm/records.js"
export { Cpus, IntRange, type Limits, ProjectLimits, RamMb } from "./vm/limits.js"
export { guestHostname } from "./vm/names.js"
export { Snapshots, SnapshotsLive } from "./vm/snapshots.js"
export { type VmRecord, VmStore, VmStoreLive } from "./vm/store.js"
export { type SetSecrets, type VmLive } from "./vm/view.js"

// Guest definitions
export {
  BUNDLED_GUESTS,
  type GuestDef,
  GuestFile,
  GuestDefinitions,
  GuestDefinitionsLive,
  type LoadedGuest,
  type LoadedGuests
} from "./guest-definitions/definitions.js"
export { streamBytes, utf8Text } from "./guest/encoding.js"
export { type JobFacts, Jobs, JobsLive, type JobState } from "./guest/jobs.js"
export { HostJobs, HostJobsLive, isHostJobId } from "./background/host-jobs.js"
export {
  type ExecRequest,
  type GuestError,
  GuestOps,
  GuestOpsLive,
  makeGuestOps,
  type ReadRequest,
  type ServiceAction,
  type TailRequest,
  type WriteRequest
} from "./guest/ops.js"
export { type GuestSession } from "./guest/session.js"

// Checkpoints and forks
export { CheckpointName } from "./checkpoints/layout.js"
export {
  Checkpoints,
  CheckpointsLive,
  type Dependents,
  type ForkedVms,
  type TakenCheckpoint
} from "./checkpoints/service.js"

// Recipes and projects
export { ProjectScope, projectScopeLayer, type ProjectScopeApi } from "./projects/service.js"
export { PROJECT_FILE } from "./projects/file.js"
export { Git, GitLive } from "./recipes/remote/git.js"
export { type PinnedRecipe, RemoteRecipes, RemoteRecipesLive } from "./recipes/remote/service.js"
export { Recipes, RecipesLive } from "./recipes/store.js"

// Images
export { type IsoFile, type IsoOptions } from "./cloudinit/iso.js"
export { type SeedOptions, type UserDataOptions } from "./cloudinit/seed.js"
export { type ChecksumLine, type DigestAlgorithm } from "./images/checksum.js"
export { type PullError, type PullOptions } from "./images/download.js"
export { type DownloadTimeouts } from "./images/http.js"
export {
  type ByoBackend,
  type ChecksumFormat,
  type ImageSource,
  type KnownImage,
  type LocalSource,
  type UrlSource
} from "./images/known.js"
export { type VmImageRefs } from "./images/list.js"
export { Images, ImagesLive, type StaleImageFile } from "./images/service.js"

// Platform: data root, locks, keys, files, host
export {
  checkRequest,
  type GuardOptions,
  type GuardVerdict,
  isLoopbackHost,
  type ListenAddress,
  parseLoopbackAddress,
  type RequestHeaders
} from "./http/guard.js"
export {
  DataRoot,
  dataRootAt,
  DataRootConfig,
  DataRootLive,
  type DataRootPaths,
  layoutOf,
  resolveDataRoot
} from "./platform/data-root.js"
export { parseDurationMs } from "./platform/duration.js"
export { writeFileAtomic } from "./platform/files.js"
export { diskFull, type FsError, isDiskFull, readSmallFileSync } from "./platform/fs.js"
export { findOnPath, GraphicalConfig, HostProbe, HostProbeLive } from "./platform/host.js"
export { ensureClientKey, ensureGuestHostKey, type KeyPair } from "./platform/keys.js"
export { Locks, LocksLive } from "./platform/locks.js"
export { isProcessAlive } from "./platform/processes.js"
export { STOAT_VERSION } from "./version.js"
