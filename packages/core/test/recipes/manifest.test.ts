import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Either, Exit } from "effect"
import { describe, expect, it, onTestFinished } from "vitest"
import { toErrorInfo } from "../../src/errors.js"
import { durationMs, parseRecipeToml } from "../../src/recipes/manifest.js"
import { loadRecipeDir } from "../../src/recipes/store.js"

const FILE = "/root/recipes/web/recipe.toml"
const parse = (text: string) => parseRecipeToml(FILE, "web", text)
const problem = (text: string) => {
  const parsed = parse(text)
  if (Either.isRight(parsed)) throw new Error(`parsed: ${text}`)
  return { code: parsed.left.code, message: parsed.left.message, subject: parsed.left.subject }
}
const base = 'name = "web"\nscript = "run.sh"\n'
const v3 = `schema = 3\n${base}`

describe("recipe.toml", () => {
  it("schema 2 (absent) fills every default", () => {
    const parsed = parse(base)
    expect(Either.getOrThrow(parsed)).toEqual({
      schema: 2,
      name: "web",
      description: "",
      version: "",
      os: [],
      requires: [],
      stage: "provision",
      script: "run.sh",
      scripts: {},
      auto: false,
      run: "once",
      reboot: false,
      runtime: "sh",
      depends: [],
      params: [],
      outputs: [],
      health: null
    })
  })

  it("schema 3 reads params (sorted), outputs and health with its default timeout", () => {
    const parsed = Either.getOrThrow(
      parse(
        `${v3}os = ["debian"]\nrun = "always"\n[scripts]\nalpine = "./a.sh"\n[params.zeta]\ntype = "int"\ndefault = 3\n[params.alpha]\ntype = "enum"\nvalues = ["a", "b"]\ndefault = "b"\n[params.key]\ntype = "secret"\nrequired = true\n[params.owner]\ntype = "string"\ndefault_from = "ssh_user"\n[outputs]\nport = "where it listens"\n[health]\ncheck = "true"\n`
      )
    )
    expect(parsed.params.map((p) => p.name)).toEqual(["alpha", "key", "owner", "zeta"])
    expect(parsed.params.find((p) => p.name === "zeta")).toMatchObject({
      type: "int",
      default: "3",
      hasDefault: true,
      required: false
    })
    expect(parsed.params.find((p) => p.name === "owner")).toMatchObject({ default_from: "ssh_user", hasDefault: false })
    expect(parsed.scripts).toEqual({ alpine: "a.sh" })
    expect(parsed.outputs).toEqual([{ name: "port", help: "where it listens" }])
    expect(parsed.health).toEqual({ check: "true", timeout: "30s" })
    expect(parsed.run).toBe("always")
  })

  // Every rule of reference §3.6: a typed invalid_spec whose message starts with the file and names the key.
  it.each([
    ["not TOML", "name = [", ""],
    ["schema 4", 'schema = 4\nname = "web"\nscript = "run.sh"\n', "schema"],
    ["no name", 'script = "run.sh"\n', "name"],
    ["name differs from the folder", 'name = "other"\nscript = "run.sh"\n', "name"],
    ["name with capitals", 'name = "Web"\nscript = "run.sh"\n', "name"],
    ["no script", 'name = "web"\n', "script"],
    ["absolute script", 'name = "web"\nscript = "/bin/true"\n', "script"],
    ["script outside the folder", 'name = "web"\nscript = "../x.sh"\n', "script"],
    ["scripts entry outside the folder", `${base}[scripts]\ndebian = "../../etc/passwd"\n`, "scripts.debian"],
    ["unknown key", `${base}colour = "red"\n`, "colour"],
    ["bad stage", `${base}stage = "later"\n`, "stage"],
    ["bad run mode", `${base}run = "twice"\n`, "run"],
    ["bad runtime", `${base}runtime = "perl"\n`, "runtime"],
    ["params in schema 2", `${base}[params.x]\ntype = "string"\ndefault = ""\n`, "params"],
    ["outputs in schema 2", `${base}[outputs]\nx = "y"\n`, "outputs"],
    ["depends on itself", `${base}depends = ["web"]\n`, "depends"],
    ["bad param name", `${v3}[params.Bad]\ntype = "string"\ndefault = ""\n`, "params.Bad"],
    ["param type", `${v3}[params.x]\ntype = "float"\ndefault = 1\n`, "params.x.type"],
    ["param without default or required", `${v3}[params.x]\ntype = "string"\n`, "params.x"],
    ["secret with a default", `${v3}[params.x]\ntype = "secret"\ndefault = "hunter2"\n`, "params.x"],
    ["enum without values", `${v3}[params.x]\ntype = "enum"\ndefault = "a"\n`, "params.x"],
    ["enum default not in values", `${v3}[params.x]\ntype = "enum"\nvalues = ["a"]\ndefault = "b"\n`, "params.x"],
    ["int default not an integer", `${v3}[params.x]\ntype = "int"\ndefault = "many"\n`, "params.x"],
    ["bool default not a bool", `${v3}[params.x]\ntype = "bool"\ndefault = "yes"\n`, "params.x"],
    ["values on a non-enum", `${v3}[params.x]\ntype = "string"\ndefault = "a"\nvalues = ["a"]\n`, "params.x"],
    ["unknown default_from", `${v3}[params.x]\ntype = "string"\ndefault_from = "moon"\n`, "params.x.default_from"],
    ["bad output name", `${v3}[outputs]\nBad-Name = "x"\n`, "outputs.Bad-Name"],
    ["bad health timeout", `${base}[health]\ncheck = "true"\ntimeout = "soon"\n`, "health.timeout"],
    ["empty health check", `${base}[health]\ncheck = ""\n`, "health.check"]
  ])("refuses %s", (_why, text, key) => {
    const found = problem(text)
    expect(found.code).toBe("invalid_spec")
    expect(found.message.startsWith(`${FILE}: `)).toBe(true)
    if (key !== "") {
      expect(found.message).toContain(key)
      expect(found.subject).toBe(`${FILE}:${key}`)
    }
  })

  it("reads durations", () => {
    expect([durationMs("30s"), durationMs("2m"), durationMs("500ms")]).toEqual([30_000, 120_000, 500])
  })
})

