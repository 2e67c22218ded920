import { randomBytes } from "node:crypto"
import { readFile, stat } from "node:fs/promises"
import { dirname, join } from "node:path"
import { Clock, Duration, Effect, Option, Schedule, Schema } from "effect"
import { CloneResult, DestroyResult, ForwardResult, LogLines, RmResult, ScreenshotResult, UpdateResult, Vm, VmResult, WaitResult } from "@stoat/wire"
import { DataRoot, type DataRootPaths } from "../platform/data-root.js"
import {
  AccessDenied,
  NoDisk,
  NotFound,
  AlreadyRunning,
  CannotReach,
  ConfirmationRequired,
  DiskShrink,
  ImmutableField,
  internalError,
  InvalidSpec,
  LimitReached,
  NameTaken,
  ScreenshotFailed,
  Timeout
} from "../errors.js"
import { Guests } from "../guest/definitions.js"
import { HostProbe } from "../platform/host.js"
import { readLimits } from "../vm/limits.js"
import { Locks } from "../platform/locks.js"
import * as fs from "../platform/fs.js"
import { elapsedSince, pollUntil } from "../platform/poll.js"
import { validateVmName } from "../vm/names.js"
import { allocateSshPort, isBindable, validateForwards } from "../vm/network.js"
import { Hypervisor } from "../ports/hypervisor.js"
import { ImageBuilder } from "../ports/image-builder.js"
import { GuestTransport } from "../ports/guest-transport.js"
import {
  ACCESS_ORDER,
  AccessLevel,
  defaultVmConfig,
  DISK_RANGE,
  DiskSizeInput,
  diskSizeBytes,
  diskSizeProblem,
  effectiveAccess,
  type VmConfig
} from "../vm/config.js"
import { bootPlan, diskPath, firstDisk, isRunning, loadVm, sshTarget, vmDisk, vmRef, type OkRecord } from "../vm/runtime.js"
import { VmStore } from "../vm/store.js"
import { Checkpoints } from "../checkpoints/index.js"
import { resolveTemplate, withLocalImage } from "../vm/template.js"
import { checkMemory, checkVmCount, makeVmFolder } from "../vm/folders.js"
import { writeSecrets } from "../platform/secrets.js"
import { applyVm, HEALTH_FAILED, waitHealthy, type ApplyHooks } from "../recipes/apply.js"
import { requireApplicable } from "../recipes/plan.js"
import { Recipes } from "../recipes/store.js"
import { Projects } from "../projects/service.js"
import { Cpus, RamMb, SshPort, VmName } from "./inputs.js"
import { DESTRUCTIVE, defineOperation, hostOnly, MUTATE, READ, type ExecutionContext } from "./operation.js"
import { viewVms } from "./read.js"
import { ensureProjectRecipes } from "../recipes/remote/service.js"

const viewOne = (record: OkRecord) => Effect.map(viewVms([record]), (views) => views[0]!)

const reload = (name: string) => Effect.flatMap(loadVm(name), viewOne)

/** The CLI's data for an operation that answers one VM (create, up, down). */
const vmResult = (vm: Vm): typeof VmResult.Type => ({ vm })

// ---------------------------------------------------------------------------------------------
// create

/** Each recipe name must be declared by a recipe root (not_found) and run on the guest (recipe_not_applicable). */
const requireKnownRecipes = (names: ReadonlyArray<string> | undefined, os: string) =>
  Effect.gen(function* () {
    if (names === undefined || names.length === 0) return
    const guest = yield* (yield* Guests).get(os)
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

/** Project shares: absolute host folders (checked against the project by its reader), mounted writable. */
const HostShares = hostOnly(
  Schema.optional(Schema.Array(Schema.String.pipe(Schema.pattern(/^\/[^\0]*$/))).annotations({ description: "Host folders shared writable at /mnt/share<N> (project up only)" }))
)

/** vm.toml's `[[shares]]` for host folders: tags `share0`, `share1`, … (host and work are reserved). */
const sharesOf = (hosts: ReadonlyArray<string>): VmConfig["shares"] => hosts.map((host, index) => ({ tag: `share${index}`, host, guest: `/mnt/share${index}` }))

/** `create` from the CLI inside a project is refused: the project's VMs belong in stoat.toml. */
const refuseInsideProject = Effect.gen(function* () {
  const project = yield* (yield* Projects).current
  if (Option.isNone(project)) return
  return yield* new InvalidSpec({
    message: `${project.value.file} declares this folder's VMs: add the VM under [vms.<key>] and run stoat up, or pass --global to create a VM outside the project`,
    subject: project.value.file
  })
})

const CreateInput = Schema.Struct({
  name: Schema.String.annotations({ description: "New VM name: letters, digits, '.', '_', '-'" }),
  image: Schema.optional(Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9._-]*$/))).annotations({
    description: "Catalog image id (see list_images), e.g. tiny, debian-12-mini (both built locally) or ubuntu-24.04 (downloaded first with stoat pull)"
  }),
  image_path: hostOnly(Schema.optional(Schema.String).annotations({ description: "Your own image file (CLI only)" })),
  os: Schema.optional(Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9-]*$/))),
  backend: Schema.optional(Schema.Literal("apkovl", "cloudinit", "ssh", "direct")),
  mode: Schema.optional(Schema.Literal("live", "disk")),
  ram_mb: Schema.optional(RamMb).annotations({ description: "RAM in MiB (default 4096; tiny: 256)" }),
  cpus: Schema.optional(Cpus).annotations({ description: "vCPUs (default 4; tiny: 1)" }),
  disk: Schema.optional(DiskSizeInput).annotations({ description: `Absolute disk size ${DISK_RANGE.min}..${DISK_RANGE.max}, e.g. 8G (default 8G)` }),
  recipes: Schema.optional(Schema.Array(Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9-]*$/)))),
  agent_access: Schema.optional(AccessLevel).annotations({ description: "Guest access for MCP agents (default manage)" }),
  share: hostOnly(Schema.optional(Schema.String).annotations({ description: "Host folder shared read-only at /mnt/host (CLI only)" })),
  console_password: hostOnly(Schema.optional(Schema.String).annotations({ description: "Console password, or 'random' (CLI only)" })),
  global: hostOnly(Schema.optional(Schema.Boolean).annotations({ description: "false: refuse when the working directory has a stoat.toml (CLI only: create without --global)" })),
  project: hostOnly(Schema.optional(Schema.Struct({ dir: Schema.String, key: Schema.String })).annotations({ description: "The project declaration this VM is made for (project up only)" })),
  shares: HostShares
})

