import { Effect, Either, type Layer } from "effect"
import type { StoatError } from "../errors.js"
import { GuestSignals, Hypervisor, type BootPlan, type VmDisk, type VmRef } from "../ports/hypervisor.js"

export interface HypervisorContractOptions {
  /**
   * A plan the provider can boot for a new VM `name` (each case asks for its own), its folder made
   * as core makes one: a folder of the provider's data root holding a `vm.toml`. The fake boots any plan; a real provider needs a guest (QEMU: the tiny kernel).
   */
  readonly plan: (name: string) => Promise<BootPlan>
  /** A size `createDisk` accepts and the provider makes quickly (default "64M"). */
  readonly diskSize?: string
}

/** One promise of the port, runnable by any test framework: `run` rejects with what was broken. */
export interface ContractCase {
  readonly name: string
  readonly run: () => Promise<void>
}

class ContractBroken extends Error {}

const expectThat = (holds: boolean, what: string): Effect.Effect<void> =>
  holds ? Effect.void : Effect.die(new ContractBroken(what))

/** The wire code a call failed with, or "ok". */
const outcome = <A, R>(effect: Effect.Effect<A, StoatError, R>): Effect.Effect<string, never, R> =>
  Effect.map(Effect.either(effect), (result) => (Either.isLeft(result) ? result.left.code : "ok"))

const expectCode = <A, R>(effect: Effect.Effect<A, StoatError, R>, code: string, what: string) =>
  Effect.flatMap(outcome(effect), (got) => expectThat(got === code, `${what}: expected ${code}, got ${got}`))

/** Stopped whatever happened, so a broken case leaves no VM behind. */
const withStarted = <A, E, R>(plan: BootPlan, use: (vm: VmRef) => Effect.Effect<A, E, R>) =>
  Effect.acquireUseRelease(
    Effect.flatMap(Hypervisor, (hypervisor) => hypervisor.start(plan)),
    () => use(plan.vm),
    () => Effect.flatMap(Hypervisor, (hypervisor) => Effect.ignore(hypervisor.stop(plan.vm, { graceMs: 0 })))
  )

/**
 * The promises of the `Hypervisor` and `GuestSignals` ports (see ports/hypervisor.ts), as cases
 * any provider's tests run against its layer: the in-memory fake in core's unit tests, QEMU over
 * the tiny guest in @stoat/qemu's e2e suite, and any later provider. Register each with the
 * test framework, e.g. `for (const c of hypervisorContract(layer, options)) it(c.name, c.run)`.
 */
