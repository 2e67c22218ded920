import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { dataOf, errorOf, stdioClient, tempHome } from "./helpers.js"

/** The project tools over stdio: the built binary, a real SDK client, the server's working directory as the scope. */
describe("project tools use the server's working directory", () => {
  const home = tempHome()
  const bare = realpathSync(mkdtempSync(join(tmpdir(), "stoat-mcp-bare-")))
  const project = realpathSync(mkdtempSync(join(tmpdir(), "stoat-mcp-project-")))
  writeFileSync(
    join(project, "stoat.toml"),
    `schema = 1\n[project]\nname = "agents"\n[vms.dev]\nimage = "tiny"\n[vms.db]\nimage = "tiny"\nram = 512\n`
  )
  const clients: Client[] = []
  const client = async (cwd: string) => {
    const started = await stdioClient(home, [], ["mcp"], { cwd })
    clients.push(started)
    return started
  }
  afterAll(async () => {
    for (const started of clients) await started.close()
    for (const dir of [home, bare, project]) rmSync(dir, { recursive: true, force: true })
  })

  it("without a stoat.toml, every project tool fails not_found telling the caller to run stoat init", async () => {
    const server = await client(bare)
    for (const name of ["project_status", "project_up", "project_down", "project_apply", "project_wait"]) {
      const error = errorOf(await server.callTool({ name, arguments: {} }))
      expect(error.code, name).toBe("not_found")
      expect(error.message, name).toContain("stoat init")
      expect(error.message, name).toContain(bare)
      expect(error.message, name).toContain("name a VM")
    }
    const report = dataOf<{ host: { project_state: string } }>(
      await server.callTool({ name: "capabilities", arguments: {} })
    )
    expect(report.host.project_state).toBe("absent")
  })

  it("with one, project_status reports each declaration in order, and no tool argument can point elsewhere", async () => {
    const server = await client(project)
    const status = dataOf(await server.callTool({ name: "project_status", arguments: {} }))
    expect(status).toEqual({
      project: "agents",
      dir: project,
      vms: [
        { key: "dev", name: "agents-dev", state: "missing", health: "unknown", drift: [] },
        { key: "db", name: "agents-db", state: "missing", health: "unknown", drift: [] }
      ]
    })
    const elsewhere = errorOf(await server.callTool({ name: "project_status", arguments: { dir: bare } }))
    expect(elsewhere).toMatchObject({ code: "usage", message: expect.stringContaining("dir: unknown argument") })
    const report = dataOf<{ host: { project_state: string }; capabilities: Array<{ name: string; status: string }> }>(
      await server.callTool({ name: "capabilities", arguments: {} })
    )
    expect(report.host.project_state).toBe("available")
    expect(report.capabilities.find((c) => c.name === "project.operations")?.status).toBe("supported")
  })

  it("project_up refuses the CLI-only apply and force inputs", async () => {
    const server = await client(project)
    for (const field of ["apply", "force"]) {
      const error = errorOf(await server.callTool({ name: "project_up", arguments: { [field]: true } }))
      expect(error).toMatchObject({
        code: "usage",
        message: `invalid input for project_up: ${field}: unknown argument`
      })
    }
  })
})