export const createVm = defineOperation({
  key: "vm.create",
  tool: "create",
  longRunning: true,
  expose: { cli: "create", mcp: true },
  title: "Create a VM",
  description:
    "Create a VM definition from a catalog image (the `tiny` image boots to SSH in seconds; cloud images must be downloaded first). Defaults: ram_mb 4096, cpus 4, disk 8G or the image's default (tiny: 256 MiB, 1 vCPU, 1G). A cloud image is always mode cloud; a mode that contradicts the image is refused. Does not start it; call start, then wait.",
  kind: "command",
  input: CreateInput,
  output: Vm,
  cliView: vmResult,
  annotations: MUTATE,
  access: null,
  run: (input, context) =>
    Effect.gen(function* () {
      const invalid = validateVmName(input.name)
      if (invalid) return yield* invalid
      if (input.global === false) yield* refuseInsideProject
      yield* checkDiskSize(input.disk)
      const root = yield* DataRoot
      yield* root.ensure
      const hypervisor = yield* Hypervisor
      const store = yield* VmStore
      const locks = yield* Locks
      const guests = yield* Guests
      const resolved = yield* resolveTemplate(input.image, input.image_path)
      if (input.mode !== undefined && input.mode !== resolved.mode) {
        return yield* new InvalidSpec({ message: `image ${resolved.image} makes ${resolved.mode} VMs; mode ${input.mode} contradicts it`, subject: "mode" })
      }
      const os = input.os ?? resolved.os
      if (os === "") return yield* new InvalidSpec({ message: `cannot tell the guest OS of ${resolved.image}; pass --os`, subject: "os" })
      const guest = yield* guests.get(os)
      yield* requireKnownRecipes(input.recipes, guest.name)
      // Build a local image before taking the lock: it can take a while the first time.
      const template =
        resolved.backend === "direct"
          ? withLocalImage(resolved, yield* (yield* ImageBuilder).build(resolved.image, { onStage: (line) => context.progress?.({ type: "log", data: { line } }) }))
          : resolved
      const consolePassword = input.console_password === "random" ? randomBytes(16).toString("hex") : (input.console_password ?? "")
      const record = yield* locks.withRootLock(
        Effect.gen(function* () {
          const all = yield* store.list
          if (all.some((vm) => vm.name === input.name)) return yield* new NameTaken({ message: `VM "${input.name}" already exists`, subject: input.name })
          yield* checkVmCount(all.length, input.name)
          const sshport = yield* Effect.tryPromise({ try: () => allocateSshPort(all), catch: internalError("cannot allocate an ssh port") })
          const config: VmConfig = defaultVmConfig({
            name: input.name,
            mode: template.mode,
            os: guest.name,
            image: template.image,
            backend: input.backend ?? template.backend,
            ram: input.ram_mb ?? template.ram,
            cpus: input.cpus ?? template.cpus,
            disk: input.disk ?? template.disk,
            installed: template.installed,
            sshport,
            recipes: input.recipes ?? [],
            // No TTY or --json: a window can't be assumed, so record VNC.
            display: context.interactive ? "" : "vnc",
            sshuser: template.sshuser,
            agent_access: input.agent_access ?? "manage",
            console_password: consolePassword,
            ...(template.base ? { base: template.base } : {}),
            ...(template.iso ? { iso: template.iso } : {}),
            ...(template.cpu_model ? { cpu_model: template.cpu_model } : {}),
            ...(template.required_cpu ? { required_cpu: template.required_cpu } : {}),
            ...(input.share !== undefined ? { share: input.share } : {}),
            ...(input.project !== undefined ? { project: input.project.dir, key: input.project.key } : {}),
            ...(input.shares !== undefined ? { shares: sharesOf(input.shares) } : {})
          })
          const disk = (dir: string) =>
            template.diskAtCreate === "blank"
              ? hypervisor.createDisk(firstDisk({ name: input.name, dir }), config.disk)
              : template.diskAtCreate === "overlay" && template.base
                ? hypervisor.createDisk(firstDisk({ name: input.name, dir }), config.disk, { image: template.base })
                : Effect.void
          yield* makeVmFolder(input.name, (dir) => Effect.zipRight(disk(dir), store.write(input.name, config)))
          return yield* loadVm(input.name)
        })
      )
      return yield* viewOne(record)
    })
})

