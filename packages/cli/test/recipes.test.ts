import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { homeWith, result, stoat, vmToml } from "./helpers.js"

const BUNDLED = ["build-deps", "devtools", "docker", "pkg-tools", "python-dev", "service-tools", "tailscale", "xfce"]

const withRecipe = () => {
  const home = homeWith({ "box/vm.toml": vmToml("box", 2290) })
  mkdirSync(join(home, "recipes", "hello"), { recursive: true })
  writeFileSync(
    join(home, "recipes", "hello", "recipe.toml"),
    'schema = 3\nname = "hello"\nversion = "3"\nscript = "run.sh"\n[params.key]\ntype = "secret"\n'
  )
  writeFileSync(join(home, "recipes", "hello", "run.sh"), "echo hello\n")
  return home
}

describe("recipe commands", () => {
  it("recipes lists the bundled recipes; recipe list shows their scope; --os filters", async () => {
    const home = homeWith({})
    const table = await stoat(["recipes"], { STOAT_HOME: home })
    expect(table.code).toBe(0)
    expect(table.stdout.split("\n")[0]).toMatch(/^NAME\s+DESCRIPTION$/)
    for (const name of BUNDLED) expect(table.stdout).toContain(name)
    const listed = result((await stoat(["--json", "recipe", "list"], { STOAT_HOME: home })).stdout)
    expect(listed).toMatchObject({ cmd: "recipe", ok: true })
    expect(listed["data"].recipes.map((r: { name: string; scope: string }) => `${r.name}:${r.scope}`)).toEqual(
      BUNDLED.map((name) => `${name}:bundled`)
    )
    expect(listed["data"].roots).toEqual([{ path: join(home, "recipes"), scope: "local" }])
    const forTiny = result((await stoat(["--json", "recipes", "--os", "tiny"], { STOAT_HOME: home })).stdout)
    expect(forTiny["data"].recipes).toEqual([])
    const forAlpine = result((await stoat(["--json", "recipes", "--os", "alpine"], { STOAT_HOME: home })).stdout)
    expect(forAlpine["data"].recipes.find((r: { name: string }) => r.name === "docker")).toMatchObject({
      has_health: true
    })
  })

  it("check-recipes prints all applicable or one reason per recipe; --os is required", async () => {
    const home = homeWith({})
    expect((await stoat(["check-recipes", "devtools", "xfce", "--os", "alpine"], { STOAT_HOME: home })).stdout).toBe(
      "all applicable\n"
    )
    const tiny = await stoat(["check-recipes", "docker", "nope", "--os", "tiny"], { STOAT_HOME: home })
    expect(tiny).toMatchObject({
      code: 0,
      stdout: "docker: not for tiny (runs on alpine, ubuntu, debian, fedora, arch)\nnope: no recipe root declares it\n"
    })
    expect((await stoat(["check-recipes", "docker"], { STOAT_HOME: home })).code).toBe(2)
    expect(
      result((await stoat(["--json", "check-recipes", "docker", "--os", "beos"], { STOAT_HOME: home })).stdout)["error"]
    ).toMatchObject({ code: "not_found" })
  })

  it("recipe show, new and refresh", async () => {
    const home = homeWith({})
    const shown = result((await stoat(["--json", "recipe", "show", "tailscale"], { STOAT_HOME: home })).stdout)
    expect(shown["data"].recipe).toMatchObject({
      name: "tailscale",
      schema: 3,
      params: [{ name: "authkey", type: "secret", required: true }, { name: "hostname" }]
    })
    expect(
      result((await stoat(["--json", "recipe", "show", "tailscal"], { STOAT_HOME: home })).stdout)["error"]
    ).toMatchObject({ code: "not_found" })
    const made = await stoat(["recipe", "new", "mine", "--os", "debian"], { STOAT_HOME: home })
    expect(made).toMatchObject({ code: 0, stdout: `${join(home, "recipes", "mine")}\n` })
    expect(readFileSync(join(home, "recipes", "mine", "recipe.toml"), "utf8")).toContain('os = ["debian"]')
    expect(
      result((await stoat(["--json", "recipe", "new", "mine"], { STOAT_HOME: home })).stdout)["error"]
    ).toMatchObject({ code: "name_taken" })
    expect(
      result((await stoat(["--json", "recipe", "new", "--os", "x", "-rf"], { STOAT_HOME: home })).stdout)["ok"]
    ).toBe(false)
    writeFileSync(join(home, "recipes", "devtools", "install.sh"), "echo mine\n")
    const refreshed = result((await stoat(["--json", "recipe", "refresh", "devtools"], { STOAT_HOME: home })).stdout)
    expect(refreshed["data"].files.map((f: { status: string }) => f.status)).toEqual(["current", "backed_up"])
  })

  it("plan and apply --dry-run work on a stopped VM; apply itself needs it running", async () => {
    const home = withRecipe()
    expect((await stoat(["update", "box", "--recipes", "hello"], { STOAT_HOME: home })).code).toBe(0)
    const plan = result((await stoat(["--json", "plan", "box"], { STOAT_HOME: home })).stdout)
    expect(plan["data"]).toEqual({
      vm: "box",
      plan: [{ name: "hello", action: "run", reason: "never applied", version: "3" }]
    })
    const dry = result((await stoat(["--json", "apply", "box", "--dry-run"], { STOAT_HOME: home })).stdout)
    expect(dry).toMatchObject({
      cmd: "apply",
      data: { vm: "box", dry_run: true, plan: [{ name: "hello", action: "run" }] }
    })
    const text = await stoat(["plan", "box"], { STOAT_HOME: home })
    expect(text.stdout).toMatch(/^RECIPE\s+ACTION\s+REASON\nhello\s+run\s+never applied\n$/)
    const applied = await stoat(["--json", "apply", "box"], { STOAT_HOME: home })
    expect(applied.code).toBe(1)
    expect(result(applied.stdout)["error"]).toMatchObject({ code: "not_running" })
    expect(
      result((await stoat(["--json", "plan", "box", "--only", "other"], { STOAT_HOME: home })).stdout)["error"]
    ).toMatchObject({ code: "invalid_spec" })
  })

  it("update --secret reads the value from the environment only and stores it 0600; --set needs recipe.param=value", async () => {
    const home = withRecipe()
    const missing = await stoat(["update", "box", "--secret", "hello.key"], { STOAT_HOME: home })
    expect(missing.code).toBe(2)
    expect(missing.stderr).toContain("STOAT_SECRET_HELLO_KEY")
    const value = "s3cr3t-from-env-1b2c"
    const set = await stoat(["--json", "update", "box", "--secret", "hello.key"], {
      STOAT_HOME: home,
      STOAT_SECRET_HELLO_KEY: value
    })
    expect(result(set.stdout)).toMatchObject({ ok: true, data: { changed: ["params"] } })
    expect(set.stdout).not.toContain(value)
    expect(statSync(join(home, "box", "secrets.toml")).mode & 0o777).toBe(0o600)
    expect(readFileSync(join(home, "box", "secrets.toml"), "utf8")).toContain(value)
    expect((await stoat(["update", "box", "--set", "hello"], { STOAT_HOME: home })).code).toBe(2)
    expect((await stoat(["update", "box", "--secret", "$(reboot)"], { STOAT_HOME: home })).code).toBe(2)
  })
})
