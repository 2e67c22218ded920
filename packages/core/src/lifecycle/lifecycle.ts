/**
 * The VM lifecycle as one service: create, start (memory policy, ssh-port move), stop, wait,
 * update (a table of field updaters), clone, destroy. Catalog entries, projects and recipes
 * call it instead of each other.
 */
import { randomBytes } from "node:crypto"
import { dirname, join } from "node:path"
import { Clock, Context, Effect, Layer, Option } from "effect"
import { DataRoot } from "../platform/data-root.js"
import * as fs from "../platform/fs.js"
import {
  adviseFirst,
  AlreadyRunning,
  CannotReach,
  ConfirmationRequired,
  DiskShrink,
  ImmutableField,
  InvalidSpec,
  NoDisk,
  ScreenshotFailed,
  type StoatError
} from "../errors.js"
import { AccessPolicy } from "../context/access-policy.js"
import { Caller } from "../context/caller.js"
import { GuestDefinitions } from "../guest-definitions/definitions.js"
import { HostProbe } from "../platform/host.js"
import { Locks } from "../platform/locks.js"
import { elapsedSince } from "../platform/poll.js"
import { writeSecrets } from "../platform/secrets.js"
import { GuestSignals, Hypervisor } from "../ports/hypervisor.js"
import { GuestTransport } from "../ports/guest-transport.js"
import { Checkpoints } from "../checkpoints/index.js"
import { applyVm, waitHealthy, type ApplyHooks } from "../recipes/apply.js"
import { requireApplicable } from "../recipes/plan.js"
import { Recipes } from "../recipes/store.js"
import { ensureProjectRecipes, RemoteRecipes } from "../recipes/remote/service.js"
import { ProjectScope } from "../projects/service.js"
import { defaultVmConfig, diskSizeBytes, diskSizeProblem, effectiveAccess, type VmConfig } from "../vm/config.js"
import type { AccessLevel } from "../context/access-policy.js"
import { addVms, checkMemory, freeSshPort, type NewVm } from "../vm/folders.js"
import { validateVmName } from "../vm/names.js"
import { isBindable, validateForwards } from "../vm/network.js"
import { waitApplied, waitReachable, waitStopped } from "./readiness.js"
import { isRunning, loadVm, vmRef, type OkRecord } from "../vm/records.js"
import { diskPath, firstDisk, vmDisk } from "../vm/disks.js"
import { bootPlan } from "./boot-plan.js"
import { ImageBuilder } from "../ports/image-builder.js"
import { VmStore, type VmRecord } from "../vm/store.js"
import { resolveTemplate, withLocalImage } from "./template.js"
import { progressLine, stageReporter } from "../context/progress.js"

type Params = VmConfig["params"]

/** A new VM as `create` asks for it (the catalog's input, decoded). */
export interface CreateSpec {
  readonly name: string
  readonly image?: string | undefined
  /** Your own image file. */
  readonly image_path?: string | undefined
  readonly os?: string | undefined
  readonly backend?: "apkovl" | "cloudinit" | "ssh" | "direct" | undefined
  readonly mode?: "live" | "disk" | undefined
  readonly ram_mb?: number | undefined
  readonly cpus?: number | undefined
  readonly disk?: string | undefined
  readonly recipes?: ReadonlyArray<string> | undefined
  readonly agent_access?: AccessLevel | undefined
  /** Host folder shared read-only at /mnt/host. */
  readonly share?: string | undefined
  /** A console password, or "random". */
  readonly console_password?: string | undefined
  /** false: refuse when the working directory's stoat.toml declares its VMs. */
  readonly global?: boolean | undefined
  /** The project declaration this VM is made for. */
  readonly project?: { readonly dir: string; readonly key: string } | undefined
  /** Host folders shared writable at /mnt/share<N>. */
  readonly shares?: ReadonlyArray<string> | undefined
  /** The hypervisor that runs the VM (default qemu) and, for libvirt, its host URI. */
  readonly provider?: "qemu" | "libvirt" | undefined
  readonly host?: string | undefined
}

export interface StartOptions {
  /** Also wait until SSH answers, within `timeoutSeconds` (default 300). */
  readonly wait?: boolean | undefined
  readonly timeoutSeconds?: number | undefined
  /** Asks to ignore the host-memory floor; the caller's policy decides whether it counts. */
  readonly force?: boolean | undefined
  /** Apply the VM's recipes once it is up. */
  readonly apply?: boolean | undefined
}

