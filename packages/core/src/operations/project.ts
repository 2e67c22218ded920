import { Effect, Schema } from "effect"
import { InitResult, ProjectRun, ProjectStatus, VmList } from "@stoat/wire"
import { InvalidSpec } from "../errors.js"
import { DECLARATION_KEY } from "../projects/file.js"
import { initProject, ProjectScope } from "../projects/service.js"
import { Projects } from "../lifecycle/projects.js"
import { NoInput } from "./inputs.js"
import { defineOperation, DESTRUCTIVE, EXEC, MUTATE, READ } from "./operation.js"
import { viewVms } from "./read.js"
import { StartFields } from "./vm.js"

const PROJECT_NOTE = " Uses the stoat.toml of the server's working directory; without one: not_found, run stoat init."
/** What every fan-out over the declarations shares (seed 000, project tools). */
const RUN_NOTE = " In declaration order; the first failure stops the run and later VMs are skipped."

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
  run: () => Effect.flatMap(Projects, (projects) => projects.status)
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
  run: ({ timeout_seconds, ...options }) =>
    Effect.flatMap(Projects, (projects) => projects.up({ ...options, timeoutSeconds: timeout_seconds }))
})

export const projectDown = defineOperation({
  key: "project.down",
  tool: "project_down",
  expose: { cli: "down", mcp: true },
  title: "Stop the project's VMs",
  description: `Stop each declared VM gracefully; one not created yet counts as stopped.${RUN_NOTE}${PROJECT_NOTE}`,
  input: NoInput,
  ...FAN_OUT,
  run: () => Effect.flatMap(Projects, (projects) => projects.down)
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
  run: () => Effect.flatMap(Projects, (projects) => projects.apply)
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
    Effect.flatMap(Projects, (projects) => projects.wait({ ...options, timeoutSeconds: timeout_seconds }))
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
  run: (input) => Effect.flatMap(Projects, (projects) => projects.remove({ detachDependents: input.detach_dependents }))
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
      const dir = (yield* ProjectScope).dir
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
    Effect.flatMap(Projects, (projects) =>
      Effect.flatMap(projects.records, (records) => Effect.map(viewVms(records), (vms) => ({ vms })))
    )
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
