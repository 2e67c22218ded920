import { Effect, Option, Schema } from "effect"
import { InitResult, ProjectRun, ProjectStatus, VmList } from "@stoat/wire"
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
import { driftOf, immutableMessage, recreate } from "../projects/drift.js"
import { HintWording } from "../context/hint-wording.js"
import { fanOut } from "../projects/fan-out.js"
import { DECLARATION_KEY, type Declaration, type Project } from "../projects/file.js"
import { initProject, Projects } from "../projects/service.js"
import { readProjectSecrets, readSecrets, type SecretTable } from "../platform/secrets.js"
import { effectiveAccess } from "../vm/config.js"
import { AccessPolicy } from "../context/access-policy.js"
import { Vms } from "../lifecycle/lifecycle.js"
import { isRunning, type OkRecord } from "../vm/records.js"
import { VmStore, type VmRecord } from "../vm/store.js"
import { aggregateHealth } from "../vm/view.js"
import { NoInput } from "./inputs.js"
import { defineOperation, DESTRUCTIVE, EXEC, MUTATE, READ } from "./operation.js"
import { viewVms } from "./read.js"
import { StartFields } from "./vm.js"
import { progressLine } from "../context/progress.js"

const PROJECT_NOTE = " Uses the stoat.toml of the server's working directory; without one: not_found, run stoat init."
/** What every fan-out over the declarations shares (seed 000, project tools). */
const RUN_NOTE = " In declaration order; the first failure stops the run and later VMs are skipped."

/** A declared VM as it stands: missing, or its record (broken, or someone else's, included). */
const lookup = (declaration: Declaration) =>
  Effect.gen(function* () {
    const store = yield* VmStore
    if (!(yield* store.exists(declaration.name))) return Option.none<VmRecord>()
    return Option.some(yield* store.get(declaration.name))
  })

/** A VM of the declared name that another project (or nobody) made is not this project's to change. */
const foreignOwner = (project: Project, declaration: Declaration, record: OkRecord): string | undefined =>
  record.config.project === project.dir && record.config.key === declaration.key
    ? undefined
    : `VM "${declaration.name}" already exists ${record.config.project === "" ? "outside any project" : `for ${record.config.project}${record.config.key ? ` (key ${record.config.key})` : ""}`}; set another name in [vms.${declaration.key}] or remove that VM`

