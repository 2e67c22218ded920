import { join } from "node:path"
import { Effect, Schema } from "effect"
import {
  CliUpdateResult,
  CloneResult,
  DestroyResult,
  ForwardResult,
  LogLines,
  RmResult,
  ScreenshotResult,
  UpdateResult,
  Vm,
  VmResult,
  WaitResult
} from "@stoat/wire"
import { DataRoot, type DataRootPaths } from "../platform/data-root.js"
import { readFileTail } from "../platform/fs.js"
import { InvalidSpec } from "../errors.js"
import { DISK_RANGE, DiskSizeInput, LIBVIRT_URI } from "../vm/config.js"
import { AccessLevel } from "../context/access-policy.js"
import { isRunning, loadVm, type OkRecord } from "../vm/records.js"
import { Vms } from "../lifecycle/lifecycle.js"
import { VmStore, type VmRecord } from "../vm/store.js"
import { SshPort, VmName } from "./inputs.js"
import { Cpus, IntRange, RamMb } from "../vm/limits.js"
import { DESTRUCTIVE, defineOperation, hostOnly, MUTATE, READ } from "./operation.js"
import { viewVms } from "./read.js"

const viewOne = (record: VmRecord) => Effect.map(viewVms([record]), (views) => views[0]!)

/** The CLI's data for an operation that answers one VM (create, up, down). */
const vmResult = (vm: Vm): typeof VmResult.Type => ({ vm })

// ---------------------------------------------------------------------------------------------
// create

/** Project shares: absolute host folders (checked against the project by its reader), mounted writable. */
const HostShares = hostOnly(
  Schema.optional(
    Schema.Array(Schema.String.pipe(Schema.pattern(/^\/[^\0]*$/))).annotations({
      description: "Host folders shared writable at /mnt/share<N> (project up only)"
    })
  )
)

const CreateInput = Schema.Struct({
  name: Schema.String.annotations({ description: "New VM name: letters, digits, '.', '_', '-'; at most 64" }),
  image: Schema.optional(Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9._-]*$/))).annotations({
    description: "Catalog image id from list_images, e.g. tiny (built locally); a cloud image must be downloaded first"
  }),
  image_path: hostOnly(Schema.optional(Schema.String).annotations({ description: "Your own image file (CLI only)" })),
  os: Schema.optional(Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9-]*$/))).annotations({
    description: "Guest OS definition (see list_guests); default: the image's"
  }),
  backend: Schema.optional(Schema.Literal("apkovl", "cloudinit", "ssh", "direct")).annotations({
    description: "Provisioning backend; default: the image's"
  }),
  mode: Schema.optional(Schema.Literal("live", "disk")).annotations({
    description: "For an image that offers both; default: the image's"
  }),
  ram_mb: Schema.optional(RamMb).annotations({ description: "RAM in MiB (default 4096; tiny: 256)" }),
  cpus: Schema.optional(Cpus).annotations({ description: "vCPUs (default 4; tiny: 1)" }),
  disk: Schema.optional(DiskSizeInput).annotations({
    description: `Absolute disk size ${DISK_RANGE.min}..${DISK_RANGE.max}, e.g. 8G (default 8G)`
  }),
  recipes: Schema.optional(Schema.Array(Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9-]*$/)))).annotations({
    description: "Recipe names to apply (see list_recipes); default none"
  }),
  agent_access: Schema.optional(AccessLevel).annotations({
    description: "Guest access for MCP agents (default manage)"
  }),
  share: hostOnly(
    Schema.optional(Schema.String).annotations({ description: "Host folder shared read-only at /mnt/host (CLI only)" })
  ),
  console_password: hostOnly(
    Schema.optional(Schema.String).annotations({ description: "Console password, or 'random' (CLI only)" })
  ),
  global: hostOnly(
    Schema.optional(Schema.Boolean).annotations({
      description: "false: refuse when the working directory has a stoat.toml (CLI only: create without --global)"
    })
  ),
  project: hostOnly(
    Schema.optional(Schema.Struct({ dir: Schema.String, key: Schema.String })).annotations({
      description: "The project declaration this VM is made for (project up only)"
    })
  ),
  shares: HostShares,
  provider: hostOnly(
    Schema.optional(Schema.Literal("qemu", "libvirt")).annotations({
      description: "Which hypervisor runs the VM: qemu (default) or libvirt (CLI only)"
    })
  ),
  host: hostOnly(
    Schema.optional(Schema.String.pipe(Schema.pattern(LIBVIRT_URI))).annotations({
      description:
        "The libvirt host, a URI such as qemu+ssh://user@host/system (provider libvirt; default qemu:///system) (CLI only)"
    })
  )
})

