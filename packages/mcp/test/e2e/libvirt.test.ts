import { execFileSync } from "node:child_process"
import { homedir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { BIN, dataOf, requireQemu, run, tempHome } from "../helpers.js"

/** A working libvirtd is required: without one the suite fails with what to install, never skips. */
const requireLibvirt = () => {
  requireQemu()
  try {
    execFileSync("virsh", ["-c", "qemu:///system", "list"], { stdio: "pipe" })
  } catch (error) {
    throw new Error(
      `libvirt is required by this suite and virsh -c qemu:///system list failed (${String((error as { stderr?: Buffer }).stderr ?? error).trim()}): apt-get install libvirt-daemon-system libvirt-clients and start libvirtd (scripts/setup.sh does both)`
    )
  }
}

const home = tempHome()
const env = {
  STOAT_HOME: home,
  STOAT_TINY_CACHE: process.env["STOAT_TINY_CACHE"] ?? join(homedir(), ".cache", "stoat-test", "tiny-image")
}

/** A person puts the VM on libvirt; the agent then drives it by name with the tools it always has. */
describe("the MCP server drives a libvirt VM (stdio, real SDK client)", () => {
  let client: Client
  beforeAll(async () => {
    requireLibvirt()
    expect(
      (await run(["create", "mlv", "--image", "tiny", "--provider", "libvirt", "--agent-access", "exec"], env)).code
    ).toBe(0)
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, "mcp"],
      env: { ...(process.env as Record<string, string>), ...env },
      stderr: "inherit"
    })
    client = new Client({ name: "stoat-e2e", version: "1.0.0" })
    await client.connect(transport)
  })
  afterAll(async () => {
    await client?.close()
    await run(["down", "mlv"], env)
    await run(["down", "mlvf"], env)
  })

  it("starts it, runs a guest command, snapshots it and stops it; the create tool offers no provider or host", async () => {
    const tools = (await client.listTools()).tools
    const create = tools.find((tool) => tool.name === "create")!
    expect(Object.keys(create.inputSchema.properties ?? {})).not.toEqual(expect.arrayContaining(["provider"]))
    expect(Object.keys(create.inputSchema.properties ?? {})).not.toEqual(expect.arrayContaining(["host"]))
    const started = dataOf(
      await client.callTool({ name: "start", arguments: { vm: "mlv", wait: true, timeout_seconds: 300 } }, undefined, {
        timeout: 320_000
      })
    )
    expect(started).toMatchObject({ name: "mlv", state: "running", provider: "libvirt" })
    expect(
      dataOf(await client.callTool({ name: "exec", arguments: { vm: "mlv", argv: ["uname", "-s"] } }))
    ).toMatchObject({ exit_code: 0, stdout: "Linux\n" })
    dataOf(await client.callTool({ name: "snapshot", arguments: { vm: "mlv", tag: "agent1" } }))
    dataOf(await client.callTool({ name: "checkpoint", arguments: { vm: "mlv", name: "c1" } }))
    const forked = dataOf(
      await client.callTool({ name: "fork", arguments: { vm: "mlv", checkpoint: "c1", name: "mlvf" } }, undefined, {
        timeout: 320_000
      })
    )
    expect(forked.forks).toEqual([expect.objectContaining({ vm: expect.objectContaining({ name: "mlvf" }) })])
    expect(
      dataOf(await client.callTool({ name: "exec", arguments: { vm: "mlvf", argv: ["hostname"] } }))
    ).toMatchObject({ exit_code: 0, stdout: "mlvf\n" })
    dataOf(await client.callTool({ name: "stop", arguments: { vm: "mlvf" } }))
    expect(dataOf(await client.callTool({ name: "stop", arguments: { vm: "mlv" } }))).toMatchObject({
      name: "mlv",
      state: "stopped"
    })
  })
})