/** `stoat status`: each declaration's state, health and drift, in declaration order. */
export const projectStatusOf = (project: Project) =>
  Effect.gen(function* () {
    const { words } = yield* HintWording
    const vms = yield* Effect.forEach(
      project.vms,
      (declaration) =>
        Effect.gen(function* () {
          const base = { key: declaration.key, name: declaration.name }
          const found = yield* lookup(declaration)
          if (Option.isNone(found)) return { ...base, state: "missing", health: "unknown", drift: [] }
          const record = found.value
          if (record.kind === "broken")
            return { ...base, state: "broken", health: "unknown", drift: [], error: record.reason }
          const running = yield* isRunning(record)
          const state = running ? "running" : "stopped"
          const health = aggregateHealth(record)
          const foreign = foreignOwner(project, declaration, record)
          if (foreign !== undefined) return { ...base, state, health, drift: [], error: foreign }
          const report = driftOf(declaration, record.config, running)
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
    return { project: project.name, dir: project.dir, vms }
  })

const sameSecrets = (stored: SecretTable, wanted: SecretTable) =>
  Object.entries(wanted).every(([recipe, params]) =>
    Object.entries(params).every(([param, value]) => stored[recipe]?.[param] === value)
  )

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
    const wantedSecrets = secrets[declaration.key]
    const vms = yield* Vms
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
    const update = yield* updateFor(declaration, record, yield* isRunning(record), wantedSecrets)
    if (update === undefined) return
    const result = yield* vms.update(declaration.name, update)
    const pending = result.pendingRestart.length > 0 ? ` (${result.pendingRestart.join(", ")} at the next start)` : ""
    yield* progressLine(`${declaration.key}: updated ${result.changed.join(", ")}${pending}`)
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

const projectOf = Effect.flatMap(Projects, (scope) => scope.require)

/** What every fan-out operation shares: a command answering ProjectRun, host-side, no single target VM. */
const FAN_OUT = {
  kind: "command",
  output: ProjectRun,
  annotations: MUTATE,
  access: null,
  target: () => [],
  longRunning: true
} as const

const WaitTimeout = Schema.optional(Schema.Int.pipe(Schema.between(1, 600))).annotations({
  description: "Seconds to wait per VM (default 300, max 600)"
})

export const projectStatus = defineOperation({
  key: "project.status",
  tool: "project_status",
  expose: { cli: "status", mcp: true },
  title: "Show the project's VMs",
  description: `Each declared VM's state (missing until project_up creates it), health and drift (declared settings that differ), or the error an immutable change gives.${PROJECT_NOTE}`,
  kind: "query",
  input: NoInput,
  output: ProjectStatus,
  annotations: READ,
  access: null,
  target: () => [],
  run: () => Effect.flatMap(projectOf, projectStatusOf)
})

export const projectUp = defineOperation({
  key: "project.up",
  tool: "project_up",
  expose: { cli: "up", mcp: true },
  title: "Bring the project's VMs up",
  description: `Reconcile each declared VM (create it if missing; apply changed cpus, ram, recipes, params, shares, agent_access; refuse image, disk or provider changes) and start it.${RUN_NOTE}${PROJECT_NOTE}`,
  input: Schema.Struct({
    parallel: Schema.optional(Schema.Int.pipe(Schema.between(1, 16))).annotations({
      description: "VMs brought up at once (default 1, max 16)"
    }),
    ...StartFields
  }),
  ...FAN_OUT,
  run: ({ parallel, timeout_seconds, ...start }) =>
    Effect.gen(function* () {
      const project = yield* projectOf
      const secrets = yield* readProjectSecrets(project.dir)
      const vms = yield* Vms
      return yield* fanOut(
        project,
        (declaration) =>
          Effect.zipRight(
            reconcile(project, declaration, secrets),
            vms.start(declaration.name, { ...start, timeoutSeconds: timeout_seconds })
          ),
        { concurrency: parallel ?? 1 }
      )
    })
})

export const projectDown = defineOperation({
  key: "project.down",
  tool: "project_down",
  expose: { cli: "down", mcp: true },
  title: "Stop the project's VMs",
  description: `Stop each declared VM gracefully; one not created yet counts as stopped.${RUN_NOTE}${PROJECT_NOTE}`,
  input: NoInput,
  ...FAN_OUT,
  run: () =>
    Effect.flatMap(Effect.all([projectOf, Vms]), ([project, vms]) =>
      fanOut(
        project,
        ifPresent((vm) => vms.stop(vm))
      )
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

export const projectApply = defineOperation({
  key: "project.apply",
  tool: "project_apply",
  expose: { cli: "apply", mcp: true },
  title: "Apply the project's recipes",
  description: `Apply each declared VM's recipes (as apply_recipes); every VM must be running and grant an agent manage.${RUN_NOTE}${PROJECT_NOTE}`,
  input: NoInput,
  ...FAN_OUT,
  // It runs every declared VM's recipe scripts, as apply_recipes does.
  annotations: EXEC,
  touches: ["guest"],
  run: () =>
    Effect.gen(function* () {
      const project = yield* projectOf
      yield* requireManageEverywhere(project)
      const vms = yield* Vms
      return yield* fanOut(project, (declaration) =>
        Effect.flatMap(existing(declaration), (vm) => vms.applyRecipes(vm, undefined))
      )
    })
})

export const projectWait = defineOperation({
  key: "project.wait",
  tool: "project_wait",
  expose: { cli: "wait", mcp: true },
  title: "Wait for the project's VMs",
  description: `Wait until each declared VM is reachable over SSH (default), stopped, or has applied its recipes.${RUN_NOTE}${PROJECT_NOTE}`,
  input: Schema.Struct({
    until: Schema.optional(Schema.Literal("reachable", "applied", "stopped")).annotations({
      description: "State to wait for (default reachable)"
    }),
    healthy: Schema.optional(Schema.Boolean).annotations({
      description: "Wait for the applied recipes' health checks (default false)"
    }),
    timeout_seconds: WaitTimeout
  }),
  ...FAN_OUT,
  run: ({ timeout_seconds, ...options }) =>
    Effect.flatMap(Effect.all([projectOf, Vms]), ([project, vms]) =>
      fanOut(project, (declaration) =>
        Effect.flatMap(existing(declaration), (vm) => vms.wait(vm, { ...options, timeoutSeconds: timeout_seconds }))
      )
    )
})

export const projectRm = defineOperation({
  key: "project.rm",
  tool: "project_rm",
  // Deleting a whole project is a person's decision at the CLI.
  expose: { cli: "rm", mcp: false },
  title: "Delete the project's VMs",
  description:
    "Delete each declared VM, in declaration order: each must be stopped (stoat down); one not created is already gone. The first failure stops the run and later VMs are skipped.",
  kind: "command",
  input: Schema.Struct({ detach_dependents: Schema.optional(Schema.Boolean) }),
  output: ProjectRun,
  annotations: DESTRUCTIVE,
  touches: ["deletes"],
  access: null,
  target: () => [],
  run: (input) =>
    Effect.flatMap(Effect.all([projectOf, Vms]), ([project, vms]) =>
      fanOut(
        project,
        ifPresent((vm) => vms.destroy(vm, { detachDependents: input.detach_dependents }))
      )
    )
})

export const projectInit = defineOperation({
  key: "project.init",
  tool: "project_init",
  expose: { cli: "init", mcp: false },
  title: "Start a project",
  description:
    "Write an annotated stoat.toml with one [vms.dev] in the working directory (never over an existing one); in a git checkout add .stoat/ to .gitignore.",
  kind: "command",
  input: Schema.Struct({
    name: Schema.optional(
      Schema.String.pipe(
        Schema.pattern(DECLARATION_KEY, { message: () => "project names use lower-case letters, digits and '-'" }),
        Schema.maxLength(64)
      )
    )
  }),
  output: InitResult,
  annotations: MUTATE,
  access: null,
  target: () => [],
  run: (input) =>
    Effect.gen(function* () {
      const dir = (yield* Projects).dir
      if (dir === undefined) return yield* new InvalidSpec({ message: "no working directory to create stoat.toml in" })
      return yield* initProject(dir, input.name)
    })
})

export const projectVms = defineOperation({
  key: "project.vms",
  tool: "project_vms",
  expose: { cli: "ls", mcp: false },
  title: "List the project's VMs",
  description: "The VMs ./stoat.toml declares that exist, in declaration order (ls --project).",
  kind: "query",
  input: NoInput,
  output: VmList,
  annotations: READ,
  access: null,
  target: () => [],
  run: () =>
    Effect.gen(function* () {
      const project = yield* projectOf
      const records: VmRecord[] = []
      for (const declaration of project.vms) {
        const found = yield* lookup(declaration)
        if (Option.isSome(found)) records.push(found.value)
      }
      return { vms: yield* viewVms(records) }
    })
})

export const projectOperations = [
  projectStatus,
  projectUp,
  projectDown,
  projectApply,
  projectWait,
  projectRm,
  projectInit,
  projectVms
] as const
