import { Layer } from "effect"
import { AuditLogLive } from "./context/audit-log.js"
import { DataRootLive } from "./platform/data-root.js"
import { GuestDefinitionsLive } from "./guest-definitions/definitions.js"
import { HostProbeLive } from "./platform/host.js"
import { LocksLive } from "./platform/locks.js"
import { VmStoreLive } from "./vm/store.js"
import { VmsLive } from "./lifecycle/lifecycle.js"
import { RecipesLive } from "./recipes/store.js"
import { LazyGuestTransportLive } from "./ssh/lazy.js"
import { GuestOpsLive } from "./guest/ops.js"
import { JobsLive } from "./guest/jobs.js"
import { GitLive } from "./recipes/remote/git.js"
import { RemoteRecipesLive } from "./recipes/remote/service.js"
import { SnapshotsLive } from "./vm/snapshots.js"

/**
 * Core's live services over the data root named by `$STOAT_HOME`. Hypervisor and ImageBuilder
 * layers (which may need the DataRoot provided here) complete the stack, and each frontend
 * provides its `Caller` (with `callerLayer`) per call.
 */
export const CoreLive = Layer.mergeAll(VmStoreLive, VmsLive, GuestDefinitionsLive, LocksLive, RecipesLive, AuditLogLive).pipe(
  Layer.provideMerge(DataRootLive),
  Layer.merge(HostProbeLive),
  Layer.merge(GuestOpsLive.pipe(Layer.provideMerge(LazyGuestTransportLive))),
  (base) => Layer.provideMerge(JobsLive, base),
  (base) => Layer.provideMerge(RemoteRecipesLive.pipe(Layer.provide(GitLive)), base),
  (base) => Layer.provideMerge(SnapshotsLive, base)
)