// ---------------------------------------------------------------------------------------------
// start / stop / wait

const WaitFields = {
  wait: Schema.optional(Schema.Boolean).annotations({ description: "Also wait until SSH answers (bounded by timeout_seconds)" }),
  timeout_seconds: Schema.optional(Schema.Int.pipe(Schema.between(1, 600))).annotations({ description: "Seconds to wait (default 300, max 600)" })
}

/**
 * A cloud guest is ready once cloud-init has finished: `status: done` (recoverable warnings
 * included). Before the user exists ssh refuses the key; that counts as not yet.
 */
const cloudInitDone = (record: OkRecord) =>
  Effect.gen(function* () {
    const root = yield* DataRoot
    const run = yield* Effect.either((yield* GuestTransport).exec(sshTarget(root, record), ["cloud-init", "status"], { timeoutMs: 15_000 }))
    if (run._tag === "Left") return false
    const status = /status:\s*(\S+)/.exec(Buffer.from(run.right.stdout).toString("utf8"))?.[1]
    if (status === "error") {
      return yield* new CannotReach({ message: `cloud-init failed in VM "${record.name}"; see stoat logs ${record.name}`, subject: record.name })
    }
    return status === "done" || status === "disabled"
  })

/** Waits until the guest's sshd answers (and, for cloud guests, cloud-init is done), failing at once if the VM stops. */
const waitReachable = (record: OkRecord, timeoutMs: number) =>
  Effect.gen(function* () {
    const transport = yield* GuestTransport
    const started = yield* Clock.currentTimeMillis
    yield* (yield* Hypervisor).awaitSshd(vmRef(record), timeoutMs)
    const attempt = Effect.gen(function* () {
      if (!(yield* isRunning(record))) {
        return yield* new CannotReach({ message: `VM "${record.name}" is not running; start it with stoat up ${record.name}`, subject: record.name })
      }
      // One long attempt at a time: an abandoned connection lingers in QEMU's user-mode network and
      // reaches sshd later as a stray, and dropbear refuses a guest's sixth unauthenticated connection.
      const left = timeoutMs - (yield* elapsedSince(started))
      if (!(yield* transport.probe(record.config.sshport, Math.min(10_000, Math.max(1000, left))))) return false
      return record.config.backend === "cloudinit" ? yield* cloudInitDone(record) : true
    })
    yield* pollUntil(attempt, {
      schedule: Schedule.spaced(Duration.millis(150)),
      until: (ready) => ready,
      within: Duration.millis(Math.max(0, timeoutMs - (yield* elapsedSince(started)))),
      onTimeout: () => new Timeout({ message: `VM "${record.name}" did not answer ssh within ${Math.round(timeoutMs / 1000)} s`, subject: record.name })
    })
    return yield* elapsedSince(started)
  })

const waitStopped = (record: OkRecord, timeoutMs: number) =>
  Effect.gen(function* () {
    const started = yield* Clock.currentTimeMillis
    yield* pollUntil(isRunning(record), {
      schedule: Schedule.spaced(Duration.millis(200)),
      until: (running) => !running,
      within: Duration.millis(timeoutMs),
      onTimeout: () => new Timeout({ message: `VM "${record.name}" still running after ${Math.round(timeoutMs / 1000)} s`, subject: record.name })
    })
    return yield* elapsedSince(started)
  })

/**
 * How a start goes: wait for SSH, override the memory floor, apply recipes. The last two are CLI
 * only: applying runs guest code, which an agent reaches only through apply_recipes (access manage).
 */
export const StartFields = {
  ...WaitFields,
  force: hostOnly(Schema.optional(Schema.Boolean).annotations({ description: "Ignore the host-memory floor (CLI only)" })),
  apply: hostOnly(Schema.optional(Schema.Boolean).annotations({ description: "Apply the VM's recipes once it is up (CLI only: `up` unless --no-apply)" }))
}

