/**
 * Guest commands through the real MCP server (stdio, real SDK client) on a real tiny guest while
 * two other processes keep both host cores busy: every exit status exact, and a timed-out or
 * cancelled command leaves none of its processes behind in the guest.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process"
import { homedir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { dataOf, run, stdioClient, tempHome } from "../helpers.js"

const requireQemu = () => {
  try {
    execFileSync("qemu-system-x86_64", ["--version"], { stdio: "ignore" })
  } catch {
    throw new Error("qemu-system-x86_64 is not installed: the e2e suite boots real VMs (run scripts/setup.sh)")
  }
}

const home = tempHome()
const env = {
  STOAT_HOME: home,
  STOAT_TINY_CACHE: process.env["STOAT_TINY_CACHE"] ?? join(homedir(), ".cache", "stoat-test", "tiny-image")
}
const VM = "load1"

interface ExecData {
  readonly exit_code: number
  readonly stdout: string
  readonly stderr: string
  readonly timed_out?: boolean
}

/** The commands of the load test and what each must answer. */
const CASES: ReadonlyArray<{ readonly argv: ReadonlyArray<string>; readonly expected: ExecData }> = [
  { argv: ["sh", "-c", "echo ok"], expected: { exit_code: 0, stdout: "ok\n", stderr: "" } },
  { argv: ["sh", "-c", "echo no >&2; exit 1"], expected: { exit_code: 1, stdout: "", stderr: "no\n" } },
  {
    argv: ["sh", "-c", "echo seven; echo 7 >&2; exit 7"],
    expected: { exit_code: 7, stdout: "seven\n", stderr: "7\n" }
  },
  { argv: ["nosuchcmd"], expected: { exit_code: 127, stdout: "", stderr: "command not found: nosuchcmd\n" } }
]
const CALLS = 500
const CONCURRENCY = 8

describe("guest commands with both host cores busy (stdio MCP server, real tiny guest)", () => {
  let client: Client
  const burners: Array<ChildProcess> = []
  const exec = async (argv: ReadonlyArray<string>, extra: Record<string, unknown> = {}): Promise<ExecData> =>
    dataOf(
      await client.callTool({ name: "exec", arguments: { vm: VM, argv, ...extra } }, undefined, { timeout: 120_000 })
    ) as ExecData
  const guestPs = async () => (await exec(["ps"])).stdout

  beforeAll(async () => {
    requireQemu()
    // Rate limits off: this suite is about exactness, not about the limiter.
    client = await stdioClient(home, ["--tool-burst", "100000", "--burst", "100000"], ["mcp", "serve"], { env })
    dataOf(await client.callTool({ name: "create", arguments: { name: VM, image: "tiny", agent_access: "exec" } }))
    dataOf(
      await client.callTool({ name: "start", arguments: { vm: VM, wait: true, timeout_seconds: 300 } }, undefined, {
        timeout: 320_000
      })
    )
    for (let core = 0; core < 2; core++)
      burners.push(spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" }))
  })
  afterAll(async () => {
    for (const burner of burners) burner.kill("SIGKILL")
    await client?.close()
    await run(["down", VM], env)
  })

  it(`${CALLS} execs, ${CONCURRENCY} at a time: every exit code, stdout and stderr exact`, {
    timeout: 1_200_000
  }, async () => {
    const wrong: Array<string> = []
    let next = 0
    const worker = async () => {
      while (next < CALLS) {
        const call = next++
        const { argv, expected } = CASES[call % CASES.length]!
        try {
          const got = await exec(argv)
          const seen = { exit_code: got.exit_code, stdout: got.stdout, stderr: got.stderr }
          if (JSON.stringify(seen) !== JSON.stringify(expected))
            wrong.push(`#${call} ${argv.join(" ")}: ${JSON.stringify(seen)}`)
        } catch (error) {
          wrong.push(`#${call} ${argv.join(" ")}: ${error instanceof Error ? error.message : String(error)}`)
        }
      }
    }
    await Promise.all(Array.from({ length: CONCURRENCY }, worker))
    expect(wrong).toEqual([])
  })

  it("a timed-out exec leaves none of its processes: the background child is gone too", async () => {
    const out = await exec(["sh", "-c", "sleep 301 & sleep 301"], { timeout_seconds: 2 })
    // The wrapper, TERMed at the deadline, ended the command's group and then itself.
    expect(out).toMatchObject({ timed_out: true, exit_code: 143 })
    // The whole group is ended before the command's channel closes: nothing to wait for.
    expect(await guestPs()).not.toContain("sleep 301")
  })

  it("a cancelled exec leaves none of its processes: the background child is gone too", async () => {
    const controller = new AbortController()
    const call = client.callTool(
      { name: "exec", arguments: { vm: VM, argv: ["sh", "-c", "sleep 302 & sleep 302"], timeout_seconds: 600 } },
      undefined,
      {
        signal: controller.signal,
        timeout: 620_000
      }
    )
    // Cancel once the command runs in the guest.
    for (let i = 0; i < 200 && !(await guestPs()).includes("sleep 302"); i++)
      await new Promise((resolve) => setTimeout(resolve, 250))
    controller.abort()
    await expect(call).rejects.toThrow()
    // The cancel reaches the guest after the client gave up on the call: wait for it to land.
    let ps = await guestPs()
    for (let i = 0; i < 60 && ps.includes("sleep 302"); i++) {
      await new Promise((resolve) => setTimeout(resolve, 500))
      ps = await guestPs()
    }
    expect(ps).not.toContain("sleep 302")
  })
})
