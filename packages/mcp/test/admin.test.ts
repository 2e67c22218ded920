import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parse as parseJsonc } from "jsonc-parser"
import { describe, expect, it } from "vitest"
import { BIN, tempHome } from "./helpers.js"

const place = () => {
  const home = mkdtempSync(join(tmpdir(), "stoat-home-"))
  const project = join(home, "project")
  mkdirSync(project)
  return { home, project, env: { HOME: home, STOAT_HOME: tempHome() } }
}
/** Runs `stoat` in a directory (spawned with that cwd). */
const stoatAt = async (cwd: string, args: string[], env: Record<string, string>) => {
  const { spawn } = await import("node:child_process")
  return new Promise<{ code: number | null; stdout: string; stderr: string; data: any }>((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd,
      env: { ...process.env, NO_COLOR: "1", ...env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()))
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()))
    child.on("error", reject)
    child.on("close", (code) => {
      const last = stdout.trim().split("\n").at(-1) ?? ""
      let data: any
      try {
        data = JSON.parse(last)
      } catch {
        data = undefined
      }
      resolve({ code, stdout, stderr, data })
    })
  })
}

const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = createServer()
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number }
      probe.close(() => resolve(port))
    })
  })

describe("stoat mcp install (seed 000 'Install a client entry')", () => {
  it("prints the entry with --print: the absolute executable, args [mcp], the working directory", async () => {
    const { project, env } = place()
    const result = await stoatAt(project, ["mcp", "install", "claude-code", "--print"], env)
    expect(result.code).toBe(0)
    expect(JSON.parse(result.stdout)).toEqual({ command: BIN, args: ["mcp"], cwd: project })
  })

  it("writes claude-code's user entry, keeping the file's other entries and keys", async () => {
    const { home, project, env } = place()
    writeFileSync(
      join(home, ".claude.json"),
      JSON.stringify({ theme: "dark", mcpServers: { other: { command: "x" }, stoat: { command: "/old/stoat" } } })
    )
    const result = await stoatAt(project, ["--json", "mcp", "install", "claude-code"], env)
    expect(result.data).toMatchObject({
      ok: true,
      cmd: "mcp",
      data: { client: "claude-code", path: join(home, ".claude.json") }
    })
    const config = JSON.parse(readFileSync(join(home, ".claude.json"), "utf8"))
    expect(config).toEqual({
      theme: "dark",
      mcpServers: { other: { command: "x" }, stoat: { command: BIN, args: ["mcp"], cwd: project } }
    })
  })

  it("writes project entries for claude-code (.mcp.json) and vscode (.vscode/mcp.json, key servers)", async () => {
    const { project, env } = place()
    expect((await stoatAt(project, ["mcp", "install", "claude-code", "--project"], env)).code).toBe(0)
    expect(JSON.parse(readFileSync(join(project, ".mcp.json"), "utf8")).mcpServers.stoat).toEqual({
      command: BIN,
      args: ["mcp"],
      cwd: project
    })
    expect((await stoatAt(project, ["mcp", "install", "vscode", "--project"], env)).code).toBe(0)
    expect(JSON.parse(readFileSync(join(project, ".vscode", "mcp.json"), "utf8")).servers.stoat).toEqual({
      type: "stdio",
      command: BIN,
      args: ["mcp"],
      cwd: project
    })
  })

  it("refuses --project for claude-desktop and cursor, and a config that is not JSON", async () => {
    const { home, project, env } = place()
    for (const client of ["claude-desktop", "cursor"]) {
      const result = await stoatAt(project, ["mcp", "install", client, "--project"], env)
      expect(result.code).toBe(2)
      expect(result.stderr).toMatch(/has no project entry/)
    }
    mkdirSync(join(home, ".cursor"))
    writeFileSync(join(home, ".cursor", "mcp.json"), "{not json")
    const broken = await stoatAt(project, ["mcp", "install", "cursor"], env)
    expect(broken.code).toBe(1)
    expect(readFileSync(join(home, ".cursor", "mcp.json"), "utf8")).toBe("{not json")
  })
})

