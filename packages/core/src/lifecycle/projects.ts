/**
 * The project's VMs as one service: status with drift, reconciliation (`up`), and the fan-outs
 * over the declarations (down, apply, wait, rm). It owns the rules of who a declared VM belongs
 * to and how it is brought in line; the catalog's project entries only decode, call and map.
 * Each method acts on the caller's project scope (`ProjectScope`), read on the call.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { ProjectRun, ProjectStatus } from "@stoat/wire"
import {
  advise,
  CapabilityUnavailable,
  fixOrDelete,
  ImmutableField,
  InvalidSpec,
  NameTaken,
  NotFound,
  type StoatError
} from "../errors.js"
import { HintWording } from "../context/hint-wording.js"
import { progressLine } from "../context/progress.js"
import { AccessPolicy } from "../context/access-policy.js"
import { driftOf, immutableMessage, recreate } from "../projects/drift.js"
import { fanOut } from "../projects/fan-out.js"
import type { Declaration, Project } from "../projects/file.js"
import { ProjectScope } from "../projects/service.js"
import { readProjectSecrets, readSecrets, type SecretTable } from "../platform/secrets.js"
import { Hypervisor } from "../ports/hypervisor.js"
import { effectiveAccess } from "../vm/config.js"
import { isRunning, vmRef, type OkRecord } from "../vm/records.js"
import { VmStore, type VmRecord } from "../vm/store.js"
import { aggregateHealth, withHint } from "../vm/view.js"
import { type PerCall, type StartOptions, type WaitOptions, Vms } from "./lifecycle.js"

const sameSecrets = (stored: SecretTable, wanted: SecretTable) =>
  Object.entries(wanted).every(([recipe, params]) =>
    Object.entries(params).every(([param, value]) => stored[recipe]?.[param] === value)
  )

/** A VM of the declared name that another project (or nobody) made is not this project's to change. */
const foreignOwner = (project: Project, declaration: Declaration, record: OkRecord): string | undefined =>
  record.config.project === project.dir && record.config.key === declaration.key
    ? undefined
    : `VM "${declaration.name}" already exists ${record.config.project === "" ? "outside any project" : `for ${record.config.project}${record.config.key ? ` (key ${record.config.key})` : ""}`}; set another name in [vms.${declaration.key}] or remove that VM`

/** The update that brings an existing VM in line with its declaration, or undefined when it already is. */
const updateFor = (declaration: Declaration, record: OkRecord, running: boolean, secrets: SecretTable | undefined) =>
  Effect.gen(function* () {
    const report = driftOf(declaration, record.config, running)
    if (report.immutable.length > 0) {
      return yield* new ImmutableField({
        message: `VM "${declaration.name}": ${immutableMessage(report.immutable)}`,
        subject: report.immutable[0]!.field,
        hint: recreate(declaration)
      })
    }
    const fields = new Set(report.drift.map((drift) => drift.field.split(".")[0]!))
    const update = {
      ...(fields.has("cpus") ? { cpus: declaration.cpus } : {}),
      ...(fields.has("ram") ? { ram_mb: declaration.ram } : {}),
      ...(fields.has("recipes") ? { recipes: declaration.recipes } : {}),
      ...(fields.has("params") ? { params: declaration.params } : {}),
      ...(fields.has("shares") ? { shares: declaration.shares } : {}),
      ...(fields.has("agent_access") ? { agent_access: declaration.agent_access } : {}),
      ...(secrets !== undefined && !sameSecrets(yield* readSecrets(record.dir), secrets) ? { secrets } : {})
    }
    return Object.keys(update).length === 0 ? undefined : update
  })

/** The caller's project: not_found advising `init` without a stoat.toml. */
const currentProject = Effect.flatMap(ProjectScope, (scope) => scope.require)

