import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import { Effect, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { defineOperation, MUTATE } from "@stoat/core"
import { buildRegistry, createServer } from "../src/index.js"
import { dataOf, errorOf, fakeMcp, inProcess, testClient, unreachableVm } from "./helpers.js"

/** Calls without a progress token answer before the client's own 60 s request timeout (issue 26 item 1). */
describe("the call budget of a request without a progress token", () => {
  it("caps a wait's timeout_seconds so it answers with its own timeout, not the client's", async () => {
    const h = await inProcess({ callBudgetSeconds: 4 })
    try {
      await unreachableVm(h.client, h.guest, "slow")
      // Asked for 600 s; the budget of 4 s caps it at 2 s, and the answer is the wait's own.
      expect(errorOf(await h.client.callTool({ name: "wait", arguments: { vm: "slow", timeout_seconds: 600 } }))).toMatchObject({
        code: "timeout",
        message: 'VM "slow" did not answer ssh within 2 s'
      })
      // The default (300 s) is capped the same way.
      expect(errorOf(await h.client.callTool({ name: "wait", arguments: { vm: "slow" } })).message).toBe('VM "slow" did not answer ssh within 2 s')
      // Below the cap, the caller's own timeout stands.
      expect(errorOf(await h.client.callTool({ name: "wait", arguments: { vm: "slow", timeout_seconds: 1 } })).message).toBe('VM "slow" did not answer ssh within 1 s')
      // Input is still checked as given: the cap does not hide an invalid value.
      expect(errorOf(await h.client.callTool({ name: "wait", arguments: { vm: "slow", timeout_seconds: 601 } })).code).toBe("usage")
    } finally {
      await h.close()
    }
  })

  it("lets a call with a progress token run to its own timeout, sending progress", async () => {
    const h = await inProcess({ callBudgetSeconds: 2, heartbeatMs: 100 })
    try {
      await unreachableVm(h.client, h.guest, "slow")
      const seen: number[] = []
      const result = await h.client.callTool({ name: "wait", arguments: { vm: "slow", timeout_seconds: 3 } }, undefined, { onprogress: (p) => seen.push(p.progress) })
      expect(errorOf(result).message).toBe('VM "slow" did not answer ssh within 3 s')
      expect(seen.length).toBeGreaterThan(0)
    } finally {
      await h.close()
    }
  })

  it("says so in the descriptions of the tools that may run long and in the guide", async () => {
    const h = await inProcess({ callBudgetSeconds: 30 })
    try {
      const { tools } = await h.client.listTools()
      const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool.description ?? ""]))
      expect(byName["exec"]).toContain("Without a progress token: answers within 30 s, timeout_seconds ≤ 25 (see guide).")
      expect(byName["apply_recipes"]).toContain("Without a progress token: answers within 30 s (see guide).")
      expect(byName["list_vms"]).not.toContain("progress token")
      const guide = await h.client.readResource({ uri: "stoat://guide" })
      const text = (guide.contents[0] as { text: string }).text
      expect(text).toContain("answers within 30 s")
      expect(text).toContain("capped at\n25 s")
    } finally {
      await h.close()
    }
  })

  // Work no timeout_seconds bounds: an operation that sleeps for its input's seconds.
  const released: string[] = []
  const slow = defineOperation({
    key: "test.slow",
    tool: "slow",
    expose: { cli: false, mcp: true },
    title: "Sleep",
    description: "Sleeps.",
    kind: "command",
    input: Schema.Struct({ id: Schema.String, seconds: Schema.Number }),
    output: Schema.Struct({ slept: Schema.Number }),
    annotations: MUTATE,
    access: null,
    run: (input) =>
      Effect.acquireUseRelease(
        Effect.void,
        () => Effect.as(Effect.sleep(`${input.seconds} seconds`), { slept: input.seconds }),
        () => Effect.sync(() => released.push(input.id))
      )
  })
  const slowServer = async (budget: number) => {
    const fake = fakeMcp()
    const server = createServer({ ...fake.mcp, tools: buildRegistry([slow], {}, budget), callBudgetSeconds: budget })
    const { client } = testClient()
    const [serverSide, clientSide] = InMemoryTransport.createLinkedPair()
    await Promise.all([server.connect(serverSide), client.connect(clientSide)])
    return { client, close: async () => (await client.close(), await fake.runtime.dispose()) }
  }

  it("times the calls that may outrun it: commands and queries reaching a guest, not queries of stoat's records", () => {
    const registry = buildRegistry()
    const timed = (tool: string) => registry.get(tool)?.mayOutrunBudget
    expect([timed("list_vms"), timed("vm_status"), timed("list_snapshots")]).toEqual([false, false, false])
    expect([timed("exec"), timed("read_file"), timed("ps"), timed("apply_recipes"), timed("slow")]).toEqual([true, true, true, true, undefined])
    expect(buildRegistry([slow]).get("slow")?.mayOutrunBudget).toBe(true)
  })

  it("stops work that outlasts the budget and answers timeout, releasing what it held", async () => {
    const h = await slowServer(1)
    try {
      expect(errorOf(await h.client.callTool({ name: "slow", arguments: { id: "a", seconds: 30 } }))).toMatchObject({
        code: "timeout",
        subject: "slow",
        message: expect.stringContaining("slow did not finish within 1 s and was stopped")
      })
      expect(released).toContain("a")
      // With a progress token the same work runs past the budget to its end.
      expect(dataOf(await h.client.callTool({ name: "slow", arguments: { id: "b", seconds: 2 } }, undefined, { onprogress: () => undefined }))).toEqual({ slept: 2 })
    } finally {
      await h.close()
    }
  })
})