export const startVm = defineOperation({
  key: "vm.start",
  tool: "start",
  longRunning: true,
  expose: { cli: "up", mcp: true },
  title: "Start a VM",
  description:
    "Start a stopped VM (already running is fine). Refuses with limit_reached (needed_mb, available_mb) when RAM limits or free host memory do not allow it. With wait=true also waits for SSH; otherwise call wait before any guest tool.",
  kind: "command",
  input: Schema.Struct({ vm: VmName, ...StartFields }),
  output: Vm,
  cliView: vmResult,
  annotations: MUTATE,
  access: null,
  run: (input, context) =>
    Effect.gen(function* () {
      const hypervisor = yield* Hypervisor
      const locks = yield* Locks
      let record = yield* loadVm(input.vm)
      const started = yield* locks.withVmLock(
        input.vm,
        Effect.gen(function* () {
          if (yield* isRunning(record)) return false
          yield* locks.withRootLock(
            Effect.gen(function* () {
              record = yield* moveOffTakenSshPort(record, context)
              yield* checkMemory(
                {
                  subject: record.name,
                  neededMb: record.config.ram,
                  what: `starting "${record.name}"`,
                  fix: "lower ram_mb with update",
                  floorFix: `lower ram_mb with update${context.entrypoint === "cli" ? " or pass -y" : ", or ask a person to run stoat up -y"}`
                },
                // A person may override the floor, an agent never.
                input.force === true && context.entrypoint === "cli"
              )
              const graphical = yield* (yield* HostProbe).graphical
              const display = graphical && record.config.display !== "vnc" ? "window" : "vnc"
              // Another data root's VM may take the port between the look and QEMU's bind: then once more on a new one.
              const boot = Effect.gen(function* () {
                const running = yield* hypervisor.start(yield* bootPlan(record, display))
                if (running.notice !== undefined) context.progress?.({ type: "log", data: { line: running.notice } })
              })
              yield* boot.pipe(
                Effect.catchIf(
                  (error) => error._tag === "QemuStartFailed" && error.message.includes(`tcp:127.0.0.1:${record.config.sshport}-:22`),
                  () =>
                    Effect.gen(function* () {
                      record = yield* moveOffTakenSshPort(record, context, true)
                      yield* boot
                    })
                )
              )
            })
          )
          return true
        })
      )
      if (!started) context.progress?.({ type: "log", data: { line: `VM "${input.vm}" is already running` } })
      if (input.wait) yield* waitReachable(record, (input.timeout_seconds ?? 300) * 1000)
      if (input.apply && record.config.recipes.length > 0) yield* applyVm(input.vm, undefined, context, lifecycleHooks)
      return yield* viewOne(record)
    })
})

/**
 * The ssh port is the VM's own only while it runs: another program, or a VM of another data root,
 * may have taken it since. Then the VM moves to a free port (saved in vm.toml) and says so,
 * instead of failing to start. Runs under the root lock, like port allocation at create.
 */
const moveOffTakenSshPort = (record: OkRecord, context: ExecutionContext, knownTaken = false) =>
  Effect.gen(function* () {
    if (!knownTaken && (yield* Effect.promise(() => isBindable(record.config.sshport)))) return record
    const store = yield* VmStore
    const all = yield* store.list
    const sshport = yield* Effect.tryPromise({ try: () => allocateSshPort(all), catch: internalError("cannot allocate an ssh port") })
    yield* store.write(record.name, { ...record.config, sshport })
    context.progress?.({ type: "log", data: { line: `ssh port ${record.config.sshport} is taken on this host; VM "${record.name}" now uses port ${sshport}` } })
    return yield* loadVm(record.name)
  })

/** What apply needs from the lifecycle: its ssh wait, and a restart for `reboot = true` recipes. */
export const lifecycleHooks: ApplyHooks = {
  waitReachable,
  reboot: (record, context) =>
    Effect.zipRight(stopVm.run({ vm: record.name }, context), startVm.run({ vm: record.name, wait: true }, context))
}

export const stopVm = defineOperation({
  key: "vm.stop",
  tool: "stop",
  expose: { cli: "down", mcp: true },
  title: "Stop a VM",
  description: "Power a VM down gracefully (ACPI power button, then SIGTERM, then SIGKILL); returns once QEMU has exited. Already stopped is fine.",
  kind: "command",
  input: Schema.Struct({ vm: VmName }),
  output: Vm,
  cliView: vmResult,
  annotations: MUTATE,
  access: null,
  run: (input) =>
    Effect.gen(function* () {
      const record = yield* loadVm(input.vm)
      const hypervisor = yield* Hypervisor
      yield* (yield* GuestTransport).release(input.vm)
      yield* (yield* Locks).withVmLock(
        input.vm,
        Effect.catchTag(hypervisor.stop(vmRef(record)), "NotRunning", () => Effect.void)
      )
      return yield* viewOne(record)
    })
})

export const waitVm = defineOperation({
  key: "vm.wait",
  tool: "wait",
  longRunning: true,
  expose: { cli: "wait", mcp: true },
  title: "Wait for a VM state",
  description:
    "Wait until a VM is reachable over SSH (default), stopped, or has applied its recipes. timeout_seconds is a number of seconds (default 300, max 600). Call it after start or create and before any guest tool.",
  kind: "command",
  input: Schema.Struct({
    vm: VmName,
    until: Schema.optional(Schema.Literal("reachable", "applied", "stopped")),
    healthy: Schema.optional(Schema.Boolean),
    timeout_seconds: Schema.optional(Schema.Int.pipe(Schema.between(1, 600)))
  }),
  output: WaitResult,
  annotations: MUTATE,
  access: null,
  run: (input) =>
    Effect.gen(function* () {
      if (input.healthy && input.until) return yield* new InvalidSpec({ message: "healthy and until are exclusive" })
      const record = yield* loadVm(input.vm)
      const until = input.until ?? "reachable"
      const timeoutMs = (input.timeout_seconds ?? 300) * 1000
      if (input.healthy) {
        const started = yield* Clock.currentTimeMillis
        yield* waitApplied(record, timeoutMs, true)
        const healthy = yield* waitHealthy(input.vm, started + timeoutMs)
        return { vm: input.vm, until: "applied", reached: true, waited_ms: yield* elapsedSince(started), healthy }
      }
      const waited =
        until === "stopped"
          ? yield* waitStopped(record, timeoutMs)
          : until === "applied"
            ? yield* waitApplied(record, timeoutMs)
            : yield* waitReachable(record, timeoutMs)
      return { vm: input.vm, until, reached: true, waited_ms: waited }
    })
})

