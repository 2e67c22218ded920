import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Cause, Effect, Exit } from "effect"
import { onTestFinished } from "vitest"
import type { ErrorInfo } from "@stoat/wire"
import type { ExecutionContext, Operation } from "../src/operations/operation.js"
import { isReservedDir } from "../src/platform/data-root.js"
import { toErrorInfo } from "../src/errors.js"
import { isBindable } from "../src/vm/network.js"
import { runOperation } from "../src/operations/run.js"
import { FakeGuestState, FakeHypervisorState, FakeImageBuilderState, testLayer } from "../src/testing/index.js"
import { cliCaller, McpCaller, ToolkitCaller, type Caller } from "../src/context/caller.js"
import { callerLayer } from "../src/context/access-policy.js"

export type CallerKind = Caller["Type"]["kind"]

/** The caller of one test call; `interactive` only means something for a person at the CLI. */
export const callerOf = (kind: CallerKind = "cli", interactive = false) =>
  callerLayer(kind === "cli" ? cliCaller({ interactive }) : kind === "mcp" ? McpCaller : ToolkitCaller)

export interface CallOptions {
  readonly caller?: CallerKind
  readonly interactive?: boolean
  readonly progress?: ExecutionContext["progress"]
}

/**
 * One test's world: a temp data root, the fake hypervisor and guest, and helpers that run an
 * operation through `runOperation` (so input is decoded with the closed schema, as every
 * frontend does). The root is removed when the test finishes.
 */
export const harness = (options: { readonly memAvailableMb?: number } = {}) => {
  const root = mkdtempSync(join(tmpdir(), "stoat-lifecycle-"))
  onTestFinished(() => rmSync(root, { recursive: true, force: true }))
  const hypervisor = new FakeHypervisorState()
  const guest = new FakeGuestState()
  const images = new FakeImageBuilderState()
  const world = {
    root,
    hypervisor,
    images,
    guest,
    memAvailableMb: options.memAvailableMb ?? 16_384,
    layer: () => testLayer({ root, hypervisor, images, guest, memAvailableMb: world.memAvailableMb }),

    exit: <I, O, R>(
      operation: Operation<I, O, R>,
      input: unknown,
      call: CallOptions = {}
    ): Promise<Exit.Exit<O, unknown>> => {
      const context: ExecutionContext = {
        requestId: "test",
        ...(call.progress !== undefined ? { progress: call.progress } : {})
      }
      const program = Effect.provide(runOperation(operation, input, context), callerOf(call.caller, call.interactive))
      return Effect.runPromise(
        Effect.exit(Effect.provide(program as Effect.Effect<O, unknown, never>, world.layer() as never))
      )
    },

    /** Runs and expects success. */
    ok: async <I, O, R>(operation: Operation<I, O, R>, input: unknown, call: CallOptions = {}): Promise<O> => {
      const exit = await world.exit(operation, input, call)
      if (Exit.isSuccess(exit)) return exit.value
      throw new Error(`${operation.tool} ${JSON.stringify(input)} failed: ${JSON.stringify(toErrorInfo(exit.cause))}`)
    },

    /** Runs and expects an expected (typed) failure; a defect or a success fails the test. */
    fail: async <I, O, R>(
      operation: Operation<I, O, R>,
      input: unknown,
      call: CallOptions = {}
    ): Promise<ErrorInfo> => {
      const exit = await world.exit(operation, input, call)
      if (Exit.isSuccess(exit))
        throw new Error(`${operation.tool} ${JSON.stringify(input)} succeeded: ${JSON.stringify(exit.value)}`)
      if (Cause.failureOption(exit.cause)._tag === "None")
        throw new Error(`${operation.tool} ${JSON.stringify(input)} died: ${Cause.pretty(exit.cause)}`)
      return toErrorInfo(exit.cause)
    },

    vmDir: (name: string) => join(root, name),
    sharedDir: (name: string) => join(root, "shared", name),
    diskOf: (name: string) => join(root, name, "disk.qcow2"),
    exists: (...parts: string[]) => existsSync(join(root, ...parts)),

    /** Folders of the data root that could be VMs (not reserved). */
    vmFolders: (): string[] =>
      existsSync(root)
        ? readdirSync(root, { withFileTypes: true })
            .filter((entry) => entry.isDirectory() && !isReservedDir(entry.name))
            .map((entry) => entry.name)
            .sort()
        : [],

    /** Writes `<root>/<name>/vm.toml` as given (a hand-made or broken VM). */
    writeVmToml: (name: string, text: string) => {
      mkdirSync(join(root, name), { recursive: true })
      writeFileSync(join(root, name, "vm.toml"), text)
    },
    readVmToml: (name: string) => readFileSync(join(root, name, "vm.toml"), "utf8"),

    writeConfig: (text: string) => writeFileSync(join(root, "config.toml"), text),

    /** Writes a file in the VM folder (console.log, last-provision.log). */
    writeVmFile: (name: string, file: string, data: string | Uint8Array) => {
      mkdirSync(join(root, name), { recursive: true })
      writeFileSync(join(root, name, file), data)
    },

    isRunning: (name: string) => hypervisor.running.has(join(root, name))
  }
  return world
}

export type Harness = ReturnType<typeof harness>

/**
 * The port create would pick next given these claimed ports: the first one from 2200 that is
 * not claimed and binds on loopback right now. Other processes may hold ports in 2200+, so
 * tests compare with this rather than with a constant.
 */
export const nextFreePort = async (claimed: ReadonlySet<number>): Promise<number> => {
  for (let port = 2200; port < 65536; port++) if (!claimed.has(port) && (await isBindable(port))) return port
  throw new Error("no free port")
}
