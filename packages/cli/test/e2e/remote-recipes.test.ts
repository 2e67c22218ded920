import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { commitFile, gitIn, makeIndexRepo, makeRecipeRepo } from "@stoat/core/testing"
import { e2eEnv, requireQemu, result, stoat, tempHome } from "../helpers.js"

const home = tempHome()
const base = mkdtempSync(join(tmpdir(), "stoat-remote-e2e-"))
const project = join(base, "project")
const source = makeRecipeRepo(base, "hello", { body: "echo remote-v1 > /tmp/hello.out\necho applied hello v1\n" })
const index = makeIndexRepo(base, { hello: source })
const env = { ...e2eEnv(home), STOAT_INDEX: index }
/** Every command runs in the project folder: its stoat.toml gives project scope. */
const run = (...args: string[]) => stoat(["--json", ...args], env, "", project)
const json = async (...args: string[]) => {
  const out = await run(...args)
  const envelope = result(out.stdout)
  if (!envelope["ok"])
    throw new Error(`stoat ${args.join(" ")} failed: ${JSON.stringify(envelope["error"])}\n${out.stderr}`)
  return envelope["data"]
}
const failure = async (...args: string[]) => {
  const out = await run(...args)
  const envelope = result(out.stdout)
  expect(envelope["ok"], `stoat ${args.join(" ")} should fail`).toBe(false)
  expect(out.code).toBe(1)
  return envelope["error"] as { code: string; message: string; subject?: string }
}
const guestFile = async (path: string) => ((await json("exec", "box", "--", "cat", path)) as { stdout: string }).stdout
const checkout = join(project, ".stoat", "recipes", "hello")

describe("remote recipes from a local git index, applied on the tiny guest", () => {
  beforeAll(() => {
    requireQemu()
    mkdirSync(project)
    writeFileSync(join(project, "stoat.toml"), '# e2e project\nschema = 1\n\n[project]\nname = "remote-e2e"\n')
  })
  afterAll(async () => {
    await stoat(["down", "box"], env, "", project)
    rmSync(base, { recursive: true, force: true })
  })

  it("search finds the index entry; add pins it in the project; lock and sync agree", async () => {
    expect(await json("recipe", "search", "hello")).toEqual({
      recipes: [{ name: "hello", source, description: "hello for tests", os: [] }]
    })
    const v1 = gitIn(source, "rev-parse", "HEAD")
    expect(await json("recipe", "add", "hello")).toMatchObject({
      name: "hello",
      source,
      ref: "main",
      commit: v1,
      scope: "project"
    })
    expect(readFileSync(join(project, "stoat.toml"), "utf8")).toContain('[recipes]\nhello = "main"\n')
    expect(readFileSync(join(project, ".gitignore"), "utf8")).toBe(".stoat/\n")
    const pinned = [{ name: "hello", source, ref: "main", commit: v1, scope: "project" }]
    expect(await json("recipe", "lock")).toEqual({ recipes: pinned })
    rmSync(checkout, { recursive: true, force: true })
    expect(await json("recipe", "sync")).toEqual({ recipes: pinned })
    expect(gitIn(checkout, "rev-parse", "HEAD")).toBe(v1)
    const listed = (await json("recipe", "list")) as { recipes: Array<{ name: string; scope: string; commit: string }> }
    expect(listed.recipes.find((recipe) => recipe.name === "hello")).toMatchObject({
      scope: "project",
      commit: v1.slice(0, 7)
    })
  })

  it("applies the pinned recipe to a real VM, and again after update moves it to a new commit", async () => {
    // A VM of its own (--global: this folder's stoat.toml declares no VMs) using the project's recipe checkout.
    await json(
      "create",
      "box",
      "--global",
      "--image",
      "tiny",
      "--ram",
      "256",
      "--agent-access",
      "exec",
      "--recipes",
      "hello"
    )
    await json("up", "box", "--wait", "--timeout", "300")
    expect(await guestFile("/tmp/hello.out")).toBe("remote-v1\n")
    const v2 = commitFile(source, "run.sh", "echo remote-v2 > /tmp/hello.out\n")
    const updated = (await json("recipe", "update")) as { updated: Array<{ commit: string }> }
    expect(updated.updated.map((pin) => pin.commit)).toEqual([v2])
    expect(readFileSync(join(project, "stoat.lock"), "utf8")).toContain(`commit = "${v2}"`)
    expect((await json("apply", "box")) as { applied: string[] }).toMatchObject({ applied: ["hello"] })
    expect(await guestFile("/tmp/hello.out")).toBe("remote-v2\n")
  })

  it("refuses a tampered checkout before running anything, and rm while the VM lists the recipe", async () => {
    writeFileSync(join(checkout, "run.sh"), "echo tampered > /tmp/hello.out\n")
    const refused = await failure("apply", "box")
    expect(refused).toMatchObject({ code: "invalid_spec", subject: checkout })
    expect(refused.message).toContain("tampered")
    expect(await guestFile("/tmp/hello.out")).toBe("remote-v2\n")
    expect(await failure("recipe", "rm", "hello", "-y")).toMatchObject({ code: "in_use", subject: "hello" })
  })
})
