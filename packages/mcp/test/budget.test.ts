import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import { Effect, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { catalog, defineOperation, MUTATE } from "@stoat/core"
import { buildRegistry, createServer } from "../src/index.js"
import { dataOf, errorOf, fakeMcp, inProcess, testClient, unreachableVm } from "./helpers.js"

/** Calls without a progress token answer before the client's own 60 s request timeout (issue 26 item 1). */
describe("the call budget of a request without a progress token", () => {
  it("caps a wait's timeout_seconds so it answers with its own timeout, not the client's", async () => {
    const h = await inProcess({ callBudgetSeconds: 4 })
    try {
      await unreachableVm(h.client, h.guest, "slow")
      // Asked for 600 s; the budget of 4 s caps it at 2 s, and the answer is the wait's own.
      expect(
        errorOf(await h.client.callTool({ name: "wait", arguments: { vm: "slow", timeout_seconds: 600 } }))
      ).toMatchObject({
        code: "timeout",
        message: 'VM "slow" did not answer ssh within 2 s'
      })
      // The default (300 s) is capped the same way.
      expect(errorOf(await h.client.callTool({ name: "wait", arguments: { vm: "slow" } })).message).toBe(
        'VM "slow" did not answer ssh within 2 s'
      )
      // Below the cap, the caller's own timeout stands.
      expect(
        errorOf(await h.client.callTool({ name: "wait", arguments: { vm: "slow", timeout_seconds: 1 } })).message
      ).toBe('VM "slow" did not answer ssh within 1 s')
      // Input is still checked as given: the cap does not hide an invalid value.
      expect(
        errorOf(await h.client.callTool({ name: "wait", arguments: { vm: "slow", timeout_seconds: 601 } })).code
      ).toBe("usage")
    } finally {
      await h.close()
    }
  })

  it("lets a call with a progress token run to its own timeout, sending progress", async () => {
    const h = await inProcess({ callBudgetSeconds: 2, heartbeatMs: 100 })
    try {
      await unreachableVm(h.client, h.guest, "slow")
      const seen: number[] = []
      const result = await h.client.callTool(
        { name: "wait", arguments: { vm: "slow", timeout_seconds: 3 } },
        undefined,
        { onprogress: (p) => seen.push(p.progress) }
      )
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
      expect(byName["exec"]).toContain(
        "Without a progress token: answers within 30 s, timeout_seconds ≤ 25 (see guide)."
      )
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

  // Work no timeout_seconds bounds: operations that sleep for their input's seconds, one a
  // command on a VM, one a query.
  const released: string[] = []
  const sleeping = (input: { readonly id: string; readonly seconds: number }) =>
    Effect.acquireUseRelease(
      Effect.void,
      () => Effect.as(Effect.sleep(`${input.seconds} seconds`), { slept: input.seconds }),
      () => Effect.sync(() => released.push(input.id))
    )
  const slow = defineOperation({
    key: "test.slow",
    tool: "slow",
    expose: { cli: false, mcp: true },
    title: "Sleep",
    description: "Sleeps.",
    kind: "command",
    input: Schema.Struct({ vm: Schema.String, id: Schema.String, seconds: Schema.Number }),
    output: Schema.Struct({ slept: Schema.Number }),
    annotations: MUTATE,
    access: null,
    run: sleeping
  })
  const slowQuery = defineOperation({
    key: "test.slow_query",
    tool: "slow_query",
    expose: { cli: false, mcp: true },
    title: "Sleep",
    description: "Sleeps.",
    kind: "query",
    longRunning: true,
    input: Schema.Struct({ id: Schema.String, seconds: Schema.Number }),
    output: Schema.Struct({ slept: Schema.Number }),
    annotations: MUTATE,
    access: null,
    run: sleeping
  })
  const slowServer = async (budget: number) => {
    const fake = fakeMcp()
    const server = createServer({
      ...fake.mcp,
      tools: buildRegistry([...catalog, slow, slowQuery], {}, budget),
      callBudgetSeconds: budget
    })
    const { client } = testClient()
    const [serverSide, clientSide] = InMemoryTransport.createLinkedPair()
    await Promise.all([server.connect(serverSide), client.connect(clientSide)])
    return { client, close: async () => (await client.close(), await fake.runtime.dispose()) }
  }

  it("times the calls that may outrun it: commands and queries reaching a guest, not queries of stoat's records", () => {
    const registry = buildRegistry()
    const timed = (tool: string) => registry.get(tool)?.mayOutrunBudget
    expect([timed("list_vms"), timed("vm_status"), timed("list_snapshots")]).toEqual([false, false, false])
    expect([timed("exec"), timed("read_file"), timed("ps"), timed("apply_recipes"), timed("slow")]).toEqual([
      true,
      true,
      true,
      true,
      undefined
    ])
    expect(buildRegistry([slow]).get("slow")?.mayOutrunBudget).toBe(true)
  })

  it("stops a query that outlasts the budget and answers timeout, releasing what it held", async () => {
    const h = await slowServer(1)
    try {
      expect(
        errorOf(await h.client.callTool({ name: "slow_query", arguments: { id: "a", seconds: 30 } }))
      ).toMatchObject({
        code: "timeout",
        subject: "slow_query",
        message: expect.stringContaining("slow_query did not finish within 1 s and was stopped")
      })
      expect(released).toContain("a")
      // With a progress token the same work runs past the budget to its end.
      expect(
        dataOf(
          await h.client.callTool({ name: "slow_query", arguments: { id: "b", seconds: 2 } }, undefined, {
            onprogress: () => undefined
          })
        )
      ).toEqual({ slept: 2 })
    } finally {
      await h.close()
    }
  })

  it("lets a command that outlasts the budget go on as a host job that the job tools read", async () => {
    const h = await slowServer(2)
    try {
      await h.client.callTool({ name: "create", arguments: { name: "box", image: "tiny", agent_access: "exec" } })
      const answer = errorOf(await h.client.callTool({ name: "slow", arguments: { vm: "box", id: "c", seconds: 3 } }))
      expect(answer).toMatchObject({ code: "still_running", subject: expect.stringMatching(/^h-[0-9a-f]{8}$/) })
      const job = answer.subject as string
      expect(answer.message).toContain(`job_wait with vm="box" job_id="${job}"`)
      expect(released).not.toContain("c")
      expect(dataOf(await h.client.callTool({ name: "job_status", arguments: { vm: "box", job_id: job } }))).toEqual({
        job_id: job,
        state: "running"
      })
      expect(dataOf(await h.client.callTool({ name: "list_jobs", arguments: { vm: "box" } }))).toMatchObject({
        jobs: [{ job_id: job, argv: ["slow"], state: "running" }]
      })
      // Under the budget job_wait waits at most 1 s a call: poll it, as an agent would.
      let waited = dataOf(await h.client.callTool({ name: "job_wait", arguments: { vm: "box", job_id: job } }))
      while (waited.state === "running")
        waited = dataOf(await h.client.callTool({ name: "job_wait", arguments: { vm: "box", job_id: job } }))
      expect(waited).toEqual({
        job_id: job,
        state: "exited",
        exit_code: 0,
        stdout_tail: '{"slept":3}\n',
        stderr_tail: ""
      })
      expect(released).toContain("c")
      expect(
        dataOf(await h.client.callTool({ name: "job_output", arguments: { vm: "box", job_id: job } }))
      ).toMatchObject({ content: '{"slept":3}\n', truncated: false })
      // A job is found only through the VMs its call named.
      await h.client.callTool({ name: "create", arguments: { name: "other", image: "tiny", agent_access: "exec" } })
      expect(
        errorOf(await h.client.callTool({ name: "job_status", arguments: { vm: "other", job_id: job } })).code
      ).toBe("not_found")

      // job_kill interrupts a host job: its work releases what it held, and it reads as killed.
      const second = errorOf(await h.client.callTool({ name: "slow", arguments: { vm: "box", id: "d", seconds: 60 } }))
        .subject as string
      expect(dataOf(await h.client.callTool({ name: "job_kill", arguments: { vm: "box", job_id: second } }))).toEqual({
        job_id: second,
        state: "exited",
        exit_code: 143,
        signaled: true
      })
      expect(released).toContain("d")
      expect(
        dataOf(await h.client.callTool({ name: "job_kill", arguments: { vm: "box", job_id: second } }))
      ).toMatchObject({ signaled: false })
    } finally {
      await h.close()
    }
  })

  it("interrupts host jobs still running when the server's runtime is released", async () => {
    const h = await slowServer(1)
    await h.client.callTool({ name: "create", arguments: { name: "box", image: "tiny" } })
    expect(
      errorOf(await h.client.callTool({ name: "slow", arguments: { vm: "box", id: "e", seconds: 600 } })).code
    ).toBe("still_running")
    await h.close()
    expect(released).toContain("e")
  })
})
