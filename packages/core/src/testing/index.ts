import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { dataRootAt } from "../data-root.js"
import { GuestsLive } from "../guests.js"
import { HostProbe } from "../host.js"
import { LocksLive } from "../locks.js"
import { NotRunning } from "../errors.js"
import { Hypervisor, type RunState } from "../ports.js"
import { VmStoreLive } from "../vm-store.js"

export { FakeHypervisorState, makeFakeHypervisor } from "./fake-hypervisor.js"
import { makeFakeHypervisor, FakeHypervisorState } from "./fake-hypervisor.js"

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

/**
 * Core services over a real (temporary) data root with the in-memory hypervisor: the whole
 * catalog can run without QEMU. Provide `root` to reuse an existing folder.
 */
export const testLayer = (options: { readonly root?: string; readonly hypervisor?: FakeHypervisorState } = {}) => {
  const dataRoot = options.root ? dataRootAt(options.root) : TempDataRoot
  const state = options.hypervisor ?? new FakeHypervisorState()
  return Layer.mergeAll(VmStoreLive, GuestsLive, LocksLive, Layer.succeed(Hypervisor, makeFakeHypervisor(state))).pipe(
    Layer.provideMerge(dataRoot),
    Layer.merge(FakeHostProbe())
  )
}

export type { RunState }
export { NotRunning }
