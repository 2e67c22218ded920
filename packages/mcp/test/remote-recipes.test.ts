import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { commitFile, gitIn, makeIndexRepo, makeRecipeRepo } from "@stoat/core/testing"
import { dataOf, errorOf, inProcess, stdioClient, tempHome } from "./helpers.js"

/** The recipe tools in the server's working directory (a project): index names only, project scope. */
describe("remote recipe tools over MCP", () => {
  const base = mkdtempSync(join(tmpdir(), "stoat-mcp-remote-"))
  afterAll(() => rmSync(base, { recursive: true, force: true }))
  const hello = makeRecipeRepo(base, "hello")
  const index = makeIndexRepo(base, { hello })
  const project = join(base, "project")
  mkdirSync(project)
  writeFileSync(join(project, "stoat.toml"), 'schema = 1\n[project]\nname = "demo"\n')

  it("searches, adds by name into the server's project, re-pins and removes, answering the recipe catalog each time", async () => {
    const server = await inProcess({ index, projectDir: project })
    try {
      const found = dataOf(await server.client.callTool({ name: "search_recipes", arguments: { term: "hello" } }))
      expect(found).toEqual({ recipes: [{ name: "hello", source: hello, description: "hello for tests", os: [] }] })
      const added = dataOf(await server.client.callTool({ name: "add_recipe", arguments: { name: "hello@v1" } }))
      expect(added).toMatchObject({
        name: "hello",
        ref: "v1",
        commit: gitIn(hello, "rev-parse", "v1"),
        scope: "project"
      })
      expect(added.recipes.map((r: { name: string }) => r.name)).toContain("hello")
      expect(readFileSync(join(project, "stoat.toml"), "utf8")).toContain('[recipes]\nhello = "v1"')
      expect(readFileSync(join(project, "stoat.lock"), "utf8")).toContain("[recipes.hello]")

      const moved = commitFile(hello, "run.sh", "echo hello v2\n")
      gitIn(hello, "tag", "-f", "v1")
      const updated = dataOf(await server.client.callTool({ name: "update_recipe", arguments: { name: "hello" } }))
      expect(updated.updated).toEqual([{ name: "hello", source: hello, ref: "v1", commit: moved, scope: "project" }])

      expect(errorOf(await server.client.callTool({ name: "add_recipe", arguments: { name: "hello" } }))).toMatchObject(
        { code: "name_taken", subject: "hello" }
      )
      const removed = dataOf(await server.client.callTool({ name: "remove_recipe", arguments: { name: "hello" } }))
      expect(removed).toMatchObject({ name: "hello", scope: "project" })
      expect(removed.recipes.map((r: { name: string }) => r.name)).not.toContain("hello")
      expect(readFileSync(join(project, "stoat.lock"), "utf8")).not.toContain("hello")
    } finally {
      await server.close()
    }
  })

  it("tells a network failure (download_failed, worth a retry) from a source that does not exist (not_found)", async () => {
    // Port 1 on loopback: nothing listens, the connection is refused at once.
    const unreachable = await inProcess({ index: "http://127.0.0.1:1/index.git", projectDir: project })
    try {
      const error = errorOf(await unreachable.client.callTool({ name: "search_recipes", arguments: { refresh: true } }))
      expect(error).toMatchObject({ code: "download_failed", subject: "http://127.0.0.1:1/index.git" })
      expect(error.message).toMatch(/the network failed/)
    } finally {
      await unreachable.close()
    }
    const missing = await inProcess({ index: join(base, "no-such-index"), projectDir: project })
    try {
      expect(
        errorOf(await missing.client.callTool({ name: "search_recipes", arguments: { refresh: true } }))
      ).toMatchObject({ code: "not_found" })
    } finally {
      await missing.close()
    }
  })

  it("the real server's working directory is its project: add_recipe over stdio writes that folder's stoat.lock", async () => {
    const served = join(base, "served")
    mkdirSync(served)
    writeFileSync(join(served, "stoat.toml"), 'schema = 1\n[project]\nname = "served"\n')
    const client = await stdioClient(tempHome(), [], ["mcp"], { cwd: served, env: { STOAT_INDEX: index } })
    try {
      expect(dataOf(await client.callTool({ name: "add_recipe", arguments: { name: "hello" } }))).toMatchObject({
        name: "hello",
        scope: "project"
      })
      expect(readFileSync(join(served, "stoat.lock"), "utf8")).toContain("[recipes.hello]")
      expect(readFileSync(join(served, ".gitignore"), "utf8")).toBe(".stoat/\n")
    } finally {
      await client.close()
    }
  })
})
