import { execFileSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { homedir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { BIN, dataOf, errorOf, run, tempHome } from "../helpers.js"

/** The e2e suites need QEMU; without it they fail loudly instead of skipping. */
const requireQemu = () => {
  try {
    execFileSync("qemu-system-x86_64", ["--version"], { stdio: "ignore" })
  } catch {
    throw new Error("qemu-system-x86_64 is not installed: the e2e suite boots real VMs (run scripts/setup.sh)")
  }
}

const home = tempHome()
// One tiny-guest build shared by every test data root.
const env = {
  STOAT_HOME: home,
  STOAT_TINY_CACHE: process.env["STOAT_TINY_CACHE"] ?? join(homedir(), ".cache", "stoat-test", "tiny-image")
}

/** Processes whose parent is `pid`, other than the VMs' own QEMU. */
const childrenOf = (pid: number): string[] => {
  try {
    return execFileSync("ps", ["-o", "pid=,comm=", "--ppid", String(pid)], { encoding: "utf8" })
      .split("\n")
      .map((line) => line.trim())
      .filter((line) => line !== "" && !/qemu-system/.test(line))
  } catch {
    return []
  }
}

const waitFor = async (check: () => boolean, what: string) => {
  for (let i = 0; i < 200; i++) {
    if (check()) return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`timed out waiting for ${what}`)
}

describe("the MCP server drives a real tiny guest (stdio, real SDK client)", () => {
  let client: Client
  let transport: StdioClientTransport
  beforeAll(async () => {
    requireQemu()
    transport = new StdioClientTransport({
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
    await run(["down", "m1"], env)
  })

  it("creates and starts a VM with progress notifications, then runs a guest command", async () => {
    const created = dataOf(
      await client.callTool({ name: "create", arguments: { name: "m1", image: "tiny", agent_access: "exec" } })
    )
    expect(created).toMatchObject({ name: "m1", state: "stopped", agent_access: "exec" })
    const progress: number[] = []
    const started = await client.callTool(
      { name: "start", arguments: { vm: "m1", wait: true, timeout_seconds: 300 } },
      undefined,
      {
        onprogress: (p) => progress.push(p.progress),
        timeout: 320_000
      }
    )
    expect(dataOf(started)).toMatchObject({ name: "m1", state: "running" })
    // A TCG boot takes more than one heartbeat interval: at least one notification came.
    expect(progress.length).toBeGreaterThan(0)
    const uname = dataOf(await client.callTool({ name: "exec", arguments: { vm: "m1", argv: ["uname", "-s"] } }))
    expect(uname).toMatchObject({ exit_code: 0, stdout: "Linux\n" })
  })

  it("cancelling a long wait interrupts it, leaves no process behind, and the server keeps serving", async () => {
    const pid = transport.pid!
    const before = childrenOf(pid)
    const controller = new AbortController()
    const call = client.callTool(
      { name: "wait", arguments: { vm: "m1", until: "stopped", timeout_seconds: 600 } },
      undefined,
      { signal: controller.signal, timeout: 620_000 }
    )
    setTimeout(() => controller.abort(), 1500)
    await expect(call).rejects.toThrow()
    const log = join(home, "logs", "stoat.log")
    await waitFor(
      () => /tool=wait entrypoint=mcp .*vm=m1 .*outcome=error:canceled/.test(readFileSync(log, "utf8")),
      "the canceled wait in stoat.log"
    )
    expect(childrenOf(pid)).toEqual(before)
    expect(dataOf(await client.callTool({ name: "vm_status", arguments: { vm: "m1" } }))).toMatchObject({
      state: "running"
    })
  })

  it("cancelling a long exec stops the guest command", async () => {
    const controller = new AbortController()
    const call = client.callTool(
      { name: "exec", arguments: { vm: "m1", argv: ["sleep", "417"], timeout_seconds: 600 } },
      undefined,
      { signal: controller.signal, timeout: 620_000 }
    )
    setTimeout(() => controller.abort(), 2000)
    await expect(call).rejects.toThrow()
    let ps = ""
    for (let i = 0; i < 20; i++) {
      ps = dataOf(await client.callTool({ name: "exec", arguments: { vm: "m1", argv: ["ps"] } })).stdout
      if (!ps.includes("sleep 417")) break
      await new Promise((resolve) => setTimeout(resolve, 500))
    }
    expect(ps).not.toContain("sleep 417")
  })

  it("lowering agent_access takes effect on the next call and cannot be undone over MCP", async () => {
    dataOf(await client.callTool({ name: "update", arguments: { vm: "m1", agent_access: "observe" } }))
    expect(errorOf(await client.callTool({ name: "exec", arguments: { vm: "m1", argv: ["true"] } }))).toEqual({
      code: "access_denied",
      message: 'vm "m1" has agent_access = observe; needs exec',
      subject: "m1"
    })
    expect(errorOf(await client.callTool({ name: "update", arguments: { vm: "m1", agent_access: "exec" } })).code).toBe(
      "access_denied"
    )
    // A person can raise it again.
    expect((await run(["update", "m1", "--agent-access", "exec"], env)).code).toBe(0)
    dataOf(await client.callTool({ name: "exec", arguments: { vm: "m1", argv: ["true"] } }))
  })

  it("stops the VM and destroys it only with the exact confirmation", async () => {
    dataOf(await client.callTool({ name: "stop", arguments: { vm: "m1" } }))
    expect(errorOf(await client.callTool({ name: "destroy", arguments: { vm: "m1", confirm: "m2" } })).code).toBe(
      "confirmation_required"
    )
    expect(dataOf(await client.callTool({ name: "destroy", arguments: { vm: "m1", confirm: "m1" } }))).toEqual({
      name: "m1",
      destroyed: true
    })
  })
})