/**
 * `applied` keys off the apply log's final `done` line; a VM with no recipes has nothing to apply.
 * For `--healthy` a run whose health check failed counts as applied too: the checks are run again.
 */
const waitApplied = (record: OkRecord, timeoutMs: number, healthFailureIsApplied = false) =>
  Effect.gen(function* () {
    const started = yield* Clock.currentTimeMillis
    const waited = yield* waitReachable(record, timeoutMs)
    if (record.config.recipes.length === 0) return waited
    const log = join(record.dir, "last-provision.log")
    const lastLine = Effect.map(Effect.promise(() => readFile(log, "utf8").catch(() => "")), (text) => text.trimEnd().split("\n").pop() ?? "")
    const last = yield* pollUntil(lastLine, {
      schedule: Schedule.spaced(Duration.millis(300)),
      until: (line) => line === "done" || line.startsWith("FAILED:") || line.startsWith("CANCELLED:"),
      within: Duration.millis(Math.max(0, timeoutMs - (yield* elapsedSince(started)))),
      onTimeout: () => new Timeout({ message: `recipes not applied within ${Math.round(timeoutMs / 1000)} s`, subject: record.name })
    })
    const applied = last === "done" || (healthFailureIsApplied && last.startsWith(`FAILED: ${HEALTH_FAILED}`))
    if (!applied) return yield* new CannotReach({ message: `recipes did not apply: ${last}`, subject: record.name })
    return yield* elapsedSince(started)
  })

// ---------------------------------------------------------------------------------------------
// destroy / update / clone / forward

export const destroyVm = defineOperation({
  key: "vm.destroy",
  tool: "destroy",
  expose: { cli: "rm", mcp: true },
  title: "Delete a VM",
  description:
    "Delete a stopped VM: its folder, disk, snapshots, checkpoints and shared directory. Refuses a running VM. Broken VMs can be deleted. A VM with checkpoints, or with VMs forked or cloned from its disk, answers confirmation_required naming them until detach_dependents=true: then its checkpoints go with it and each (stopped) dependent VM gets its own copy of the data it read from this VM.",
  kind: "command",
  input: Schema.Struct({
    vm: VmName,
    detach_dependents: Schema.optional(Schema.Boolean).annotations({
      description: "Also delete its checkpoints and copy into dependent VMs' disks what they read from this VM's (they must be stopped)"
    })
  }),
  output: DestroyResult,
  cliView: ({ name, destroyed }): typeof RmResult.Type => ({ deleted: destroyed, name }),
  annotations: DESTRUCTIVE,
  access: null,
  run: (input) =>
    Effect.gen(function* () {
      const store = yield* VmStore
      const checkpoints = yield* Checkpoints
      yield* (yield* Locks).withRootLock(
        Effect.gen(function* () {
          // Looked up under the lock: a parallel rm that got there first has already removed it (not_found).
          const record = yield* store.get(input.vm)
          // A broken vm.toml does not stop its QEMU: deleting the folder would orphan the process.
          if (yield* isRunning(record)) {
            return yield* new AlreadyRunning({ message: `VM "${input.vm}" is running; stop it first (stoat down ${input.vm})`, subject: input.vm })
          }
          if (record.kind === "ok") {
            const dependents = yield* checkpoints.dependents(record)
            if ((dependents.checkpoints.length > 0 || dependents.vms.length > 0) && input.detach_dependents !== true) {
              const parts = [
                ...(dependents.checkpoints.length > 0 ? [`checkpoints ${dependents.checkpoints.join(", ")}`] : []),
                ...(dependents.vms.length > 0 ? [`VMs built on its disk: ${dependents.vms.map((vm) => `${vm.name}${vm.running ? " (running)" : ""}`).join(", ")}`] : [])
              ]
              return yield* new ConfirmationRequired({
                message: `VM "${input.vm}" has ${parts.join("; ")}. Deleting it deletes its checkpoints${dependents.vms.length > 0 ? " and copies into those VMs the data they read from it" : ""}; confirm with detach_dependents=true (stoat rm -y ${input.vm})`,
                subject: input.vm
              })
            }
            yield* checkpoints.detachDependents(record)
          }
          yield* store.remove(input.vm)
        })
      )
      return { name: input.vm, destroyed: true }
    })
})

const sameList = (a: ReadonlyArray<string>, b: ReadonlyArray<string>): boolean => a.length === b.length && a.every((item, i) => item === b[i])

type Params = VmConfig["params"]
const sameParams = (a: Params, b: Params): boolean => {
  const recipes = Object.keys(a)
  return (
    recipes.length === Object.keys(b).length &&
    recipes.every((recipe) => {
      const [x, y] = [a[recipe] ?? {}, b[recipe]]
      return y !== undefined && Object.keys(x).length === Object.keys(y).length && Object.entries(x).every(([key, value]) => y[key] === value)
    })
  )
}