export interface WaitOptions {
  readonly until?: "reachable" | "applied" | "stopped" | undefined
  /** Wait for the recipes' health checks to pass (exclusive with `until`). */
  readonly healthy?: boolean | undefined
  readonly timeoutSeconds?: number | undefined
}

export interface WaitOutcome {
  readonly until: "reachable" | "applied" | "stopped"
  readonly waitedMs: number
  readonly healthy?: Effect.Effect.Success<ReturnType<typeof waitHealthy>>
}

/** The settings `update` changes; name, os, backend and mode are refused as immutable. */
export interface UpdateSpec {
  readonly agent_access?: AccessLevel | undefined
  readonly ram_mb?: number | undefined
  readonly cpus?: number | undefined
  readonly ssh_port?: number | undefined
  readonly display?: "auto" | "window" | "vnc" | undefined
  readonly share?: string | undefined
  readonly shares?: ReadonlyArray<string> | undefined
  readonly installed?: boolean | undefined
  readonly recipes?: ReadonlyArray<string> | undefined
  readonly params?: Params | undefined
  /** Stored beside vm.toml (0600) and never echoed; reported as a change of params. */
  readonly secrets?: Params | undefined
  readonly disk?: string | undefined
  readonly name?: string | undefined
  readonly os?: string | undefined
  readonly backend?: string | undefined
  readonly mode?: string | undefined
}

export interface UpdateOutcome {
  readonly record: OkRecord
  /** The settings that really differed, in table order. */
  readonly changed: ReadonlyArray<string>
  /** Those of them a running VM takes at its next start. */
  readonly pendingRestart: ReadonlyArray<string>
}

/** What the lifecycle takes once, when its layer is built. */
type Dependencies =
  | Hypervisor
  | GuestSignals
  | ImageBuilder
  | HostProbe
  | VmStore
  | Locks
  | DataRoot
  | GuestTransport
  | GuestDefinitions
  | Recipes
  | Checkpoints

/** What each call brings: who calls, and what that caller may do. */
export type PerCall = Caller | AccessPolicy

// ---------------------------------------------------------------------------------------------
// shared checks

/** Each recipe name must be declared by a recipe root (not_found) and run on the guest (recipe_not_applicable). */
const requireKnownRecipes = (names: ReadonlyArray<string> | undefined, os: string) =>
  Effect.gen(function* () {
    if (names === undefined || names.length === 0) return
    const guest = yield* (yield* GuestDefinitions).get(os)
    // A project's missing checkout is placed (or a stale declaration refused) before the names are looked up.
    yield* ensureProjectRecipes(names)
    const recipes = yield* Recipes
    for (const name of names) yield* requireApplicable(yield* recipes.get(name), guest)
  })

/** A requested disk size outside DISK_RANGE is invalid_spec naming the range (a 512-byte disk is no use to anyone). */
const checkDiskSize = (disk: string | undefined) => {
  const problem = disk === undefined ? undefined : diskSizeProblem(disk)
  return problem === undefined ? Effect.void : Effect.fail(new InvalidSpec({ message: problem, subject: "disk" }))
}

/** vm.toml's `[[shares]]` for host folders: tags `share0`, `share1`, … (host and work are reserved). */
const sharesOf = (hosts: ReadonlyArray<string>): VmConfig["shares"] =>
  hosts.map((host, index) => ({ tag: `share${index}`, host, guest: `/mnt/share${index}` }))

/** `create` from the CLI inside a project is refused: the project's VMs belong in stoat.toml. */
const refuseInsideProject = Effect.gen(function* () {
  const project = yield* (yield* ProjectScope).current
  if (Option.isNone(project)) return
  return yield* new InvalidSpec({
    message: `${project.value.file} declares this folder's VMs: add the VM under [vms.<key>] and run stoat up, or pass --global to create a VM outside the project`,
    subject: project.value.file
  })
})

/** Create and clone add one VM each (see `addVms`). */
const addOne = <R>(vm: NewVm<R>) => Effect.map(addVms([vm]), ([record]) => record!)