describe("VS Code's JSONC mcp.json: install and uninstall keep the file's comments", () => {
  const JSONC = [
    "{",
    "  // servers for this workspace",
    '  "servers": {',
    "    /* the docs server */",
    '    "docs": { "type": "http", "url": "http://localhost:9000/mcp", },',
    "  },",
    '  "inputs": [],',
    "}",
    ""
  ].join("\n")

  it("adds the stoat entry to a file with comments and trailing commas, then removes it alone", async () => {
    const { project, env } = place()
    const file = join(project, ".vscode", "mcp.json")
    mkdirSync(join(project, ".vscode"))
    writeFileSync(file, JSONC)
    const installed = await stoatAt(project, ["mcp", "install", "vscode", "--project"], env)
    expect(installed.code).toBe(0)
    const written = readFileSync(file, "utf8")
    expect(written).toContain("// servers for this workspace")
    expect(written).toContain("/* the docs server */")
    // The other entry's line is left as it was.
    expect(written).toContain('    "docs": { "type": "http", "url": "http://localhost:9000/mcp", },')
    expect(parseJsonc(written, [], { allowTrailingComma: true })).toEqual({
      servers: {
        docs: { type: "http", url: "http://localhost:9000/mcp" },
        stoat: { type: "stdio", command: BIN, args: ["mcp"], cwd: project }
      },
      inputs: []
    })
    // doctor reads the JSONC file too.
    const doctor = await stoatAt(project, ["--json", "mcp", "doctor"], env)
    expect(doctor.code).toBe(0)
    expect(doctor.data.data.clients.find((c: { client: string }) => c.client === "vscode")).toMatchObject({
      installed: true,
      current: true,
      path: file
    })

    const removed = await stoatAt(project, ["--json", "mcp", "uninstall", "vscode", "--project"], env)
    expect(removed.data).toMatchObject({ ok: true, data: { client: "vscode", path: file, removed: true } })
    const after = readFileSync(file, "utf8")
    expect(after).toBe(JSONC)
    expect(parseJsonc(after, [], { allowTrailingComma: true })).toEqual({
      servers: { docs: { type: "http", url: "http://localhost:9000/mcp" } },
      inputs: []
    })
    // Nothing left to remove: nothing is written.
    expect((await stoatAt(project, ["--json", "mcp", "uninstall", "vscode", "--project"], env)).data).toMatchObject({
      ok: true,
      data: { removed: false }
    })
    expect(readFileSync(file, "utf8")).toBe(after)
  })

  it("uninstall of claude-code keeps the other entries and keys; a broken file is refused and left alone", async () => {
    const { home, project, env } = place()
    writeFileSync(
      join(home, ".claude.json"),
      JSON.stringify({ theme: "dark", mcpServers: { other: { command: "x" }, stoat: { command: "/old/stoat" } } })
    )
    expect((await stoatAt(project, ["mcp", "uninstall", "claude-code"], env)).code).toBe(0)
    expect(JSON.parse(readFileSync(join(home, ".claude.json"), "utf8"))).toEqual({
      theme: "dark",
      mcpServers: { other: { command: "x" } }
    })
    mkdirSync(join(home, ".cursor"))
    writeFileSync(join(home, ".cursor", "mcp.json"), "{not json")
    const broken = await stoatAt(project, ["mcp", "uninstall", "cursor"], env)
    expect(broken.code).toBe(1)
    expect(readFileSync(join(home, ".cursor", "mcp.json"), "utf8")).toBe("{not json")
  })
})

describe("stoat mcp doctor", () => {
  it("exits 0 when every installed entry launches this executable", async () => {
    const { project, env } = place()
    await stoatAt(project, ["mcp", "install", "claude-code"], env)
    const result = await stoatAt(project, ["mcp", "doctor"], env)
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/claude-code\s+ok/)
  })

  it("reports the contract, this executable, and marks an entry for another executable stale (exit 1)", async () => {
    const { home, project, env } = place()
    await stoatAt(project, ["mcp", "install", "claude-code"], env)
    mkdirSync(join(home, ".cursor"))
    writeFileSync(
      join(home, ".cursor", "mcp.json"),
      JSON.stringify({ mcpServers: { stoat: { command: "/elsewhere/stoat", args: ["mcp"] } } })
    )
    const result = await stoatAt(project, ["--json", "mcp", "doctor"], env)
    expect(result.data.data).toMatchObject({ contract: 3, transport: "stdio", binary: BIN })
    const clients = Object.fromEntries(result.data.data.clients.map((c: { client: string }) => [c.client, c]))
    expect(clients["claude-code"]).toMatchObject({ installed: true, current: true, command: BIN })
    expect(clients["cursor"]).toMatchObject({ installed: true, current: false, command: "/elsewhere/stoat" })
    expect(clients["vscode"]).toMatchObject({ installed: false, current: false })
    expect(result.code).toBe(1)
    const human = await stoatAt(project, ["mcp", "doctor"], env)
    expect(human.code).toBe(1)
    expect(human.stdout).toMatch(/cursor\s+stale: launches \/elsewhere\/stoat/)
  })
})

describe("stoat mcp up / status / down (background servers)", () => {
  it("starts one server per directory, lists it, refuses a second, stops it, and fails at the prompt on a bound port", async () => {
    const { project, env } = place()
    const port = await freePort()
    const addr = `127.0.0.1:${port}`
    const up = await stoatAt(project, ["--json", "mcp", "up", "--http", addr], env)
    expect(up.data, up.stderr).toMatchObject({ ok: true, data: { dir: project, addr } })
    const pid = up.data.data.pid as number
    try {
      const listed = await stoatAt(project, ["--json", "mcp", "status"], env)
      expect(listed.data.data.servers).toEqual([expect.objectContaining({ dir: project, addr, pid })])
      const again = await stoatAt(project, ["--json", "mcp", "up", "--http", `127.0.0.1:${await freePort()}`], env)
      expect(again.data).toMatchObject({ ok: false, error: { message: expect.stringMatching(/already running/) } })
      // Another directory on the same (bound) port fails before anything is recorded.
      const other = join(project, "..", "other")
      mkdirSync(other)
      const bound = await stoatAt(other, ["--json", "mcp", "up", "--http", addr], env)
      expect(bound.data).toMatchObject({ ok: false, error: { message: expect.stringMatching(/cannot listen/) } })
      const refused = await stoatAt(other, ["--json", "mcp", "up", "--http", "0.0.0.0:7777"], env)
      expect(refused.data).toMatchObject({ ok: false, error: { code: "usage" } })
    } finally {
      const down = await stoatAt(project, ["--json", "mcp", "down"], env)
      expect(down.data).toMatchObject({ ok: true, data: { pid } })
    }
    expect(() => process.kill(pid, 0)).toThrow()
    expect((await stoatAt(project, ["--json", "mcp", "status"], env)).data.data.servers).toEqual([])
    expect((await stoatAt(project, ["--json", "mcp", "down"], env)).data).toMatchObject({ ok: false })
  })
})
