import { mkdirSync, writeFileSync } from "node:fs"
import { homedir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { BIN, dataOf, errorOf, requireQemu, run, tempHome } from "../helpers.js"

const home = tempHome()
const env = {
  STOAT_HOME: home,
  STOAT_TINY_CACHE: process.env["STOAT_TINY_CACHE"] ?? join(homedir(), ".cache", "stoat-test", "tiny-image")
}

/**
 * Issue 26 item 1 on a real tiny guest: the SDK client's default request timeout is 60 s, so a
 * call without a progress token must answer with its own result before that. The server runs
 * with a 10 s budget (timeout_seconds capped at 5 s) so the test does not take 50 s; the client
 * keeps its default timeout.
 */
describe("calls answer before the client's timeout (stdio, real SDK client, tiny guest)", () => {
  let client: Client
  beforeAll(async () => {
    requireQemu()
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, "mcp", "--call-budget", "10"],
      env: { ...(process.env as Record<string, string>), ...env },
      stderr: "inherit"
    })
    client = new Client({ name: "stoat-e2e", version: "1.0.0" })
    await client.connect(transport)
    dataOf(await client.callTool({ name: "create", arguments: { name: "b1", image: "tiny", agent_access: "exec" } }))
    // A TCG boot may take longer than the budget: a progress token lets start run to its cap.
    const started = await client.callTool(
      { name: "start", arguments: { vm: "b1", wait: true, timeout_seconds: 300 } },
      undefined,
      {
        onprogress: () => undefined,
        resetTimeoutOnProgress: true
      }
    )
    expect(dataOf(started)).toMatchObject({ state: "running" })
  })
  afterAll(async () => {
    await client?.close()
    await run(["down", "b1"], env)
  })

  it("exec of sleep 70 without a progress token returns the partial output with timed_out=true", async () => {
    const result = dataOf(
      await client.callTool({ name: "exec", arguments: { vm: "b1", argv: ["sh", "-c", "echo started; sleep 70"] } })
    )
    expect(result).toMatchObject({ stdout: "started\n", timed_out: true })
    // The command is stopped (the guest's timeout gives it 2 s to go after TERM before KILL).
    let ps = ""
    for (let i = 0; i < 20; i++) {
      ps = dataOf(await client.callTool({ name: "exec", arguments: { vm: "b1", argv: ["ps"] } })).stdout as string
      if (!ps.includes("sleep 70")) break
      await new Promise((resolve) => setTimeout(resolve, 500))
    }
    expect(ps).not.toContain("sleep 70")
  })

  it("with a progress token exec runs past the budget to its own timeout", async () => {
    const progress: number[] = []
    const result = await client.callTool(
      { name: "exec", arguments: { vm: "b1", argv: ["sh", "-c", "sleep 12; echo done"], timeout_seconds: 60 } },
      undefined,
      {
        onprogress: (p) => progress.push(p.progress),
        resetTimeoutOnProgress: true
      }
    )
    expect(dataOf(result)).toMatchObject({ exit_code: 0, stdout: "done\n" })
    expect(dataOf(result)).not.toHaveProperty("timed_out")
    expect(progress.length).toBeGreaterThan(0)
  })

  it("wait without a progress token answers its own timeout and the VM keeps running", async () => {
    const refused = errorOf(
      await client.callTool({ name: "wait", arguments: { vm: "b1", until: "stopped", timeout_seconds: 600 } })
    )
    expect(refused).toMatchObject({ code: "timeout", message: 'VM "b1" still running after 5 s' })
    expect(dataOf(await client.callTool({ name: "vm_status", arguments: { vm: "b1" } }))).toMatchObject({
      state: "running"
    })
  })

  it("apply_recipes outlasting the budget goes on as a host job that job_wait follows to its result", async () => {
    // A local recipe that takes longer than the 10 s budget (the tiny guest has no package manager).
    mkdirSync(join(home, "recipes", "slowpoke"), { recursive: true })
    writeFileSync(join(home, "recipes", "slowpoke", "recipe.toml"), 'name = "slowpoke"\nscript = "run.sh"\n')
    writeFileSync(join(home, "recipes", "slowpoke", "run.sh"), "sleep 16\necho slept > /tmp/slowpoke.done\n")
    dataOf(await client.callTool({ name: "update", arguments: { vm: "b1", recipes: ["slowpoke"] } }))
    // The SDK client's own 60 s timeout would fail the call if the server did not answer first.
    const answer = errorOf(await client.callTool({ name: "apply_recipes", arguments: { vm: "b1" } }))
    expect(answer).toMatchObject({ code: "still_running", subject: expect.stringMatching(/^h-[0-9a-f]{8}$/) })
    const job = answer.subject as string
    let waited = dataOf(await client.callTool({ name: "job_wait", arguments: { vm: "b1", job_id: job } }))
    while (waited.state === "running")
      waited = dataOf(await client.callTool({ name: "job_wait", arguments: { vm: "b1", job_id: job } }))
    expect(waited).toMatchObject({ state: "exited", exit_code: 0, stderr_tail: "" })
    expect(JSON.parse(waited.stdout_tail)).toMatchObject({ vm: "b1", recipes_detail: [{ name: "slowpoke" }] })
    const done = dataOf(
      await client.callTool({ name: "exec", arguments: { vm: "b1", argv: ["cat", "/tmp/slowpoke.done"] } })
    )
    expect(done).toMatchObject({ exit_code: 0, stdout: "slept\n" })
  })
})