/**
 * The ssh port is the VM's own only while it runs: another program, or a VM of another data root,
 * may have taken it since. Then the VM is to start on a free port instead of failing: the record
 * answered has it, and `boot` saves it only once QEMU runs on it, so a start that fails changes no
 * setting. Runs under the root lock, like port allocation at create.
 */
const freePortIfTaken = (record: OkRecord, knownTaken = false) =>
  Effect.gen(function* () {
    if (!knownTaken && (yield* Effect.promise(() => isBindable(record.config.sshport)))) return record
    const others = (yield* (yield* VmStore).list).filter((vm) => vm.name !== record.name)
    const sshport = yield* freeSshPort([...others, record])
    return { ...record, config: { ...record.config, sshport } }
  })

// ---------------------------------------------------------------------------------------------
// update: one entry per vm.toml setting

interface UpdateTarget {
  readonly record: OkRecord
  /** vm.toml with the entries before this one applied. */
  readonly config: VmConfig
}

interface FieldUpdater<V> {
  /** The name `changed` and `pending_restart` list. */
  readonly reports: string
  /** Read at boot: on a running VM the change waits for the next start. */
  readonly bootTime: boolean
  /** Refused while the VM runs: "stop VM X before <this>". */
  readonly needsStopped?: string
  /** Whether the value differs from vm.toml; only a real difference is applied and reported. */
  readonly differs: (value: V, config: VmConfig) => boolean
  /** Validates the value and answers the new vm.toml (doing what else the change needs, like a resize). */
  readonly apply: (value: V, target: UpdateTarget) => Effect.Effect<VmConfig, StoatError, Dependencies | PerCall>
}

type UpdatableField = Exclude<keyof UpdateSpec, (typeof IMMUTABLE_FIELDS)[number]>

const IMMUTABLE_FIELDS = ["name", "os", "backend", "mode"] as const

const sameList = (a: ReadonlyArray<string>, b: ReadonlyArray<string>): boolean =>
  a.length === b.length && a.every((item, i) => item === b[i])

const sameParams = (a: Params, b: Params): boolean => {
  const recipes = Object.keys(a)
  return (
    recipes.length === Object.keys(b).length &&
    recipes.every((recipe) => {
      const [x, y] = [a[recipe] ?? {}, b[recipe]]
      return (
        y !== undefined &&
        Object.keys(x).length === Object.keys(y).length &&
        Object.entries(x).every(([key, value]) => y[key] === value)
      )
    })
  )
}

/** A plain setting: differs when not equal, applied by setting it. */
const setting = <V>(
  reports: string,
  bootTime: boolean,
  differs: (value: V, config: VmConfig) => boolean,
  set: (value: V, config: VmConfig) => VmConfig
): FieldUpdater<V> => ({
  reports,
  bootTime,
  differs,
  apply: (value, { config }) => Effect.succeed(set(value, config))
})

