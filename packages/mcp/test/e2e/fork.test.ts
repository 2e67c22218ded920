import { existsSync } from "node:fs"
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

describe("checkpoint and fork over MCP (stdio, real SDK client, real tiny guest)", () => {
  let client: Client
  const call = async (name: string, args: Record<string, unknown>) =>
    client.callTool({ name, arguments: args }, undefined, { timeout: 320_000 })
  const sh = async (vm: string, script: string) =>
    dataOf<{ stdout: string; exit_code: number }>(await call("exec", { vm, argv: ["sh", "-c", script] }))

  beforeAll(async () => {
    requireQemu()
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, "mcp"],
      env: { ...(process.env as Record<string, string>), ...env },
      stderr: "inherit"
    })
    client = new Client({ name: "stoat-e2e-fork", version: "1.0.0" })
    await client.connect(transport)
    dataOf(await call("create", { name: "base", image: "tiny", agent_access: "exec" }))
    dataOf(await call("start", { vm: "base", wait: true, timeout_seconds: 300 }))
  })
  afterAll(async () => {
    for (const vm of ["base", "agent-1", "agent-2"]) await run(["down", vm], env)
    await client?.close()
  })

  it("lists the four tools with their classes", async () => {
    const { tools } = await client.listTools()
    const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool]))
    expect(byName["checkpoint"]?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false })
    expect(byName["list_checkpoints"]?.annotations).toMatchObject({ readOnlyHint: true })
    expect(byName["delete_checkpoint"]?.annotations).toMatchObject({ destructiveHint: true })
    expect(Object.keys(byName["delete_checkpoint"]?.inputSchema.properties ?? {})).toContain("confirm")
    expect(byName["fork"]?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false })
  })

  it("checkpoints, lists, forks two warm VMs that each answer a guest command, and deletes the checkpoint with confirmation", async () => {
    await sh("base", "echo prepared > /data/state; sync")
    const taken = dataOf(await call("checkpoint", { vm: "base", name: "prepared" }))
    expect(taken.checkpoint).toMatchObject({ vm: "base", name: "prepared", usable: true })
    expect(
      dataOf(await call("list_checkpoints", { vm: "base" })).checkpoints.map(
        (checkpoint: { name: string }) => checkpoint.name
      )
    ).toEqual(["prepared"])
    const forked = dataOf(await call("fork", { vm: "base", checkpoint: "prepared", name: "agent", count: 2 }))
    expect(forked.forks.map((fork: { vm: { name: string; state: string } }) => [fork.vm.name, fork.vm.state])).toEqual([
      ["agent-1", "running"],
      ["agent-2", "running"]
    ])
    for (const vm of ["agent-1", "agent-2"])
      expect((await sh(vm, "cat /data/state; hostname")).stdout).toBe(`prepared\n${vm}\n`)
    expect(dataOf(await call("list_checkpoints", {})).checkpoints[0].dependents).toEqual(["agent-1", "agent-2"])
    expect(errorOf(await call("delete_checkpoint", { vm: "base", name: "prepared", confirm: "base" })).code).toBe(
      "confirmation_required"
    )
    expect(dataOf(await call("delete_checkpoint", { vm: "base", name: "prepared", confirm: "base@prepared" }))).toEqual(
      { vm: "base", name: "prepared", deleted: true }
    )
    expect(existsSync(join(home, "base", "checkpoints", "prepared"))).toBe(false)
    // The forks run on: deleting a checkpoint leaves the disk they are built on.
    expect((await sh("agent-2", "cat /data/state")).stdout).toBe("prepared\n")
  })

  it("answers typed errors for bad input and for what cannot be done", async () => {
    expect(errorOf(await call("checkpoint", { vm: "base", name: "--help" })).code).toBe("usage")
    expect(errorOf(await call("fork", { vm: "base", checkpoint: "prepared", name: "x" })).code).toBe("not_found")
    expect(errorOf(await call("fork", { vm: "base", checkpoint: "prepared", name: "x", count: 99 })).code).toBe("usage")
    dataOf(await call("stop", { vm: "agent-1" }))
    expect(errorOf(await call("checkpoint", { vm: "agent-1", name: "c" })).code).toBe("not_running")
    dataOf(await call("stop", { vm: "base" }))
    const asked = errorOf(await call("destroy", { vm: "base", confirm: "base" }))
    expect(asked.code).toBe("confirmation_required")
    expect(asked.message).toContain("agent-1")
  })
})