describe("recipe folders", () => {
  const folder = () => {
    const root = mkdtempSync(join(tmpdir(), "stoat-recipe-"))
    onTestFinished(() => rmSync(root, { recursive: true, force: true }))
    const dir = join(root, "web")
    mkdirSync(dir)
    return { root, dir }
  }
  const load = async (dir: string) => {
    const exit = await Effect.runPromiseExit(loadRecipeDir(dir, "web"))
    if (Exit.isSuccess(exit)) return { ok: true as const, value: exit.value }
    return { ok: false as const, error: toErrorInfo(exit.cause) }
  }

  it("loads a folder whose scripts are regular files inside it", async () => {
    const { dir } = folder()
    writeFileSync(join(dir, "recipe.toml"), `${base}[scripts]\nalpine = "alpine.sh"\n`)
    writeFileSync(join(dir, "run.sh"), "true\n")
    writeFileSync(join(dir, "alpine.sh"), "true\n")
    expect(await load(dir)).toMatchObject({ ok: true, value: { name: "web", scripts: { alpine: "alpine.sh" } } })
  })

  it("refuses a missing script, a directory as script, and a symlink leading outside", async () => {
    const { root, dir } = folder()
    writeFileSync(join(dir, "recipe.toml"), base)
    expect(await load(dir)).toMatchObject({
      ok: false,
      error: { code: "invalid_spec", subject: `${join(dir, "recipe.toml")}:script` }
    })
    mkdirSync(join(dir, "run.sh"))
    const directory = await load(dir)
    expect(directory.ok ? "" : directory.error.message).toContain("not a regular file")
    rmSync(join(dir, "run.sh"), { recursive: true })
    writeFileSync(join(root, "outside.sh"), "true\n")
    symlinkSync(join(root, "outside.sh"), join(dir, "run.sh"))
    const escaped = await load(dir)
    expect(escaped.ok ? "" : escaped.error.message).toContain("leads outside the recipe folder")
  })

  it("a folder without recipe.toml is not_found naming the file", async () => {
    const { dir } = folder()
    expect(await load(dir)).toMatchObject({
      ok: false,
      error: { code: "not_found", subject: join(dir, "recipe.toml") }
    })
  })
})