/** In this order `changed` lists them, and their checks run. */
const FIELD_UPDATERS: { readonly [K in UpdatableField]-?: FieldUpdater<NonNullable<UpdateSpec[K]>> } = {
  agent_access: {
    reports: "agent_access",
    bootTime: false,
    differs: (level, config) => level !== effectiveAccess(config),
    apply: (level, { record, config }) =>
      Effect.gen(function* () {
        yield* (yield* AccessPolicy).requireAccessChange(record.name, effectiveAccess(config), level)
        return { ...config, agent_access: level, allow_exec: level === "exec" }
      })
  },
  ram_mb: setting(
    "ram",
    true,
    (ram, config) => ram !== config.ram,
    (ram, config) => ({ ...config, ram })
  ),
  cpus: setting(
    "cpus",
    true,
    (cpus, config) => cpus !== config.cpus,
    (cpus, config) => ({ ...config, cpus })
  ),
  ssh_port: {
    reports: "ssh_port",
    bootTime: true,
    differs: (port, config) => port !== config.sshport,
    apply: (port, { record, config }) =>
      Effect.gen(function* () {
        const others = (yield* (yield* VmStore).list).filter((vm) => vm.name !== record.name)
        if (config.forwards.some((forward) => forward.hostport === port)) {
          return yield* new InvalidSpec({
            message: `ssh_port: host port ${port} is one of this VM's forwards`,
            subject: "ssh_port"
          })
        }
        const clash = validateForwards(record.name, -1, [`${port}:22`], others)
        if (clash instanceof InvalidSpec)
          return yield* new InvalidSpec({
            message: clash.message.replace(/^forward "[^"]*": /, "ssh_port: "),
            subject: "ssh_port"
          })
        return { ...config, sshport: port }
      })
  },
  // An empty display preference means auto.
  display: setting(
    "display",
    true,
    (display, config) => display !== (config.display || "auto"),
    (display, config) => ({ ...config, display })
  ),
  share: setting(
    "share",
    true,
    (share, config) => share !== config.share,
    (share, config) => ({ ...config, share })
  ),
  shares: setting(
    "shares",
    true,
    (hosts, config) =>
      !sameList(
        hosts,
        config.shares.map((share) => share.host)
      ),
    (hosts, config) => ({ ...config, shares: sharesOf(hosts) })
  ),
  installed: setting(
    "installed",
    false,
    (installed, config) => installed !== config.installed,
    (installed, config) => ({ ...config, installed })
  ),
  recipes: {
    reports: "recipes",
    bootTime: false,
    differs: (recipes, config) => !sameList(recipes, config.recipes),
    apply: (recipes, { config }) =>
      Effect.as(requireKnownRecipes(recipes, config.os), { ...config, recipes: [...recipes] })
  },
  // Params merge into the table vm.toml has.
  params: setting(
    "params",
    false,
    (params, config) => !sameParams({ ...config.params, ...params }, config.params),
    (params, config) => ({ ...config, params: { ...config.params, ...params } })
  ),
  secrets: {
    reports: "params",
    bootTime: false,
    // Never compared (they are not echoed back): given is changed.
    differs: () => true,
    apply: (secrets, { record, config }) => Effect.as(writeSecrets(record.dir, secrets), config)
  },
  disk: {
    reports: "disk",
    bootTime: false,
    needsStopped: "growing its disk",
    differs: (disk, config) => diskSizeBytes(disk) !== diskSizeBytes(config.disk),
    apply: (disk, { record, config }) =>
      Effect.gen(function* () {
        if (diskSizeBytes(disk) < diskSizeBytes(config.disk))
          return yield* new DiskShrink({
            message: `disk can only grow (now ${config.disk}, asked ${disk})`,
            subject: "disk"
          })
        if (config.mode === "live")
          return yield* new NoDisk({
            message: `VM "${record.name}" is a live VM and has no disk`,
            subject: record.name
          })
        // A cloud VM's disk is made at first start, at the size vm.toml then names.
        if (yield* fs.isPresent(diskPath(record))) yield* (yield* Hypervisor).resizeDisk(vmDisk(record), disk)
        return { ...config, disk }
      })
  }
}

// ---------------------------------------------------------------------------------------------
// the service