const ParamTable = Schema.Record({ key: Schema.String, value: Schema.Record({ key: Schema.String, value: Schema.String }) })

export const updateVm = defineOperation({
  key: "vm.update",
  tool: "update",
  expose: { cli: "update", mcp: true },
  title: "Change a VM's settings",
  description:
    "Change ram_mb, cpus, ssh_port, disk (grow only, stopped VM), recipes, params or agent_access. Works on a running VM: boot-time fields take effect at the next start and are listed in pending_restart. agent_access may only be lowered here.",
  kind: "command",
  input: Schema.Struct({
    vm: VmName,
    ram_mb: Schema.optional(RamMb),
    cpus: Schema.optional(Cpus),
    ssh_port: Schema.optional(SshPort),
    disk: Schema.optional(DiskSizeInput).annotations({ description: `New absolute disk size ${DISK_RANGE.min}..${DISK_RANGE.max} (grow only)` }),
    recipes: Schema.optional(Schema.Array(Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9-]*$/)))),
    params: Schema.optional(ParamTable),
    secrets: Schema.optional(ParamTable),
    agent_access: Schema.optional(AccessLevel),
    share: hostOnly(Schema.optional(Schema.String)),
    shares: HostShares,
    display: hostOnly(Schema.optional(Schema.Literal("auto", "window", "vnc"))),
    installed: hostOnly(Schema.optional(Schema.Boolean)),
    name: hostOnly(Schema.optional(Schema.String)),
    os: hostOnly(Schema.optional(Schema.String)),
    backend: hostOnly(Schema.optional(Schema.String)),
    mode: hostOnly(Schema.optional(Schema.String))
  }),
  output: UpdateResult,
  annotations: MUTATE,
  access: null,
  run: (input, context) =>
    Effect.gen(function* () {
      // An unknown VM answers not_found before anything about the request itself.
      yield* loadVm(input.vm)
      for (const field of ["name", "os", "backend", "mode"] as const) {
        if (input[field] !== undefined) {
          return yield* new ImmutableField({ message: `${field} cannot be changed; create a new VM instead`, subject: field })
        }
      }
      const changes = Object.keys(input).filter((key) => key !== "vm")
      if (changes.length === 0) return yield* new InvalidSpec({ message: "nothing to change: give at least one setting" })
      yield* checkDiskSize(input.disk)
      const store = yield* VmStore
      const hypervisor = yield* Hypervisor
      return yield* (yield* Locks).withRootLock(
        Effect.gen(function* () {
          const record = yield* loadVm(input.vm)
          const running = yield* isRunning(record)
          let config: VmConfig = record.config
          const changed: string[] = []
          const pending: string[] = []
          // Only a setting that really differs counts as changed (and only then is vm.toml rewritten).
          const touch = (wire: string, bootTime: boolean) => {
            if (!changed.includes(wire)) changed.push(wire)
            if (bootTime && running) pending.push(wire)
          }
          if (input.agent_access !== undefined) {
            const current = effectiveAccess(config)
            if (context.entrypoint === "mcp" && ACCESS_ORDER.indexOf(input.agent_access) > ACCESS_ORDER.indexOf(current)) {
              return yield* new AccessDenied({ message: `update may only lower agent_access (now ${current}); ask a person to raise it with stoat update`, subject: input.vm })
            }
            if (input.agent_access !== current) {
              config = { ...config, agent_access: input.agent_access, allow_exec: input.agent_access === "exec" }
              touch("agent_access", false)
            }
          }
          if (input.ram_mb !== undefined && input.ram_mb !== config.ram) {
            config = { ...config, ram: input.ram_mb }
            touch("ram", true)
          }
          if (input.cpus !== undefined && input.cpus !== config.cpus) {
            config = { ...config, cpus: input.cpus }
            touch("cpus", true)
          }
          if (input.ssh_port !== undefined && input.ssh_port !== config.sshport) {
            const others = (yield* store.list).filter((vm) => vm.name !== input.vm)
            if (config.forwards.some((forward) => forward.hostport === input.ssh_port)) {
              return yield* new InvalidSpec({ message: `ssh_port: host port ${input.ssh_port} is one of this VM's forwards`, subject: "ssh_port" })
            }
            const clash = validateForwards(input.vm, -1, [`${input.ssh_port}:22`], others)
            if (clash instanceof InvalidSpec) return yield* new InvalidSpec({ message: clash.message.replace(/^forward "[^"]*": /, "ssh_port: "), subject: "ssh_port" })
            config = { ...config, sshport: input.ssh_port }
            touch("ssh_port", true)
          }
          // An empty display preference means auto.
          if (input.display !== undefined && input.display !== (config.display || "auto")) {
            config = { ...config, display: input.display }
            touch("display", true)
          }
          if (input.share !== undefined && input.share !== config.share) {
            config = { ...config, share: input.share }
            touch("share", true)
          }
          if (input.shares !== undefined && !sameList(input.shares, config.shares.map((share) => share.host))) {
            config = { ...config, shares: sharesOf(input.shares) }
            touch("shares", true)
          }
          if (input.installed !== undefined && input.installed !== config.installed) {
            config = { ...config, installed: input.installed }
            touch("installed", false)
          }
          if (input.recipes !== undefined && !sameList(input.recipes, config.recipes)) {
            yield* requireKnownRecipes(input.recipes, config.os)
            config = { ...config, recipes: input.recipes }
            touch("recipes", false)
          }
          if (input.params !== undefined) {
            const params = { ...config.params, ...input.params }
            if (!sameParams(params, config.params)) {
              config = { ...config, params }
              touch("params", false)
            }
          }
          if (input.secrets !== undefined) {
            // Stored beside vm.toml, 0600, and never echoed: the result lists only that params changed.
            yield* writeSecrets(record.dir, input.secrets)
            touch("params", false)
          }
          if (input.disk !== undefined && diskSizeBytes(input.disk) !== diskSizeBytes(config.disk)) {
            if (running) return yield* new AlreadyRunning({ message: `stop VM "${input.vm}" before growing its disk`, subject: input.vm })
            if (diskSizeBytes(input.disk) < diskSizeBytes(config.disk)) {
              return yield* new DiskShrink({ message: `disk can only grow (now ${config.disk}, asked ${input.disk})`, subject: "disk" })
            }
            if (config.mode === "live") return yield* new NoDisk({ message: `VM "${input.vm}" is a live VM and has no disk`, subject: input.vm })
            // A cloud VM's disk is made at first start, at the size vm.toml then names.
            if (yield* Effect.promise(() => stat(diskPath(record)).then(() => true, () => false))) yield* hypervisor.resizeDisk(vmDisk(record), input.disk)
            config = { ...config, disk: input.disk }
            touch("disk", false)
          }
          if (config !== record.config) yield* store.write(input.vm, config)
          const vm = yield* reload(input.vm)
          return { vm, changed, applies_at: pending.length > 0 ? ("next_start" as const) : ("now" as const), pending_restart: pending }
        })
      )
    })
})