const make = Effect.gen(function* () {
  const vms = yield* Vms
  const store = yield* VmStore
  const hypervisor = yield* Hypervisor
  const running = (record: VmRecord) => Effect.provideService(isRunning(record), Hypervisor, hypervisor)

  /** A declared VM as it stands: missing, or its record (broken, or someone else's, included). */
  const lookup = (declaration: Declaration) =>
    Effect.gen(function* () {
      if (!(yield* store.exists(declaration.name))) return Option.none<VmRecord>()
      return Option.some(yield* store.get(declaration.name))
    })

  /** Each declared VM that exists, or a not_found saying that bringing the project up creates it. */
  const existing = (declaration: Declaration) =>
    Effect.flatMap(lookup(declaration), (found) =>
      Option.isSome(found)
        ? Effect.succeed(found.value.name)
        : Effect.fail(
            new NotFound({
              message: `VM "${declaration.name}" ([vms.${declaration.key}]) is not created yet`,
              subject: declaration.name,
              hint: advise("create it", { operation: "project.up", input: {} })
            })
          )
    )

  /** Runs `step` only for declared VMs that exist: a missing VM is already down, or already gone. */
  const ifPresent =
    <R>(step: (name: string) => Effect.Effect<unknown, StoatError, R>) =>
    (declaration: Declaration) =>
      Effect.flatMap(lookup(declaration), (found) => (Option.isSome(found) ? step(declaration.name) : Effect.void))

  /** Each declaration run through `step` in the caller's project (see `fanOut`). */
  const overProject = <R>(
    step: (declaration: Declaration) => Effect.Effect<unknown, StoatError, R>,
    options?: { readonly concurrency?: number }
  ) => Effect.flatMap(currentProject, (project) => fanOut(project, step, options))

  const status = Effect.gen(function* () {
    const project = yield* currentProject
    const { words } = yield* HintWording
    const declared = yield* Effect.forEach(
      project.vms,
      (declaration) =>
        Effect.gen(function* () {
          const base = { key: declaration.key, name: declaration.name }
          const found = yield* lookup(declaration)
          if (Option.isNone(found)) return { ...base, state: "missing", health: "unknown", drift: [] }
          const record = found.value
          if (record.kind === "broken")
            return { ...base, state: "broken", health: "unknown", drift: [], error: record.reason }
          const live = yield* hypervisor.status(vmRef(record))
          // A VM whose host does not answer may run or not: broken, saying why (as ls shows it).
          if (live.unreachable !== undefined) {
            const error = withHint(live.unreachable.message, live.unreachable.hint, words)
            return { ...base, state: "broken", health: "unknown", drift: [], error }
          }
          const state = live.running ? "running" : "stopped"
          const health = aggregateHealth(record)
          const foreign = foreignOwner(project, declaration, record)
          if (foreign !== undefined) return { ...base, state, health, drift: [], error: foreign }
          const report = driftOf(declaration, record.config, live.running)
          // An immutable mismatch is shown instead of drift: up would refuse it anyway.
          if (report.immutable.length > 0)
            return {
              ...base,
              state,
              health,
              drift: [],
              error: `${immutableMessage(report.immutable)}; ${words(recreate(declaration))}`
            }
          return { ...base, state, health, drift: [...report.drift] }
        }),
      { concurrency: 4 }
    )
    return { project: project.name, dir: project.dir, vms: declared }
  })

  /**
   * Reconcile one declaration (reference §3.3): a missing VM is created, an existing one gets the
   * declared cpus, ram, recipes, params, shares and agent_access through update, and an immutable
   * change (image, disk, provider) is refused. Create and update are the lifecycle's own.
   */
  const reconcile = (project: Project, declaration: Declaration, secrets: Readonly<Record<string, SecretTable>>) =>
    Effect.gen(function* () {
      if (declaration.provider === "gce") {
        return yield* new CapabilityUnavailable({
          message: `[vms.${declaration.key}]: provider ${declaration.provider} is not supported by this build`,
          reason: "provider_unsupported"
        })
      }
      if (Option.isNone(yield* lookup(declaration))) {
        const created = yield* vms
          .create({
            name: declaration.name,
            ...(declaration.imageIsPath ? { image_path: declaration.image } : { image: declaration.image }),
            ...(declaration.cpus !== undefined ? { cpus: declaration.cpus } : {}),
            ...(declaration.ram !== undefined ? { ram_mb: declaration.ram } : {}),
            ...(declaration.disk !== undefined ? { disk: declaration.disk } : {}),
            recipes: declaration.recipes,
            agent_access: declaration.agent_access,
            project: { dir: project.dir, key: declaration.key },
            shares: declaration.shares,
            ...(declaration.provider === "libvirt"
              ? { provider: "libvirt" as const, ...(declaration.host !== undefined ? { host: declaration.host } : {}) }
              : {})
          })
          .pipe(
            Effect.as(true),
            // A parallel `up` of the same project created it first: reconcile that VM like any other.
            Effect.catchTag("NameTaken", () => Effect.succeed(false))
          )
        if (created) yield* progressLine(`${declaration.key}: created ${declaration.name}`)
      }
      const found = yield* lookup(declaration)
      if (Option.isNone(found))
        return yield* new NotFound({
          message: `VM "${declaration.name}" disappeared while it was being created`,
          subject: declaration.name
        })
      const record = found.value
      if (record.kind === "broken")
        return yield* new InvalidSpec({
          message: `VM "${declaration.name}" is broken: ${record.reason}`,
          subject: declaration.name,
          hint: fixOrDelete(declaration.key)
        })
      const foreign = foreignOwner(project, declaration, record)
      if (foreign !== undefined) return yield* new NameTaken({ message: foreign, subject: declaration.name })
      const update = yield* updateFor(declaration, record, yield* running(record), secrets[declaration.key])
      if (update === undefined) return
      const result = yield* vms.update(declaration.name, update)
      const pending = result.pendingRestart.length > 0 ? ` (${result.pendingRestart.join(", ")} at the next start)` : ""
      yield* progressLine(`${declaration.key}: updated ${result.changed.join(", ")}${pending}`)
    })

  const up = (options: StartOptions & { readonly parallel?: number | undefined }) =>
    Effect.gen(function* () {
      const project = yield* currentProject
      const secrets = yield* readProjectSecrets(project.dir)
      const { parallel, ...start } = options
      return yield* fanOut(
        project,
        (declaration) => Effect.zipRight(reconcile(project, declaration, secrets), vms.start(declaration.name, start)),
        { concurrency: parallel ?? 1 }
      )
    })

  /**
   * An agent may apply only where every declared VM grants manage: checked before anything runs,
   * refused in the words of every other access check (seed 000).
   */
  const requireManageEverywhere = (project: Project) =>
    Effect.gen(function* () {
      const policy = yield* AccessPolicy
      for (const declaration of project.vms) {
        const found = yield* lookup(declaration)
        if (Option.isNone(found) || found.value.kind !== "ok") continue
        const level = effectiveAccess(found.value.config)
        yield* policy.requireGranted(
          declaration.name,
          level,
          "manage",
          `vm "${declaration.name}" has agent_access = ${level}; needs manage`
        )
      }
    })

  const apply = Effect.gen(function* () {
    const project = yield* currentProject
    yield* requireManageEverywhere(project)
    return yield* fanOut(project, (declaration) =>
      Effect.flatMap(existing(declaration), (vm) => vms.applyRecipes(vm, undefined))
    )
  })

  const records = Effect.gen(function* () {
    const project = yield* currentProject
    const found: VmRecord[] = []
    for (const declaration of project.vms) {
      const record = yield* lookup(declaration)
      if (Option.isSome(record)) found.push(record.value)
    }
    return found
  })

  return Projects.of({
    status,
    up,
    down: overProject(ifPresent((vm) => vms.stop(vm))),
    apply,
    wait: (options) =>
      overProject((declaration) => Effect.flatMap(existing(declaration), (vm) => vms.wait(vm, options))),
    remove: (options) => overProject(ifPresent((vm) => vms.destroy(vm, options))),
    records
  })
})

type Run = Effect.Effect<typeof ProjectRun.Type, StoatError, PerCall>

export class Projects extends Context.Tag("stoat/Projects")<
  Projects,
  {
    /** Each declaration's state, health and drift, or the error an immutable change or a foreign owner gives. */
    readonly status: Effect.Effect<typeof ProjectStatus.Type, StoatError>
    /** Reconciles each declared VM (creating a missing one) and starts it, `parallel` at once (default 1). */
    readonly up: (options: StartOptions & { readonly parallel?: number | undefined }) => Run
    /** Stops each declared VM; one not created yet counts as stopped. */
    readonly down: Run
    /** Applies each declared VM's recipes, once every one grants the caller manage. */
    readonly apply: Run
    /** Waits for each declared VM as `Vms.wait` does. */
    readonly wait: (options: WaitOptions) => Run
    /** Deletes each declared VM (as `Vms.destroy`); one not created is already gone. */
    readonly remove: (options: { readonly detachDependents?: boolean | undefined }) => Run
    /** The declared VMs that exist, in declaration order. */
    readonly records: Effect.Effect<ReadonlyArray<VmRecord>, StoatError>
  }
>() {
  static readonly layer = Layer.effect(Projects, make)
}

export const ProjectsLive = Projects.layer
