import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { gitIn, makeIndexRepo, makeRecipeRepo } from "@stoat/core/testing"
import { homeWith, result, stoat } from "./helpers.js"

/** A data root, a project folder with a stoat.toml, and a local git index listing one recipe. */
const setup = () => {
  const base = mkdtempSync(join(tmpdir(), "stoat-cli-remote-"))
  const hello = makeRecipeRepo(base, "hello")
  const index = makeIndexRepo(base, { hello })
  const project = join(base, "project")
  mkdirSync(project)
  writeFileSync(join(project, "stoat.toml"), 'schema = 1\n[project]\nname = "demo"\n')
  const env = { STOAT_HOME: homeWith({}), STOAT_INDEX: index }
  const json = async (cwd: string, ...args: string[]) => {
    const out = await stoat(["--json", ...args], env, "", cwd)
    return { code: out.code, envelope: result(out.stdout) }
  }
  return { base, hello, index, project, env, json }
}

describe("remote recipe commands", () => {
  it("recipe add <URL> previews only on a terminal: without one it needs -y and writes nothing; with -y it adds", async () => {
    const w = setup()
    const refused = await w.json(w.project, "recipe", "add", w.hello)
    expect(refused.code).toBe(1)
    expect(refused.envelope["error"]).toMatchObject({ code: "confirmation_required", subject: w.hello })
    expect(existsSync(join(w.project, "stoat.lock"))).toBe(false)
    const human = await stoat(["recipe", "add", `${w.hello}@v1`, "-y"], w.env, "", w.project)
    expect(human.code).toBe(0)
    expect(human.stdout).toBe(`added hello ${gitIn(w.hello, "rev-parse", "v1").slice(0, 7)} (v1, project)\n`)
    expect(readFileSync(join(w.project, "stoat.toml"), "utf8")).toContain(
      `hello = { source = ${JSON.stringify(w.hello)}, ref = "v1" }`
    )
  })

  it("outside a project (or with --global) recipes are global; recipe list shows SCOPE and COMMIT", async () => {
    const w = setup()
    const outside = w.base
    const added = await w.json(outside, "recipe", "add", "hello")
    expect(added.envelope["data"]).toMatchObject({ name: "hello", scope: "global" })
    const table = await stoat(["recipe", "list"], w.env, "", outside)
    expect(table.stdout).toMatch(
      new RegExp(`^hello\\s+global\\s+${gitIn(w.hello, "rev-parse", "HEAD").slice(0, 7)}\\s+the hello recipe$`, "m")
    )
    const inProject = await w.json(w.project, "recipe", "add", "hello", "--global")
    expect(inProject.envelope["error"]).toMatchObject({ code: "name_taken" })
    expect(existsSync(join(w.project, "stoat.lock"))).toBe(false)
  })

  it("recipe search prints the index table; rm without -y and without a terminal needs confirmation", async () => {
    const w = setup()
    const search = await stoat(["recipe", "search", "hello", "tests"], w.env, "", w.project)
    expect(search.stdout.split("\n")[0]).toMatch(/^NAME\s+OS\s+DESCRIPTION\s+SOURCE$/)
    expect(search.stdout).toMatch(/^hello\s+all\s+hello for tests\s+/m)
    expect((await w.json(w.project, "recipe", "add", "hello")).code).toBe(0)
    expect((await w.json(w.project, "recipe", "rm", "hello")).envelope["error"]).toMatchObject({
      code: "confirmation_required",
      subject: "hello"
    })
    expect((await w.json(w.project, "recipe", "rm", "hello", "-y")).envelope["data"]).toMatchObject({
      name: "hello",
      scope: "project"
    })
    expect(existsSync(join(w.project, ".stoat", "recipes", "hello"))).toBe(false)
  })
})