export const createVm = defineOperation({
  key: "vm.create",
  tool: "create",
  longRunning: true,
  expose: { cli: "create", mcp: true },
  title: "Create a VM",
  description:
    "Create a VM definition from a catalog image; tiny boots to SSH in seconds. Defaults: ram_mb 4096, cpus 4, disk 8G, or the image's (tiny: 256, 1, 1G). Does not start it: call start, then wait.",
  kind: "command",
  input: CreateInput,
  output: Vm,
  cliView: vmResult,
  annotations: MUTATE,
  access: null,
  run: (input) =>
    Effect.flatMap(
      Effect.flatMap(Vms, (vms) => vms.create(input)),
      viewOne
    )
})

// ---------------------------------------------------------------------------------------------
// start / stop / wait

const WaitFields = {
  wait: Schema.optional(Schema.Boolean).annotations({ description: "Also wait until SSH answers (default false)" }),
  timeout_seconds: Schema.optional(IntRange(1, 600)).annotations({
    description: "Seconds to wait (default 300, max 600)"
  })
}

/**
 * How a start goes: wait for SSH, override the memory floor, apply recipes. The last two are CLI
 * only: applying runs guest code, which an agent reaches only through apply_recipes (access manage).
 */
export const StartFields = {
  ...WaitFields,
  force: hostOnly(
    Schema.optional(Schema.Boolean).annotations({ description: "Ignore the host-memory floor (CLI only)" })
  ),
  apply: hostOnly(
    Schema.optional(Schema.Boolean).annotations({
      description: "Apply the VM's recipes once it is up (CLI only: `up` unless --no-apply)"
    })
  )
}

export const startVm = defineOperation({
  key: "vm.start",
  tool: "start",
  longRunning: true,
  expose: { cli: "up", mcp: true },
  title: "Start a VM",
  description:
    "Start a stopped VM (running is fine). Too little RAM answers limit_reached with needed_mb and available_mb. Without wait=true, call wait before any guest tool.",
  kind: "command",
  input: Schema.Struct({ vm: VmName, ...StartFields }),
  output: Vm,
  cliView: vmResult,
  annotations: MUTATE,
  access: null,
  run: ({ vm, timeout_seconds, ...options }) =>
    Effect.flatMap(
      Effect.flatMap(Vms, (vms) => vms.start(vm, { ...options, timeoutSeconds: timeout_seconds })),
      viewOne
    )
})

export const stopVm = defineOperation({
  key: "vm.stop",
  tool: "stop",
  expose: { cli: "down", mcp: true },
  title: "Stop a VM",
  description: "Power a VM down gracefully (ACPI, then SIGTERM, then SIGKILL); returns once QEMU has exited.",
  kind: "command",
  input: Schema.Struct({ vm: VmName }),
  output: Vm,
  cliView: vmResult,
  annotations: MUTATE,
  access: null,
  run: (input) =>
    Effect.flatMap(
      Effect.flatMap(Vms, (vms) => vms.stop(input.vm)),
      viewOne
    )
})

export const waitVm = defineOperation({
  key: "vm.wait",
  tool: "wait",
  longRunning: true,
  expose: { cli: "wait", mcp: true },
  title: "Wait for a VM state",
  description:
    "Wait until a VM is reachable over SSH (default), stopped, or has applied its recipes. Call it after start and before any guest tool.",
  kind: "command",
  input: Schema.Struct({
    vm: VmName,
    until: Schema.optional(Schema.Literal("reachable", "applied", "stopped")).annotations({
      description: "State to wait for (default reachable)"
    }),
    healthy: Schema.optional(Schema.Boolean).annotations({
      description: "Wait for the applied recipes' health checks (default false)"
    }),
    timeout_seconds: Schema.optional(IntRange(1, 600)).annotations({
      description: "Seconds, not a duration string (default 300, max 600)"
    })
  }),
  output: WaitResult,
  annotations: MUTATE,
  access: null,
  run: ({ vm, timeout_seconds, ...options }) =>
    Effect.map(
      Effect.flatMap(Vms, (vms) => vms.wait(vm, { ...options, timeoutSeconds: timeout_seconds })),
      ({ until, waitedMs, healthy }) => ({
        vm,
        until,
        reached: true,
        waited_ms: waitedMs,
        ...(healthy !== undefined ? { healthy } : {})
      })
    )
})

// ---------------------------------------------------------------------------------------------
// destroy / update / clone / forward