export const cloneVm = defineOperation({
  key: "vm.clone",
  tool: "clone",
  expose: { cli: "clone", mcp: true },
  title: "Clone a VM",
  description: "Make a new VM from a stopped one: a copy-on-write disk overlay (instant, independent of disk size), a fresh SSH port and no port forwards.",
  kind: "command",
  input: Schema.Struct({ source: VmName, name: Schema.String }),
  output: CloneResult,
  annotations: MUTATE,
  access: null,
  run: (input) =>
    Effect.gen(function* () {
      const invalid = validateVmName(input.name)
      if (invalid) return yield* invalid
      const store = yield* VmStore
      const hypervisor = yield* Hypervisor
      const record = yield* (yield* Locks).withRootLock(
        Effect.gen(function* () {
          const source = yield* loadVm(input.source)
          if (yield* isRunning(source)) return yield* new AlreadyRunning({ message: `VM "${input.source}" is running; stop it before cloning`, subject: input.source })
          const all = yield* store.list
          if (all.some((vm) => vm.name === input.name)) return yield* new NameTaken({ message: `VM "${input.name}" already exists`, subject: input.name })
          yield* checkVmCount(all.length, input.name)
          const sshport = yield* Effect.tryPromise({ try: () => allocateSshPort(all), catch: internalError("cannot allocate an ssh port") })
          const { applied: _applied, forwards: _forwards, ...copied } = source.config
          const config: VmConfig = { ...copied, name: input.name, sshport, forwards: [], applied: {}, project: "", key: "" }
          yield* makeVmFolder(input.name, (dir) =>
            Effect.gen(function* () {
              const sourceDisk = diskPath(source)
              const hasDisk = yield* Effect.promise(() => stat(sourceDisk).then(() => true, () => false))
              if (hasDisk) yield* hypervisor.createDisk(firstDisk({ name: input.name, dir }), source.config.disk, vmDisk(source))
              yield* store.write(input.name, config)
            })
          )
          return yield* loadVm(input.name)
        })
      )
      return { forwards_copied: false, source: input.source, vm: yield* viewOne(record) }
    })
})

export const forwardPorts = defineOperation({
  key: "vm.forward",
  tool: "forward",
  expose: { cli: "forward", mcp: true },
  title: "Show or set port forwards",
  description:
    "Show a VM's host→guest TCP forwards on 127.0.0.1, or replace them with pairs like \"8080:80\" (host port ≥ 1024), or clear them. On a running VM changes apply at the next start.",
  kind: "command",
  input: Schema.Struct({
    vm: VmName,
    pairs: Schema.optional(Schema.Array(Schema.String.pipe(Schema.pattern(/^\d{1,5}:\d{1,5}$/)))),
    clear: Schema.optional(Schema.Boolean)
  }),
  output: ForwardResult,
  annotations: MUTATE,
  access: null,
  run: (input) =>
    Effect.gen(function* () {
      if (input.clear && input.pairs && input.pairs.length > 0) return yield* new InvalidSpec({ message: "clear takes no pairs" })
      const store = yield* VmStore
      const show = (record: OkRecord, running: boolean) => ({
        vm: record.name,
        forwards: record.config.forwards.map((forward) => ({ host_port: forward.hostport, guest_port: forward.guestport })),
        active: running
      })
      const record = yield* loadVm(input.vm)
      const running = yield* isRunning(record)
      if (!input.clear && (input.pairs === undefined || input.pairs.length === 0)) return show(record, running)
      return yield* (yield* Locks).withRootLock(
        Effect.gen(function* () {
          const fresh = yield* loadVm(input.vm)
          const forwards = input.clear ? [] : validateForwards(input.vm, fresh.config.sshport, input.pairs ?? [], yield* store.list)
          if (forwards instanceof InvalidSpec) return yield* forwards
          yield* store.write(input.vm, { ...fresh.config, forwards })
          const saved = yield* loadVm(input.vm)
          return { ...show(saved, false), applies_at: running ? ("next_start" as const) : ("now" as const) }
        })
      )
    })
})

