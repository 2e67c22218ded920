import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { dataRootAt } from "../platform/data-root.js"
import { HostProbe } from "../platform/host.js"
import { NotRunning } from "../errors.js"
import { GuestSignals, Hypervisor, type RunState } from "../ports/hypervisor.js"
import { ImageBuilder } from "../ports/image-builder.js"
import { CliCaller, type Caller } from "../context/caller.js"
import { callerLayer } from "../context/access-policy.js"
import { projectScopeLayer } from "../projects/service.js"
import { coreLayer } from "../layers.js"

export { fakeGuestSignals, FakeHypervisorState, makeFakeHypervisor } from "./fake-hypervisor.js"
export { hypervisorContract, type ContractCase, type HypervisorContractOptions } from "./hypervisor-contract.js"
export { FakeImageBuilderState, makeFakeImageBuilder } from "./fake-image-builder.js"
export { FakeJobs } from "./fake-jobs.js"
export { commitFile, gitIn, makeIndexRepo, makeRecipeRepo, writeIndexFile } from "./git-repos.js"
export {
  defaultExecHandler,
  FakeGuest,
  FakeGuestFs,
  FakeGuestState,
  makeFakeGuest,
  type FakeExecContext,
  type FakeExecHandler,
  type FakeExecResult,
  type FakeGuestFile
} from "./fake-guest.js"
import { fakeGuestSignals, makeFakeHypervisor, FakeHypervisorState } from "./fake-hypervisor.js"
import { makeFakeImageBuilder, FakeImageBuilderState } from "./fake-image-builder.js"
import { FakeGuest, FakeGuestState } from "./fake-guest.js"

/** A fresh data root in a temp folder, removed when the scope closes. For tests and harnesses. */
export const TempDataRoot = Layer.unwrapScoped(
  Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "stoat-test-"))),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  ).pipe(Effect.map(dataRootAt))
)

/** A host with every program present, plenty of memory and no display. Override fields as needed. */
export const FakeHostProbe = (overrides: Partial<Record<string, string | undefined>> = {}, memAvailableMb = 16_384) =>
  Layer.succeed(HostProbe, {
    which: (program) => Effect.succeed(program in overrides ? overrides[program] : `/usr/bin/${program}`),
    memAvailableMb: Effect.succeed(memAvailableMb),
    graphical: Effect.succeed(false)
  })

export interface TestLayerOptions {
  /** An existing folder to use as the data root; default a fresh temp folder removed with the layer. */
  readonly root?: string
  /** Share it to inspect or steer the in-memory hypervisor (running VMs, disks, failures). */
  readonly hypervisor?: FakeHypervisorState
  /** Share it to read which local images were built. */
  readonly images?: FakeImageBuilderState
  /** Share it to seed guest files, script exec, hold sshd down, and read the call log. */
  readonly guest?: FakeGuestState
  /** Free host memory the host probe reports (default 16384). */
  readonly memAvailableMb?: number
  /** The recipe index (a Git repository or a folder holding index.toml); default `STOAT_INDEX`. */
  readonly index?: string
  /** The working directory whose stoat.toml gives project scope; default none. */
  readonly projectDir?: string
  /** Who calls (the policy follows from it); default a person at the CLI, `CliCaller`. */
  readonly caller?: Layer.Layer<Caller>
}

/**
 * Core services over a real (temporary) data root with the in-memory hypervisor, image builder
 * and guest transport: the whole catalog can run without QEMU or ssh. Provide `root` to reuse a folder.
 */
export const testLayer = (options: TestLayerOptions = {}) => {
  const dataRoot = options.root ? dataRootAt(options.root) : TempDataRoot
  const state = options.hypervisor ?? new FakeHypervisorState()
  const guest = options.guest ?? new FakeGuestState()
  const images = options.images ?? new FakeImageBuilderState()
  const core = coreLayer({
    provider: Layer.mergeAll(
      Layer.succeed(Hypervisor, makeFakeHypervisor(state)),
      Layer.succeed(GuestSignals, fakeGuestSignals),
      Layer.succeed(ImageBuilder, makeFakeImageBuilder(images))
    ),
    guestTransport: FakeGuest(guest, state),
    hostProbe: FakeHostProbe({}, options.memAvailableMb),
    dataRoot,
    remoteRecipes: options.index === undefined ? {} : { index: options.index }
  }).pipe(Layer.provideMerge(callerLayer(options.caller ?? CliCaller)))
  return options.projectDir === undefined ? core : Layer.provideMerge(core, projectScopeLayer(options.projectDir))
}

export type { RunState }
export { NotRunning }