const make = Effect.gen(function* () {
  const store = yield* VmStore
  const hypervisor = yield* Hypervisor
  const locks = yield* Locks
  const transport = yield* GuestTransport
  const checkpoints = yield* Checkpoints
  const root = yield* DataRoot
  const guests = yield* GuestDefinitions
  const images = yield* ImageBuilder
  const host = yield* HostProbe
  // The VM model's helpers (loadVm, isRunning, bootPlan, the readiness waits …) read their services
  // from the context: each call gets these, taken here once, and brings only its per-call context.
  // Picked, not the whole build-time context, so a Caller or project scope there cannot shadow the
  // call's own. The optional remote recipe index joins them when the graph has one.
  const taken = Context.pick(
    Hypervisor,
    GuestSignals,
    ImageBuilder,
    HostProbe,
    VmStore,
    Locks,
    DataRoot,
    GuestTransport,
    GuestDefinitions,
    Recipes,
    Checkpoints
  )(yield* Effect.context<Dependencies>())
  const services = Option.match(yield* Effect.serviceOption(RemoteRecipes), {
    onNone: () => taken,
    onSome: (remote) => Context.add(taken, RemoteRecipes, remote)
  })
  const withServices = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, Exclude<R, Dependencies>> =>
    Effect.provide(effect, services)

  const create = (spec: CreateSpec) =>
    withServices(
      Effect.gen(function* () {
        const invalid = validateVmName(spec.name)
        if (invalid) return yield* invalid
        if (spec.global === false) yield* refuseInsideProject
        yield* checkDiskSize(spec.disk)
        if (spec.host !== undefined && spec.provider !== "libvirt") {
          return yield* new InvalidSpec({
            message: "a host is a libvirt URI: give --provider libvirt with --host",
            subject: "host"
          })
        }
        yield* root.ensure
        const resolved = yield* resolveTemplate(spec.image, spec.image_path)
        if (spec.mode !== undefined && spec.mode !== resolved.mode) {
          return yield* new InvalidSpec({
            message: `image ${resolved.image} makes ${resolved.mode} VMs; mode ${spec.mode} contradicts it`,
            subject: "mode"
          })
        }
        const os = spec.os ?? resolved.os
        if (os === "")
          return yield* new InvalidSpec({
            message: `cannot tell the guest OS of ${resolved.image}; pass --os`,
            subject: "os"
          })
        const guest = yield* guests.get(os)
        yield* requireKnownRecipes(spec.recipes, guest.name)
        // Build a local image before taking the lock: it can take a while the first time.
        const template =
          resolved.backend === "direct"
            ? withLocalImage(resolved, yield* images.build(resolved.image, { onStage: yield* stageReporter }))
            : resolved
        const consolePassword =
          spec.console_password === "random" ? randomBytes(16).toString("hex") : (spec.console_password ?? "")
        // No terminal (or --json, or an agent): a window can't be assumed, so record VNC.
        const display = (yield* Caller).interactive ? "" : "vnc"
        const configFor = (sshport: number): VmConfig =>
          defaultVmConfig({
            name: spec.name,
            mode: template.mode,
            os: guest.name,
            image: template.image,
            backend: spec.backend ?? template.backend,
            ram: spec.ram_mb ?? template.ram,
            cpus: spec.cpus ?? template.cpus,
            disk: spec.disk ?? template.disk,
            installed: template.installed,
            sshport,
            recipes: spec.recipes ? [...spec.recipes] : [],
            display,
            sshuser: template.sshuser,
            agent_access: spec.agent_access ?? "manage",
            console_password: consolePassword,
            ...(template.base ? { base: template.base } : {}),
            ...(template.iso ? { iso: template.iso } : {}),
            ...(template.cpu_model ? { cpu_model: template.cpu_model } : {}),
            ...(template.required_cpu ? { required_cpu: template.required_cpu } : {}),
            ...(spec.share !== undefined ? { share: spec.share } : {}),
            ...(spec.project !== undefined ? { project: spec.project.dir, key: spec.project.key } : {}),
            ...(spec.shares !== undefined ? { shares: sharesOf(spec.shares) } : {}),
            ...(spec.provider === "libvirt"
              ? { provider: "libvirt", ...(spec.host !== undefined ? { host: spec.host } : {}) }
              : {})
          })
        const disk = (dir: string, config: VmConfig) =>
          template.diskAtCreate === "blank"
            ? hypervisor.createDisk(firstDisk({ name: spec.name, dir }), config.disk)
            : template.diskAtCreate === "overlay" && template.base
              ? hypervisor.createDisk(firstDisk({ name: spec.name, dir }), config.disk, { image: template.base })
              : Effect.void
        return yield* locks.withRootLock(addOne({ name: spec.name, config: configFor, fill: disk }))
      })
    )

  const clone = (sourceName: string, name: string) =>
    withServices(
      Effect.gen(function* () {
        const invalid = validateVmName(name)
        if (invalid) return yield* invalid
        return yield* locks.withRootLock(
          Effect.gen(function* () {
            const source = yield* loadVm(sourceName)
            if (yield* isRunning(source))
              return yield* new AlreadyRunning({
                message: `VM "${sourceName}" is running; stop it before cloning`,
                subject: sourceName
              })
            const { applied: _applied, forwards: _forwards, ...copied } = source.config
            const configFor = (sshport: number): VmConfig => ({
              ...copied,
              name,
              sshport,
              forwards: [],
              applied: {},
              project: "",
              key: ""
            })
            const sourceDisk = diskPath(source)
            const disk = (dir: string) =>
              Effect.flatMap(fs.isPresent(sourceDisk), (hasDisk) =>
                hasDisk
                  ? hypervisor.createDisk(firstDisk({ name, dir }), source.config.disk, vmDisk(source))
                  : Effect.void
              )
            return yield* addOne({ name, config: configFor, fill: disk })
          })
        )
      })
    )

  const boot = (name: string, force: boolean) =>
    withServices(
      Effect.gen(function* () {
        const policy = yield* AccessPolicy
        let record = yield* loadVm(name)
        const started = yield* locks.withVmLock(
          name,
          Effect.gen(function* () {
            if (yield* isRunning(record)) return false
            yield* locks.withRootLock(
              Effect.gen(function* () {
                const savedPort = record.config.sshport
                record = yield* freePortIfTaken(record)
                const fix = "lower ram_mb with update"
                yield* checkMemory(
                  {
                    subject: record.name,
                    neededMb: record.config.ram,
                    what: `starting "${record.name}"`,
                    fix,
                    floorFix: policy.memoryFloorHint(fix)
                  },
                  policy.overridesMemoryFloor(force)
                )
                const graphical = yield* host.graphical
                const display = graphical && record.config.display !== "vnc" ? "window" : "vnc"
                // Another data root's VM may take the port between the look and QEMU's bind: then once more on a new one.
                const launch = Effect.gen(function* () {
                  const running = yield* hypervisor.start(yield* bootPlan(record, display))
                  if (running.notice !== undefined) yield* progressLine(running.notice)
                })
                yield* launch.pipe(
                  Effect.catchIf(
                    (error) => error._tag === "ProviderStartFailed" && error.portInUse === record.config.sshport,
                    () =>
                      Effect.gen(function* () {
                        record = yield* freePortIfTaken(record, true)
                        yield* launch
                      })
                  )
                )
                if (record.config.sshport !== savedPort) {
                  // Nothing may run on a port vm.toml does not name: a VM whose new port cannot be saved is stopped again.
                  yield* store
                    .write(name, record.config)
                    .pipe(Effect.tapError(() => Effect.ignore(hypervisor.stop(vmRef(record), { graceMs: 0 }))))
                  yield* progressLine(
                    `ssh port ${savedPort} is taken on this host; VM "${name}" now uses port ${record.config.sshport}`
                  )
                }
              })
            )
            return true
          })
        )
        if (!started) yield* progressLine(`VM "${name}" is already running`)
        return record
      })
    )

  // Typed: start applies recipes, whose reboot starts the VM again, so its type cannot be inferred.
  const start = (name: string, options: StartOptions): Effect.Effect<OkRecord, StoatError, PerCall> =>
    Effect.gen(function* () {
      const record = yield* boot(name, options.force === true)
      if (options.wait) yield* withServices(waitReachable(record, (options.timeoutSeconds ?? 300) * 1000))
      if (options.apply && record.config.recipes.length > 0) yield* applyRecipes(name, undefined)
      return record
    })

  const stop = (name: string) =>
    Effect.gen(function* () {
      // Not loadVm: a VM whose vm.toml broke while it ran is stopped too (the provider needs only its folder).
      const record = yield* store.get(name)
      yield* transport.release(name)
      yield* locks.withVmLock(
        name,
        Effect.catchTag(hypervisor.stop(vmRef(record)), "NotRunning", () => Effect.void)
      )
      return record
    })

  const wait = (name: string, options: WaitOptions) =>
    withServices(
      Effect.gen(function* () {
        if (options.healthy && options.until)
          return yield* new InvalidSpec({ message: "healthy and until are exclusive" })
        const record = yield* loadVm(name)
        const until = options.until ?? "reachable"
        const timeoutMs = (options.timeoutSeconds ?? 300) * 1000
        if (options.healthy) {
          const started = yield* Clock.currentTimeMillis
          yield* waitApplied(record, timeoutMs, true)
          const healthy = yield* waitHealthy(name, started + timeoutMs)
          return { until: "applied" as const, waitedMs: yield* elapsedSince(started), healthy }
        }
        const waitedMs =
          until === "stopped"
            ? yield* waitStopped(record, timeoutMs)
            : until === "applied"
              ? yield* waitApplied(record, timeoutMs)
              : yield* waitReachable(record, timeoutMs)
        return { until, waitedMs }
      })
    )

  const destroy = (
    name: string,
    options: { readonly detachDependents?: boolean | undefined; readonly force?: boolean | undefined }
  ) =>
    withServices(
      Effect.gen(function* () {
        yield* locks.withRootLock(
          Effect.gen(function* () {
            // Looked up under the lock: a parallel rm that got there first has already removed it (not_found).
            const record = yield* store.get(name)
            // A broken vm.toml does not stop its QEMU: deleting the folder would orphan the process.
            // Nor does a host that does not answer: the VM may run on there, from this folder.
            const running = yield* isRunning(record).pipe(
              Effect.catchTag("CannotReach", (error) =>
                options.force === true
                  ? Effect.succeed(false)
                  : new CannotReach({
                      message: `VM "${name}" was not deleted: it may still run on a host that did not answer (${error.message}; if the host is gone for good, a person can delete it anyway with rm --force)`,
                      subject: name,
                      ...(error.hint !== undefined ? { hint: error.hint } : {})
                    })
              )
            )
            if (running)
              return yield* new AlreadyRunning({
                message: `VM "${name}" is running`,
                subject: name,
                hint: adviseFirst("stop it", { operation: "vm.stop", input: { vm: name } })
              })
            if (record.kind === "ok") {
              const dependents = yield* checkpoints.dependents(record)
              if (
                (dependents.checkpoints.length > 0 || dependents.vms.length > 0) &&
                options.detachDependents !== true
              ) {
                const parts = [
                  ...(dependents.checkpoints.length > 0 ? [`checkpoints ${dependents.checkpoints.join(", ")}`] : []),
                  ...(dependents.vms.length > 0
                    ? [
                        `VMs built on its disk: ${dependents.vms.map((vm) => `${vm.name}${vm.running ? " (running)" : ""}`).join(", ")}`
                      ]
                    : [])
                ]
                return yield* new ConfirmationRequired({
                  message: `VM "${name}" has ${parts.join("; ")}. Deleting it deletes its checkpoints${dependents.vms.length > 0 ? " and copies into those VMs the data they read from it" : ""}; confirm with detach_dependents=true (stoat rm -y ${name})`,
                  subject: name
                })
              }
              yield* checkpoints.detachDependents(record)
            }
            yield* store.remove(name)
          })
        )
      })
    )

  const setForwards = (name: string, pairs: ReadonlyArray<string>) =>
    withServices(
      locks.withRootLock(
        Effect.gen(function* () {
          const record = yield* loadVm(name)
          const forwards =
            pairs.length === 0 ? [] : validateForwards(name, record.config.sshport, pairs, yield* store.list)
          if (forwards instanceof InvalidSpec) return yield* forwards
          yield* store.write(name, { ...record.config, forwards })
          return yield* loadVm(name)
        })
      )
    )

  /** What apply needs from the lifecycle: its ssh wait, and a restart for `reboot = true` recipes. */
  const hooks: ApplyHooks<PerCall> = {
    waitReachable: (record, timeoutMs) => withServices(waitReachable(record, timeoutMs)),
    reboot: (record) => Effect.zipRight(stop(record.name), start(record.name, { wait: true }))
  }

  const applyRecipes = (name: string, only: ReadonlyArray<string> | undefined) =>
    withServices(applyVm(name, only, hooks))

  const screenshot = (name: string, path: string | undefined) =>
    withServices(
      Effect.gen(function* () {
        const record = yield* loadVm(name)
        const folder = join(record.dir, "screenshots")
        yield* fs.makeDirectory(folder)
        const stamp = new Date(yield* Clock.currentTimeMillis)
          .toISOString()
          .replace(/[:]/g, "")
          .replace(/\.\d+Z$/, "Z")
        let file = path ?? join(folder, `${stamp}.png`)
        for (let n = 2; path === undefined && (yield* fs.exists(file)); n++) file = join(folder, `${stamp}-${n}.png`)
        const shot = yield* hypervisor.screenshot(vmRef(record))
        // Written here, not by the provider: the file lands where the user asked, on this host.
        yield* Effect.zipRight(fs.makeDirectory(dirname(file)), fs.writeFileAtomic(file, shot.png)).pipe(
          Effect.mapError(
            (error) =>
              new ScreenshotFailed({ message: `screenshot of VM "${name}" failed: ${error.message}`, subject: name })
          )
        )
        return { path: file, width: shot.width, height: shot.height, bytes: shot.png.byteLength }
      })
    )

  const update = (name: string, spec: UpdateSpec) =>
    withServices(
      Effect.gen(function* () {
        // An unknown VM answers not_found before anything about the request itself.
        yield* loadVm(name)
        const immutable = IMMUTABLE_FIELDS.find((field) => spec[field] !== undefined)
        if (immutable !== undefined)
          return yield* new ImmutableField({
            message: `${immutable} cannot be changed; create a new VM instead`,
            subject: immutable
          })
        if (Object.values(spec).every((value) => value === undefined))
          return yield* new InvalidSpec({ message: "nothing to change: give at least one setting" })
        yield* checkDiskSize(spec.disk)
        return yield* locks.withRootLock(
          Effect.gen(function* () {
            const record = yield* loadVm(name)
            const running = yield* isRunning(record)
            let config = record.config
            const changed: string[] = []
            const pendingRestart: string[] = []
            for (const [field, updater] of Object.entries(FIELD_UPDATERS) as Array<
              [UpdatableField, FieldUpdater<unknown>]
            >) {
              const value = spec[field]
              if (value === undefined || !updater.differs(value, config)) continue
              if (updater.needsStopped !== undefined && running)
                return yield* new AlreadyRunning({
                  message: `stop VM "${name}" before ${updater.needsStopped}`,
                  subject: name
                })
              config = yield* updater.apply(value, { record, config })
              if (!changed.includes(updater.reports)) changed.push(updater.reports)
              if (updater.bootTime && running) pendingRestart.push(updater.reports)
            }
            if (config !== record.config) yield* store.write(name, config)
            return { record: yield* loadVm(name), changed, pendingRestart }
          })
        )
      })
    )

  return Vms.of({ create, start, stop, wait, update, clone, destroy, setForwards, applyRecipes, screenshot })
})