export const destroyVm = defineOperation({
  key: "vm.destroy",
  tool: "destroy",
  expose: { cli: "rm", mcp: true },
  title: "Delete a VM",
  description:
    "Delete a stopped VM with its disk, snapshots, checkpoints and shared folder (broken VMs too). A VM with checkpoints or VMs built on its disk answers confirmation_required naming them until detach_dependents=true.",
  kind: "command",
  input: Schema.Struct({
    vm: VmName,
    detach_dependents: Schema.optional(Schema.Boolean).annotations({
      description:
        "Also delete its checkpoints and give stopped dependent VMs their own copy of its disk data (default false)"
    }),
    force: hostOnly(
      Schema.optional(Schema.Boolean).annotations({
        description:
          "Delete it even though its host does not answer (a host gone for good); whatever still runs there is left to that host"
      })
    )
  }),
  output: DestroyResult,
  cliView: ({ name, destroyed }): typeof RmResult.Type => ({ deleted: destroyed, name }),
  annotations: DESTRUCTIVE,
  touches: ["deletes"],
  access: null,
  run: (input) =>
    Effect.as(
      Effect.flatMap(Vms, (vms) =>
        vms.destroy(input.vm, { detachDependents: input.detach_dependents, force: input.force })
      ),
      { name: input.vm, destroyed: true }
    )
})

const ParamTable = Schema.Record({
  key: Schema.String,
  value: Schema.Record({ key: Schema.String, value: Schema.String })
})

export const updateVm = defineOperation({
  key: "vm.update",
  tool: "update",
  expose: { cli: "update", mcp: true },
  title: "Change a VM's settings",
  description:
    "Change a VM's settings; works on a running VM, where boot-time fields wait for the next start (listed in pending_restart). disk grows only, on a stopped VM.",
  kind: "command",
  input: Schema.Struct({
    vm: VmName,
    ram_mb: Schema.optional(RamMb).annotations({ description: "RAM in MiB" }),
    cpus: Schema.optional(Cpus).annotations({ description: "vCPUs" }),
    ssh_port: Schema.optional(SshPort).annotations({ description: "Host SSH port" }),
    disk: Schema.optional(DiskSizeInput).annotations({
      description: `New absolute disk size ${DISK_RANGE.min}..${DISK_RANGE.max} (grow only)`
    }),
    recipes: Schema.optional(Schema.Array(Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9-]*$/)))).annotations({
      description: "The VM's recipe list, replaced"
    }),
    params: Schema.optional(ParamTable).annotations({ description: "Recipe parameters: {recipe: {param: value}}" }),
    secrets: Schema.optional(ParamTable).annotations({
      description: "Secret recipe parameters, {recipe: {param: value}}; never echoed"
    }),
    agent_access: Schema.optional(AccessLevel).annotations({
      description: "Lower the guest access for MCP agents (raising is refused)"
    }),
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
  cliView: ({ vm, changed, applies_at }): typeof CliUpdateResult.Type => ({ vm, changed, applies_at }),
  annotations: MUTATE,
  access: null,
  run: ({ vm, ...spec }) =>
    Effect.gen(function* () {
      const { record, changed, pendingRestart } = yield* (yield* Vms).update(vm, spec)
      return {
        vm: yield* viewOne(record),
        changed,
        applies_at: pendingRestart.length > 0 ? ("next_start" as const) : ("now" as const),
        pending_restart: pendingRestart
      }
    })
})

export const cloneVm = defineOperation({
  key: "vm.clone",
  tool: "clone",
  expose: { cli: "clone", mcp: true },
  title: "Clone a VM",
  description: "Make a new VM from a stopped one: an instant copy-on-write disk, a fresh SSH port, no forwards.",
  kind: "command",
  input: Schema.Struct({
    source: VmName.annotations({ description: "Stopped VM to clone" }),
    name: Schema.String.annotations({ description: "New VM name" })
  }),
  output: CloneResult,
  annotations: MUTATE,
  access: null,
  run: (input) =>
    Effect.map(
      Effect.flatMap(
        Effect.flatMap(Vms, (vms) => vms.clone(input.source, input.name)),
        viewOne
      ),
      (vm) => ({ forwards_copied: false, source: input.source, vm })
    )
})

const forwardsView = (record: OkRecord, running: boolean) => ({
  vm: record.name,
  forwards: record.config.forwards.map((forward) => ({ host_port: forward.hostport, guest_port: forward.guestport })),
  active: running
})