// ---------------------------------------------------------------------------------------------
// logs / screenshot

const MAX_LOG_LINES = 2000
const LogCount = Schema.optional(Schema.Int.pipe(Schema.between(0, MAX_LOG_LINES)))

/** The file `stoat logs` reads: a VM's console or apply log, or with no VM stoat's own log. */
export const logFile = (root: DataRootPaths, vm?: string, which: "console" | "apply" = "console"): string =>
  vm === undefined ? join(root.logs, "stoat.log") : join(root.vmDir(vm), which === "console" ? "console.log" : "last-provision.log")

/** The last n lines of a log (n = 0: as many as the cap allows), without terminal escapes; a missing file has none. */
const tailLines = (file: string, n = 50) =>
  Effect.map(
    Effect.promise(() => readFile(file, "utf8").catch(() => "")),
    (text) => {
      const lines = text.replace(ANSI, "").split("\n")
      if (lines.at(-1) === "") lines.pop()
      return lines.slice(-(n === 0 ? MAX_LOG_LINES : n))
    }
  )

/** Terminal control: CSI sequences, OSC strings (window titles), charset and two-character escapes, and CR. */
const ANSI = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[()][A-Za-z0-9]|\u001b[@-Z\\-_0-9=>c]|\r/g

export const vmLogs = defineOperation({
  key: "vm.logs",
  tool: "logs",
  expose: { cli: "logs", mcp: true },
  title: "Read a VM's log",
  description: "Last lines of a VM's serial console log (which=console, default) or its last recipe apply log (which=apply). Escape sequences and carriage returns are removed. n ≤ 2000 (default 50).",
  kind: "query",
  input: Schema.Struct({
    vm: VmName,
    which: Schema.optional(Schema.Literal("console", "apply")),
    n: LogCount
  }),
  output: LogLines,
  annotations: READ,
  access: null,
  run: (input) =>
    Effect.gen(function* () {
      const record = yield* (yield* VmStore).get(input.vm)
      const which = input.which ?? "console"
      return { vm: input.vm, which, lines: yield* tailLines(logFile(yield* DataRoot, record.name, which), input.n) }
    })
})

export const stoatLog = defineOperation({
  key: "host.logs",
  tool: "global_logs",
  // The original keeps its own log away from agents; so do we.
  expose: { cli: "logs", mcp: false },
  title: "Read stoat's own log",
  description: "Last lines of stoat's own log (logs/stoat.log): one line per operation with its entrypoint, VM, duration and outcome. n ≤ 2000 (default 50).",
  kind: "query",
  input: Schema.Struct({ n: LogCount }),
  output: LogLines,
  annotations: READ,
  access: null,
  run: (input) => Effect.map(Effect.flatMap(DataRoot, (root) => tailLines(logFile(root), input.n)), (lines) => ({ lines }))
})

export const screenshotVm = defineOperation({
  key: "vm.screenshot",
  tool: "screenshot",
  expose: { cli: "screenshot", mcp: true },
  title: "Screenshot a VM's display",
  description: "Save a PNG of a running VM's display under the VM's screenshots folder and report its size.",
  kind: "command",
  input: Schema.Struct({ vm: VmName, path: hostOnly(Schema.optional(Schema.String).annotations({ description: "Output file (CLI only)" })) }),
  output: ScreenshotResult,
  annotations: MUTATE,
  access: null,
  run: (input) =>
    Effect.gen(function* () {
      const record = yield* loadVm(input.vm)
      const folder = join(record.dir, "screenshots")
      yield* fs.makeDirectory(folder)
      const stamp = new Date().toISOString().replace(/[:]/g, "").replace(/\.\d+Z$/, "Z")
      let path = input.path ?? join(folder, `${stamp}.png`)
      for (let n = 2; input.path === undefined && (yield* fs.exists(path)); n++) {
        path = join(folder, `${stamp}-${n}.png`)
      }
      const shot = yield* (yield* Hypervisor).screenshot(vmRef(record))
      // Written here, not by the provider: the file lands where the user asked, on this host.
      yield* Effect.zipRight(fs.makeDirectory(dirname(path)), fs.writeFileAtomic(path, shot.png)).pipe(
        Effect.mapError((error) => new ScreenshotFailed({ message: `screenshot of VM "${input.vm}" failed: ${error.message}`, subject: input.vm }))
      )
      return { vm: input.vm, path, width: shot.width, height: shot.height, bytes: shot.png.byteLength }
    })
})

