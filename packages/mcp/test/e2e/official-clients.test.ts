import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BIN, startHttp, type HttpServerProcess, tempHome, writeVm } from "../helpers.js"

const run = promisify(execFile)
const INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
const CONFORMANCE_SCRIPT = fileURLToPath(new URL("../../scripts/conformance.sh", import.meta.url))

/** The Inspector CLI (the official client), as toolchain.md §8 runs it; resolves its JSON answer. */
const inspect = async (target: ReadonlyArray<string>, args: ReadonlyArray<string>, env: Record<string, string>) => {
  const { stdout } = await run("npx", ["-y", INSPECTOR, "--cli", ...target, ...args], {
    env: { ...(process.env as Record<string, string>), ...env },
    maxBuffer: 16 * 1024 * 1024,
    timeout: 240_000
  })
  return JSON.parse(stdout) as Record<string, unknown>
}

describe("the official MCP clients against the built server", () => {
  const home = tempHome()
  const env = { STOAT_HOME: home }
  let http: HttpServerProcess
  beforeAll(async () => {
    writeVm(home, "obs", "observe")
    http = await startHttp(home, ["--http", "127.0.0.1:0"])
  })
  afterAll(async () => http?.stop())

  it("Inspector CLI over stdio: tools/list portable under --strict, tools/call list_vms answers the VM", async () => {
    const stdio = ["-e", `STOAT_HOME=${home}`, process.execPath, BIN, "mcp"]
    const listed = await inspect(stdio, ["--method", "tools/list", "--strict"], env)
    const names = (listed["tools"] as Array<{ name: string }>).map((tool) => tool.name)
    expect(names).toContain("list_vms")
    expect(names).toContain("exec")
    const called = await inspect(stdio, ["--method", "tools/call", "--tool-name", "list_vms"], env)
    expect(called["isError"]).not.toBe(true)
    expect(JSON.stringify(called["structuredContent"])).toContain('"obs"')
  })

  it("Inspector CLI over Streamable HTTP: a failing call exits 5 with the seed envelope", async () => {
    const target = [http.url, "--transport", "http"]
    const called = await inspect(
      target,
      ["--method", "tools/call", "--tool-name", "vm_status", "--tool-arg", "vm=obs"],
      env
    )
    expect(JSON.stringify(called["structuredContent"])).toContain('"obs"')
    const failed = await inspect(
      target,
      ["--method", "tools/call", "--tool-name", "vm_status", "--tool-arg", "vm=nope"],
      env
    ).then(
      () => undefined,
      (error: { code?: number; stdout?: string }) => error
    )
    expect(failed?.code).toBe(5)
    const content = (JSON.parse(failed?.stdout ?? "{}") as { content?: Array<{ text: string }> }).content ?? []
    expect(content[0]?.text).toBe('no VM "nope"; see list_vms')
    expect(JSON.parse(content[1]?.text ?? "{}")).toMatchObject({ error: { code: "not_found", subject: "nope" } })
  })

  it("the conformance suite passes every generic scenario (only the fixture-only ones of the baseline fail)", async () => {
    const { stdout } = await run("sh", [CONFORMANCE_SCRIPT], { timeout: 280_000, maxBuffer: 16 * 1024 * 1024 })
    for (const scenario of ["server-initialize", "ping", "tools-list", "dns-rebinding-protection"])
      expect(stdout).toMatch(new RegExp(`${scenario}`))
  })
})