export const forwardPorts = defineOperation({
  key: "vm.forward",
  tool: "forward",
  expose: { cli: "forward", mcp: true },
  title: "Show or set port forwards",
  description:
    "Show a VM's TCP forwards from 127.0.0.1 to the guest, replace them (pairs), or clear them. On a running VM changes apply at the next start.",
  kind: "command",
  input: Schema.Struct({
    vm: VmName,
    pairs: Schema.optional(
      Schema.Array(
        Schema.String.pipe(
          Schema.pattern(/^\d{1,5}:\d{1,5}$/, { message: () => "forwards are HOST:GUEST port pairs such as 8080:80" })
        )
      )
    ).annotations({ description: "HOST:GUEST pairs such as 8080:80, replacing the current ones; omit to show them" }),
    clear: Schema.optional(Schema.Boolean).annotations({ description: "Remove every forward (default false)" })
  }),
  output: ForwardResult,
  annotations: MUTATE,
  access: null,
  run: (input) =>
    Effect.gen(function* () {
      if (input.clear && input.pairs && input.pairs.length > 0)
        return yield* new InvalidSpec({ message: "clear takes no pairs" })
      const record = yield* loadVm(input.vm)
      const running = yield* isRunning(record)
      if (!input.clear && (input.pairs === undefined || input.pairs.length === 0)) return forwardsView(record, running)
      const saved = yield* (yield* Vms).setForwards(input.vm, input.clear ? [] : (input.pairs ?? []))
      return { ...forwardsView(saved, false), applies_at: running ? ("next_start" as const) : ("now" as const) }
    })
})

// ---------------------------------------------------------------------------------------------
// logs / screenshot

const MAX_LOG_LINES = 2000
const LogCount = Schema.optional(IntRange(0, MAX_LOG_LINES)).annotations({
  description: `Lines (default 50, max ${MAX_LOG_LINES}; 0 = max)`
})

/** The file `stoat logs` reads: a VM's console or apply log, or with no VM stoat's own log. */
export const logFile = (root: DataRootPaths, vm?: string, which: "console" | "apply" = "console"): string =>
  vm === undefined
    ? join(root.logs, "stoat.log")
    : join(root.vmDir(vm), which === "console" ? "console.log" : "last-provision.log")

/** Enough of a log's end for MAX_LOG_LINES lines of a chatty console (2 KiB each). */
const LOG_TAIL_BYTES = MAX_LOG_LINES * 2048

/** The last n lines of a log (n = 0: as many as the cap allows), without terminal escapes; a missing file has none. */
const tailLines = (file: string, n = 50) =>
  Effect.map(readFileTail(file, LOG_TAIL_BYTES), (text) => {
    const lines = text.replace(ANSI, "").split("\n")
    if (lines.at(-1) === "") lines.pop()
    return lines.slice(-(n === 0 ? MAX_LOG_LINES : n))
  })

/** Terminal control: CSI sequences, OSC strings (window titles), charset and two-character escapes, and CR. */
const ANSI =
  /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[()][A-Za-z0-9]|\u001b[@-Z\\-_0-9=>c]|\r/g

export const vmLogs = defineOperation({
  key: "vm.logs",
  tool: "logs",
  expose: { cli: "logs", mcp: true },
  title: "Read a VM's log",
  description: "Last lines of a VM's serial console or last recipe apply log, without terminal escapes.",
  kind: "query",
  input: Schema.Struct({
    vm: VmName,
    which: Schema.optional(Schema.Literal("console", "apply")).annotations({
      description: "Serial console or last recipe apply (default console)"
    }),
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
  description:
    "Last lines of stoat's own log (logs/stoat.log): one line per operation with its entrypoint, VM, duration and outcome. n ≤ 2000 (default 50).",
  kind: "query",
  input: Schema.Struct({ n: LogCount }),
  output: LogLines,
  annotations: READ,
  access: null,
  run: (input) =>
    Effect.map(
      Effect.flatMap(DataRoot, (root) => tailLines(logFile(root), input.n)),
      (lines) => ({ lines })
    )
})

export const screenshotVm = defineOperation({
  key: "vm.screenshot",
  tool: "screenshot",
  expose: { cli: "screenshot", mcp: true },
  title: "Screenshot a VM's display",
  description: "Save a PNG of a running VM's display in its screenshots folder.",
  kind: "command",
  input: Schema.Struct({
    vm: VmName,
    path: hostOnly(Schema.optional(Schema.String).annotations({ description: "Output file (CLI only)" }))
  }),
  output: ScreenshotResult,
  annotations: MUTATE,
  access: null,
  run: (input) =>
    Effect.map(
      Effect.flatMap(Vms, (vms) => vms.screenshot(input.vm, input.path)),
      (shot) => ({ vm: input.vm, ...shot })
    )
})
