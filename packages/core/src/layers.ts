import { Layer } from "effect"
import { AuditLogLive } from "./context/audit-log.js"
import { type DataRoot, DataRootLive } from "./platform/data-root.js"
import { GuestDefinitionsLive } from "./guest-definitions/definitions.js"
import { type HostProbe, HostProbeLive } from "./platform/host.js"
import { LocksLive } from "./platform/locks.js"
import type { GuestTransport } from "./ports/guest-transport.js"
import type { GuestSignals, Hypervisor } from "./ports/hypervisor.js"
import type { ImageBuilder } from "./ports/image-builder.js"
import { VmStoreLive } from "./vm/store.js"
import { VmsLive } from "./lifecycle/lifecycle.js"
import { ProjectsLive } from "./lifecycle/projects.js"
import { RecipesLive } from "./recipes/store.js"
import { LazyGuestTransportLive } from "./ssh/lazy.js"
import { GuestOpsLive } from "./guest/ops.js"
import { JobsLive } from "./guest/jobs.js"
import { HostJobsLive } from "./background/host-jobs.js"
import { CheckpointsLive } from "./checkpoints/index.js"
import { ImagesLive } from "./images/service.js"
import { GitLive } from "./recipes/remote/git.js"
import { type RemoteRecipesOptions, remoteRecipesLayer } from "./recipes/remote/service.js"
import { SnapshotsLive } from "./vm/snapshots.js"

/** What a stack gives core: a provider's ports, the guest transport, the host and the data root. */
export interface CorePorts<E, R, ED> {
  /** The provider's hypervisor, its guest readiness signals and image builder (QEMU, or the in-memory fakes); they may use the data root. */
  readonly provider: Layer.Layer<Hypervisor | GuestSignals | ImageBuilder, E, R | DataRoot>
  readonly guestTransport: Layer.Layer<GuestTransport>
  readonly hostProbe: Layer.Layer<HostProbe>
  readonly dataRoot: Layer.Layer<DataRoot, ED>
  readonly remoteRecipes?: RemoteRecipesOptions
}

/**
 * Core's whole service graph over `ports`: the one graph, so the live stack and `testLayer`
 * differ only in the ports they pass. Each frontend then provides its `Caller` (with
 * `callerContext`) per call, and its project scope.
 */
export const coreLayer = <E, R, ED>(ports: CorePorts<E, R, ED>) =>
  Layer.mergeAll(
    VmStoreLive,
    GuestDefinitionsLive,
    LocksLive,
    RecipesLive,
    AuditLogLive,
    HostJobsLive,
    ports.provider
  ).pipe(
    Layer.provideMerge(ports.dataRoot),
    Layer.merge(ports.hostProbe),
    Layer.merge(GuestOpsLive.pipe(Layer.provideMerge(ports.guestTransport))),
    (base) => Layer.provideMerge(JobsLive, base),
    (base) => Layer.provideMerge(CheckpointsLive, base),
    (base) => Layer.provideMerge(SnapshotsLive, base),
    (base) => Layer.provideMerge(ImagesLive, base),
    (base) => Layer.provideMerge(remoteRecipesLayer(ports.remoteRecipes ?? {}).pipe(Layer.provide(GitLive)), base),
    // The lifecycle over everything below it (checkpoints, the recipe index included), projects over it.
    (base) => Layer.provideMerge(VmsLive, base),
    (base) => Layer.provideMerge(ProjectsLive, base)
  )

/** Core's live services over the data root named by `$STOAT_HOME`, ssh to guests and this host, with a provider's ports. */
export const CoreLive = <E, R>(provider: CorePorts<E, R, never>["provider"]) =>
  coreLayer({ provider, guestTransport: LazyGuestTransportLive, hostProbe: HostProbeLive, dataRoot: DataRootLive })