export class Vms extends Context.Tag("stoat/Vms")<
  Vms,
  {
    /** A new VM definition (folder, vm.toml, disk); it is not started. */
    readonly create: (spec: CreateSpec) => Effect.Effect<OkRecord, StoatError, PerCall>
    /** Starts a stopped VM (a running one is fine) and answers its record as it now is. */
    readonly start: (name: string, options: StartOptions) => Effect.Effect<OkRecord, StoatError, PerCall>
    /** Powers a VM down (a stopped one is fine), a broken one included. */
    readonly stop: (name: string) => Effect.Effect<VmRecord, StoatError, PerCall>
    readonly wait: (name: string, options: WaitOptions) => Effect.Effect<WaitOutcome, StoatError, PerCall>
    readonly update: (name: string, spec: UpdateSpec) => Effect.Effect<UpdateOutcome, StoatError, PerCall>
    /** A new VM on a copy-on-write overlay of a stopped VM's disk, with a fresh ssh port and no forwards. */
    readonly clone: (source: string, name: string) => Effect.Effect<OkRecord, StoatError, PerCall>
    /** Deletes a stopped VM; `detachDependents` also deletes its checkpoints and detaches VMs built on its disk. */
    readonly destroy: (
      name: string,
      options: { readonly detachDependents?: boolean | undefined; readonly force?: boolean | undefined }
    ) => Effect.Effect<void, StoatError, PerCall>
    /** Replaces a VM's host→guest port forwards ("8080:80" pairs; none clears them); a running VM takes them at its next start. */
    readonly setForwards: (name: string, pairs: ReadonlyArray<string>) => Effect.Effect<OkRecord, StoatError, PerCall>
    /** Applies a running VM's recipes (all, or `only` these), rebooting it when a recipe asks. */
    readonly applyRecipes: (
      name: string,
      only: ReadonlyArray<string> | undefined
    ) => Effect.Effect<Effect.Effect.Success<ReturnType<typeof applyVm>>, StoatError, PerCall>
    /** A PNG of a running VM's display, at `path` or a new file of its screenshots folder. */
    readonly screenshot: (
      name: string,
      path: string | undefined
    ) => Effect.Effect<
      { readonly path: string; readonly width: number; readonly height: number; readonly bytes: number },
      StoatError,
      PerCall
    >
  }
>() {
  static readonly layer = Layer.effect(Vms, make)
}

export const VmsLive = Vms.layer
