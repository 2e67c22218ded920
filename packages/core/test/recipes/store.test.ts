import { spawnSync } from "node:child_process"
import { createHash } from "node:crypto"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Exit } from "effect"
import { describe, expect, it, onTestFinished } from "vitest"
import { toErrorInfo } from "../../src/errors.js"
import { BUNDLED_RECIPES } from "../../src/recipes/bundled.js"
import { installBundled, makeRecipes, refreshBundled, type RecipeSource } from "../../src/recipes/store.js"

const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "stoat-recipes-"))
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}
const sha = (text: string) => createHash("sha256").update(text).digest("hex")
const runOk = <A>(effect: Effect.Effect<A, unknown>) => Effect.runPromise(effect)
const runFail = async (effect: Effect.Effect<unknown, unknown>) => {
  const exit = await Effect.runPromiseExit(effect)
  if (Exit.isSuccess(exit)) throw new Error("succeeded")
  return toErrorInfo(exit.cause)
}
const manifestOf = (dir: string) => readFileSync(join(dir, ".manifest"), "utf8")
const DEVTOOLS = BUNDLED_RECIPES["devtools"]!

describe("bundled recipes in the data root", () => {
  it("installs every bundled file with a manifest of their hashes", async () => {
    const dir = tempDir()
    await runOk(installBundled(dir))
    for (const [name, files] of Object.entries(BUNDLED_RECIPES)) {
      for (const [file, content] of Object.entries(files)) {
        expect(readFileSync(join(dir, name, file), "utf8")).toBe(content)
        expect(manifestOf(dir)).toContain(`${sha(content)}  ${name}/${file}\n`)
      }
    }
  })

  it("every bundled recipe loads as schema 3 with outputs and a health check, and every script is valid sh", async () => {
    const dir = tempDir()
    await runOk(installBundled(dir))
    const recipes = makeRecipes(
      Effect.succeed([{ path: dir, scope: "local" as const, scopeOf: () => "bundled" as const }]),
      dir
    )
    const listed = await runOk(recipes.list)
    expect(listed.map((r) => r.manifest.name)).toEqual(Object.keys(BUNDLED_RECIPES).sort())
    for (const recipe of listed) {
      expect(recipe.manifest.schema, recipe.manifest.name).toBe(3)
      expect(recipe.manifest.outputs.length, recipe.manifest.name).toBeGreaterThan(0)
      expect(recipe.manifest.health, recipe.manifest.name).not.toBeNull()
    }
    for (const [name, files] of Object.entries(BUNDLED_RECIPES)) {
      for (const [file, content] of Object.entries(files)) {
        if (!file.endsWith(".sh")) continue
        const check = spawnSync("sh", ["-n"], { input: content, encoding: "utf8" })
        expect(check.status, `${name}/${file}: ${check.stderr}`).toBe(0)
      }
    }
  })

  it("an upgrade rewrites files as Stoat wrote them and keeps hand-edited ones", async () => {
    const dir = tempDir()
    await runOk(installBundled(dir))
    // An older build wrote this install.sh: on disk and in the manifest with the old hash.
    const old = "echo old build\n"
    writeFileSync(join(dir, "devtools", "install.sh"), old)
    writeFileSync(
      join(dir, ".manifest"),
      manifestOf(dir).replace(
        `${sha(DEVTOOLS["install.sh"]!)}  devtools/install.sh`,
        `${sha(old)}  devtools/install.sh`
      )
    )
    // And a person edited the build-deps script by hand.
    const edited = "echo my own build-deps\n"
    writeFileSync(join(dir, "build-deps", "install.sh"), edited)
    await runOk(installBundled(dir))
    expect(readFileSync(join(dir, "devtools", "install.sh"), "utf8")).toBe(DEVTOOLS["install.sh"])
    expect(readFileSync(join(dir, "build-deps", "install.sh"), "utf8")).toBe(edited)
    // A deleted file comes back.
    rmSync(join(dir, "xfce", "install-alpine.sh"))
    await runOk(installBundled(dir))
    expect(existsSync(join(dir, "xfce", "install-alpine.sh"))).toBe(true)
  })

  it("refresh rewrites from the embedded copies: edited files backed up, current ones reported, orphans listed", async () => {
    const dir = tempDir()
    await runOk(installBundled(dir))
    writeFileSync(join(dir, "devtools", "install.sh"), "echo edited\n")
    writeFileSync(join(dir, ".manifest"), `${manifestOf(dir)}${sha("gone")}  devtools/retired.sh\n`)
    const files = await runOk(refreshBundled(dir, ["devtools"]))
    expect(files).toEqual([
      { path: join(dir, "devtools", "recipe.toml"), status: "current" },
      { path: join(dir, "devtools", "install.sh"), status: "backed_up" },
      { path: join(dir, "devtools", "retired.sh"), status: "orphan" }
    ])
    expect(readFileSync(join(dir, "devtools", "install.sh.bak"), "utf8")).toBe("echo edited\n")
    expect(readFileSync(join(dir, "devtools", "install.sh"), "utf8")).toBe(DEVTOOLS["install.sh"])
    expect(manifestOf(dir)).not.toContain("retired.sh")
    expect(await runFail(refreshBundled(dir, ["devtool"]))).toMatchObject({ code: "not_found", subject: "devtool" })
  })
})

