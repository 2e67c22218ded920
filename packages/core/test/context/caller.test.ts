import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Exit, Layer } from "effect"
import { describe, expect, it, onTestFinished } from "vitest"
import { toErrorInfo } from "../../src/errors.js"
import { AccessPolicy, callerLayer } from "../../src/context/access-policy.js"
import { Caller, CliCaller, cliCaller, McpCaller, ToolkitCaller } from "../../src/context/caller.js"
import { Vms } from "../../src/lifecycle/lifecycle.js"
import { testLayer } from "../../src/testing/index.js"

/** Runs `program` under core's testLayer with this caller, over a fresh data root. */
const runAs = <A, E>(caller: Layer.Layer<Caller>, program: Effect.Effect<A, E, any>, memAvailableMb = 16_384) => {
  const root = mkdtempSync(join(tmpdir(), "stoat-caller-"))
  onTestFinished(() => rmSync(root, { recursive: true, force: true }))
  return Effect.runPromiseExit(
    Effect.provide(program, testLayer({ root, caller, memAvailableMb })) as Effect.Effect<A, E, never>
  )
}

const failure = (exit: Exit.Exit<unknown, unknown>) => {
  if (Exit.isSuccess(exit)) throw new Error(`succeeded: ${JSON.stringify(exit.value)}`)
  return toErrorInfo(exit.cause)
}

const raiseToExec = Effect.gen(function* () {
  const vms = yield* Vms
  yield* vms.create({ name: "web", image: "tiny" })
  return yield* vms.update("web", { agent_access: "exec" })
})

const startStarved = (force: boolean) =>
  Effect.gen(function* () {
    const vms = yield* Vms
    yield* vms.create({ name: "web", image: "tiny" })
    return yield* vms.start("web", { force })
  })

describe("Caller and AccessPolicy", () => {
  it("a CLI caller may raise agent_access; an MCP caller gets access_denied with the wording agents see", async () => {
    const raised = await runAs(CliCaller, raiseToExec)
    expect(Exit.isSuccess(raised) && raised.value.changed).toEqual(["agent_access"])
    expect(failure(await runAs(McpCaller, raiseToExec))).toEqual({
      code: "access_denied",
      message: "update may only lower agent_access (now manage); ask a person to raise it with stoat update",
      subject: "web"
    })
  })

  it("-y overrides the host-memory floor for a CLI caller only, and each is told what it can do", async () => {
    const forced = await runAs(CliCaller, startStarved(true), 100)
    expect(Exit.isSuccess(forced) && forced.value.name).toBe("web")
    expect(failure(await runAs(CliCaller, startStarved(false), 100)).message).toMatch(
      /; lower ram_mb with update or pass -y$/
    )
    for (const agent of [McpCaller, ToolkitCaller]) {
      const refused = failure(await runAs(agent, startStarved(true), 100))
      expect(refused).toMatchObject({ code: "limit_reached", needed_mb: 256, available_mb: 100 })
      expect(refused.message).toMatch(/; lower ram_mb with update, or ask a person to run stoat up -y$/)
    }
  })

  it("access levels bind an MCP caller and not a person", async () => {
    const check = Effect.flatMap(AccessPolicy, (policy) =>
      policy.requireGranted("web", "observe", "manage", "needs manage")
    )
    expect(Exit.isSuccess(await Effect.runPromiseExit(Effect.provide(check, callerLayer(CliCaller))))).toBe(true)
    expect(failure(await Effect.runPromiseExit(Effect.provide(check, callerLayer(McpCaller))))).toEqual({
      code: "access_denied",
      message: "needs manage",
      subject: "web"
    })
    const enough = Effect.flatMap(AccessPolicy, (policy) =>
      policy.requireGranted("web", "exec", "manage", "needs manage")
    )
    expect(Exit.isSuccess(await Effect.runPromiseExit(Effect.provide(enough, callerLayer(McpCaller))))).toBe(true)
  })

  it("an interactive CLI caller leaves the display choice to the host; everyone else records VNC", async () => {
    const display = Effect.map(
      Effect.flatMap(Vms, (vms) => vms.create({ name: "web", image: "tiny" })),
      (record) => record.config.display
    )
    const atTerminal = await runAs(cliCaller({ interactive: true }), display)
    expect(Exit.isSuccess(atTerminal) && atTerminal.value).toBe("")
    for (const caller of [CliCaller, McpCaller]) {
      const exit = await runAs(caller, display)
      expect(Exit.isSuccess(exit) && exit.value).toBe("vnc")
    }
  })
})