export const hypervisorContract = (
  layer: Layer.Layer<Hypervisor | GuestSignals>,
  options: HypervisorContractOptions
): ReadonlyArray<ContractCase> => {
  const size = options.diskSize ?? "64M"
  const cases: Array<{
    readonly name: string
    readonly body: Effect.Effect<void, StoatError | Error, Hypervisor | GuestSignals>
  }> = [
    {
      name: "start runs the VM once: status says running, a second start is already_running, stop ends it, a second stop is not_running",
      body: Effect.gen(function* () {
        const hypervisor = yield* Hypervisor
        const plan = yield* Effect.promise(() => options.plan("contract-life"))
        yield* expectThat(!(yield* hypervisor.status(plan.vm)).running, "a VM never started is not running")
        yield* withStarted(plan, (vm) =>
          Effect.gen(function* () {
            const status = yield* hypervisor.status(vm)
            yield* expectThat(status.running, "status after start says running")
            yield* expectCode(hypervisor.start(plan), "already_running", "a second start")
            yield* hypervisor.stop(vm, { graceMs: 0 })
            yield* expectThat(!(yield* hypervisor.status(vm)).running, "status after stop says not running")
            yield* expectCode(hypervisor.stop(vm), "not_running", "a second stop")
          })
        )
      })
    },
    {
      name: "start answers the accelerator it used, one of those acceleration names",
      body: Effect.gen(function* () {
        const hypervisor = yield* Hypervisor
        const acceleration = yield* hypervisor.acceleration
        yield* expectThat(
          acceleration.accel === "kvm" || acceleration.accel === "tcg",
          `acceleration is kvm or tcg (got ${acceleration.accel})`
        )
        yield* expectThat(acceleration.detail !== "", "acceleration says why")
        const plan = yield* Effect.promise(() => options.plan("contract-accel"))
        yield* Effect.acquireUseRelease(
          hypervisor.start(plan),
          (started) =>
            expectThat(
              started.running && (started.accel === "kvm" || started.accel === "tcg"),
              "start answers running and its accelerator"
            ),
          () => Effect.ignore(hypervisor.stop(plan.vm, { graceMs: 0 }))
        )
      })
    },
    {
      name: "calls that need a running VM answer not_running for a stopped one",
      body: Effect.gen(function* () {
        const hypervisor = yield* Hypervisor
        const plan = yield* Effect.promise(() => options.plan("contract-stopped"))
        yield* expectCode(hypervisor.stop(plan.vm), "not_running", "stop")
        yield* expectCode(hypervisor.screenshot(plan.vm), "not_running", "screenshot")
      })
    },
    {
      name: "guest signals answer false at once for a VM whose guest never booted",
      body: Effect.gen(function* () {
        const plan = yield* Effect.promise(() => options.plan("contract-signals"))
        // An hour: a provider that waited instead of answering would fail the test's own timeout.
        yield* expectThat(
          !(yield* (yield* GuestSignals).awaitSshd(plan.vm, 3_600_000)),
          "awaitSshd of a never-started VM is false"
        )
      })
    },
    {
      name: "disks: created at their size, grow but never shrink (disk_shrink), a missing one is not_found",
      body: Effect.gen(function* () {
        const hypervisor = yield* Hypervisor
        const plan = yield* Effect.promise(() => options.plan("contract-disk"))
        const disk: VmDisk = { vm: plan.vm, file: "disk.qcow2" }
        yield* hypervisor.createDisk(disk, size)
        const created = yield* hypervisor.diskInfo(disk)
        yield* expectThat(
          created.virtualSize > 0 && created.backing === undefined,
          "a new disk has a size and no backing"
        )
        yield* hypervisor.resizeDisk(disk, `${created.virtualSize * 2}`)
        const grown = yield* hypervisor.diskInfo(disk)
        yield* expectThat(
          grown.virtualSize === created.virtualSize * 2,
          `resize grows it (${created.virtualSize} → ${grown.virtualSize})`
        )
        yield* expectCode(
          hypervisor.resizeDisk(disk, `${created.virtualSize}`),
          "disk_shrink",
          "a resize below its size"
        )
        yield* expectCode(
          hypervisor.diskInfo({ vm: plan.vm, file: "missing.qcow2" }),
          "not_found",
          "diskInfo of a missing disk"
        )
        const overlay: VmDisk = { vm: plan.vm, file: "overlay.qcow2" }
        yield* hypervisor.createDisk(overlay, "", disk)
        const backing = (yield* hypervisor.diskInfo(overlay)).backing
        yield* expectThat(
          backing !== undefined && "file" in backing && backing.file === disk.file,
          "an overlay names its backing as a VM disk"
        )
      })
    },
    {
      name: "snapshots: saved, listed, restored on a stopped VM, deleted; no_disk without a disk",
      body: Effect.gen(function* () {
        const hypervisor = yield* Hypervisor
        const plan = yield* Effect.promise(() => options.plan("contract-snap"))
        const disk: VmDisk = { vm: plan.vm, file: "disk.qcow2" }
        yield* expectCode(hypervisor.listSnapshots(disk), "no_disk", "listSnapshots without a disk")
        yield* expectCode(hypervisor.saveSnapshot(disk, "a"), "no_disk", "saveSnapshot without a disk")
        yield* hypervisor.createDisk(disk, size)
        yield* hypervisor.saveSnapshot(disk, "first")
        const tags = (yield* hypervisor.listSnapshots(disk)).map((snapshot) => snapshot.tag)
        yield* expectThat(
          tags.length === 1 && tags[0] === "first",
          `the saved snapshot is listed (got ${JSON.stringify(tags)})`
        )
        yield* hypervisor.restoreSnapshot(disk, "first")
        yield* hypervisor.deleteSnapshot(disk, "first")
        yield* expectThat((yield* hypervisor.listSnapshots(disk)).length === 0, "a deleted snapshot is gone")
        yield* hypervisor.deleteSnapshot(disk, "never-saved")
      })
    }
  ]
  return cases.map(({ name, body }) => ({
    name,
    run: () => Effect.runPromise(body.pipe(Effect.provide(layer), Effect.orDie))
  }))
}