describe("recipe roots", () => {
  const write = (root: string, name: string, description: string) => {
    mkdirSync(join(root, name), { recursive: true })
    writeFileSync(
      join(root, name, "recipe.toml"),
      `name = "${name}"\ndescription = "${description}"\nscript = "run.sh"\n`
    )
    writeFileSync(join(root, name, "run.sh"), "true\n")
  }

  it("the first root that declares a name wins; list is sorted; unknown names suggest the closest", async () => {
    const project = tempDir()
    const data = tempDir()
    write(project, "web", "project web")
    write(data, "web", "local web")
    write(data, "db", "local db")
    const sources: RecipeSource[] = [
      { path: project, scope: "project", scopeOf: () => "project" },
      { path: data, scope: "local", scopeOf: () => "local" }
    ]
    const recipes = makeRecipes(Effect.succeed(sources), data)
    const listed = await runOk(recipes.list)
    expect(listed.map((r) => [r.manifest.name, r.scope, r.manifest.description])).toEqual([
      ["db", "local", "local db"],
      ["web", "project", "project web"]
    ])
    expect((await runOk(recipes.get("web"))).scope).toBe("project")
    const missing = await runFail(recipes.get("wbe"))
    expect(missing).toMatchObject({ code: "not_found", subject: "wbe" })
    expect(missing.message).toContain('did you mean "web"')
  })

  it("a broken local recipe is invalid_spec naming its file and key", async () => {
    const data = tempDir()
    write(data, "web", "x")
    writeFileSync(join(data, "web", "recipe.toml"), 'name = "web"\nscript = "run.sh"\nrun = "sometimes"\n')
    const recipes = makeRecipes(
      Effect.succeed([{ path: data, scope: "local" as const, scopeOf: () => "local" as const }]),
      data
    )
    const error = await runFail(recipes.get("web"))
    expect(error).toMatchObject({ code: "invalid_spec", subject: `${join(data, "web", "recipe.toml")}:run` })
  })

  it("picks the per-OS script by guest name, then alias, else the default", async () => {
    const data = tempDir()
    write(data, "web", "x")
    writeFileSync(
      join(data, "web", "recipe.toml"),
      'name = "web"\nscript = "run.sh"\n[scripts]\nalpine = "alpine.sh"\nrpm-family = "rpm.sh"\n'
    )
    writeFileSync(join(data, "web", "alpine.sh"), "alpine\n")
    writeFileSync(join(data, "web", "rpm.sh"), "rpm\n")
    const recipes = makeRecipes(
      Effect.succeed([{ path: data, scope: "local" as const, scopeOf: () => "local" as const }]),
      data
    )
    const web = await runOk(recipes.get("web"))
    const body = async (name: string, aliases: string[]) => (await runOk(recipes.script(web, { name, aliases }))).body
    expect([
      await body("alpine", []),
      await body("rocky", ["rpm-family"]),
      await body("debian", ["debian-family"])
    ]).toEqual(["alpine\n", "rpm\n", "true\n"])
  })

  it("scaffolds a new recipe that loads, and refuses a taken or bad name", async () => {
    const data = tempDir()
    await runOk(installBundled(data))
    const recipes = makeRecipes(
      Effect.succeed([{ path: data, scope: "local" as const, scopeOf: () => "local" as const }]),
      data
    )
    const path = await runOk(recipes.scaffold("mine", ["debian"]))
    expect(path).toBe(join(data, "mine"))
    expect((await runOk(recipes.get("mine"))).manifest).toMatchObject({
      name: "mine",
      os: ["debian"],
      params: [{ name: "greeting" }]
    })
    expect(await runFail(recipes.scaffold("mine", []))).toMatchObject({ code: "name_taken" })
    expect(await runFail(recipes.scaffold("devtools", []))).toMatchObject({ code: "name_taken" })
    expect(await runFail(recipes.scaffold("../evil", []))).toMatchObject({ code: "invalid_spec" })
  })
})
