import { execFileSync, spawn } from "node:child_process"
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { homedir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BIN, result, stoat, tempHome } from "../helpers.js"

/** The e2e suites need QEMU; without it they fail loudly instead of skipping. */
const requireQemu = () => {
  try {
    execFileSync("qemu-system-x86_64", ["--version"], { stdio: "ignore" })
  } catch {
    throw new Error("qemu-system-x86_64 is not installed: the e2e suite boots real VMs (run scripts/setup.sh)")
  }
}

const SECRET = "tok-9f2c7e1d4b-SECRET"
const home = tempHome()
const env = {
  STOAT_HOME: home,
  STOAT_TINY_CACHE: process.env["STOAT_TINY_CACHE"] ?? join(homedir(), ".cache", "stoat-test", "tiny-image"),
  STOAT_SECRET_GREET_TOKEN: SECRET
}
const run = (...args: string[]) => stoat(["--json", ...args], env)
const json = async (...args: string[]) => {
  const out = await run(...args)
  const envelope = result(out.stdout)
  if (!envelope["ok"])
    throw new Error(`stoat ${args.join(" ")} failed: ${JSON.stringify(envelope["error"])}\n${out.stderr}`)
  return envelope["data"]
}
const guest = async (script: string) =>
  ((await json("exec", "box", "--", "sh", "-c", script)) as { stdout: string }).stdout
const applyLog = () => readFileSync(join(home, "box", "last-provision.log"), "utf8")
const stoatLog = () => readFileSync(join(home, "logs", "stoat.log"), "utf8")

/** A local recipe under the test's data root (the tiny guest has no package manager, so no bundled one fits it). */
const recipe = (name: string, manifest: string, script: string) => {
  mkdirSync(join(home, "recipes", name), { recursive: true })
  writeFileSync(join(home, "recipes", name, "recipe.toml"), `name = "${name}"\nscript = "run.sh"\n${manifest}`)
  writeFileSync(join(home, "recipes", name, "run.sh"), script)
}

const GREET = `schema = 3
version = "1.0"
[params.who]
type = "string"
default = "world"
[params.times]
type = "int"
default = 2
[params.token]
type = "secret"
required = true
[outputs]
greeting = "what was said"
`
const greetScript = (suffix = "") =>
  `i=0
while [ $i -lt $STOAT_PARAM_TIMES ]; do echo "hello $STOAT_PARAM_WHO$suffix"; i=$((i+1)); done
echo "token is $STOAT_PARAM_TOKEN"
printf '%s' "$STOAT_PARAM_TOKEN" > /tmp/token-seen
echo "greeting=hello $STOAT_PARAM_WHO" >> "$STOAT_OUTPUT"
echo "runs" >> /tmp/greet-runs
`.replace("$suffix", suffix)

describe("recipes on the tiny guest", () => {
  beforeAll(async () => {
    requireQemu()
    recipe("greet", GREET, greetScript())
    recipe("base", "", "echo base-ran > /tmp/base.done\n")
    recipe("app", 'depends = ["base"]\n', "test -f /tmp/base.done && echo app-ran\n")
    recipe("sick", '[health]\ncheck = "echo sick-check-output; false"\ntimeout = "10s"\n', "echo sick-ran\n")
    recipe("stamp", 'run = "always"\n', "echo stamped >> /tmp/stamps\n")
    await json("create", "box", "--image", "tiny", "--agent-access", "exec")
  })
  afterAll(async () => {
    await stoat(["down", "box"], env)
  })

  it("up --no-apply starts without applying; plan works on the stopped VM and then on the running one", async () => {
    await json("update", "box", "--recipes", "greet", "--set", "greet.who=stoat", "--secret", "greet.token")
    const stopped = await json("plan", "box")
    expect(stopped.plan).toEqual([{ name: "greet", action: "run", reason: "never applied", version: "1.0" }])
    await json("up", "box", "--no-apply")
    await json("wait", "box", "--timeout", "2m")
    expect((await json("get", "box")).vm.recipes_detail[0]).toMatchObject({ name: "greet", applied: false })
    expect(await guest("cat /tmp/greet-runs 2>/dev/null; true")).toBe("")
  })

  it("applies a recipe with params, a secret and an output, following the apply-log protocol", async () => {
    const applied = await run("apply", "box")
    const data = result(applied.stdout)["data"]
    expect(data).toMatchObject({ vm: "box", applied: ["greet"], skipped_reason: "" })
    expect(data.recipes_detail[0]).toMatchObject({
      name: "greet",
      applied: true,
      version: "1.0",
      health: "ok",
      outputs: { greeting: "hello stoat" }
    })
    const lines = applyLog().trimEnd().split("\n")
    expect(lines[0]).toMatch(/^waiting for ssh on port \d+…$/)
    expect(lines.slice(1)).toEqual(["=== recipe greet ===", "hello stoat", "hello stoat", "token is <secret>", "done"])
    // The secret reached the script's environment…
    expect(await guest("cat /tmp/token-seen")).toBe(SECRET)
    // …and appears nowhere a person or agent reads.
    expect(applyLog()).not.toContain(SECRET)
    expect(applied.stdout).not.toContain(SECRET)
    expect(applied.stderr).not.toContain(SECRET)
    expect(stoatLog()).not.toContain(SECRET)
    expect(readFileSync(join(home, "box", "vm.toml"), "utf8")).not.toContain(SECRET)
    const waited = await json("wait", "box", "--until", "applied", "--timeout", "1m")
    expect(waited).toMatchObject({ until: "applied", reached: true })
  })

  it("skips an unchanged recipe, runs it again when its script or params change", async () => {
    expect((await json("apply", "box")).applied).toEqual([])
    expect((await json("plan", "box")).plan[0]).toMatchObject({ action: "skip", reason: "already applied" })
    writeFileSync(join(home, "recipes", "greet", "run.sh"), greetScript("!"))
    expect((await json("plan", "box")).plan[0]).toMatchObject({ action: "run", reason: "script changed" })
    expect((await json("apply", "box")).applied).toEqual(["greet"])
    expect(applyLog()).toContain("hello stoat!")
    await json("update", "box", "--set", "greet.times=1")
    expect((await json("plan", "box")).plan[0]).toMatchObject({ action: "run", reason: "params changed" })
    expect(await json("apply", "box", "--dry-run")).toMatchObject({
      dry_run: true,
      plan: [{ name: "greet", action: "run" }]
    })
    expect((await json("apply", "box")).applied).toEqual(["greet"])
    expect(await guest("wc -l < /tmp/greet-runs")).toMatch(/^\s*3\s*$/)
  })

  it("runs a dependency chain in order and refuses an unmet dependency before running anything", async () => {
    await json("update", "box", "--recipes", "app,greet")
    const unmet = result((await run("apply", "box")).stdout)
    expect(unmet["ok"]).toBe(false)
    expect(unmet["error"]).toMatchObject({ code: "invalid_spec" })
    expect(unmet["error"].message).toContain('depends on "base"')
    await json("update", "box", "--recipes", "app,greet,base")
    expect((await json("apply", "box")).applied).toEqual(["base", "app"])
    const log = applyLog()
    expect(log.indexOf("=== recipe base ===")).toBeLessThan(log.indexOf("=== recipe app ==="))
    expect(log).toContain("app-ran")
  })

  it("a failing health check fails the apply but keeps the recipe applied", async () => {
    await json("update", "box", "--recipes", "greet,base,app,sick")
    const out = await run("apply", "box")
    expect(out.code).toBe(1)
    const envelope = result(out.stdout)
    expect(envelope["error"]).toMatchObject({ code: "invalid_spec", subject: "sick" })
    expect(envelope["error"].message).toContain("sick-check-output")
    const detail = (await json("get", "box")).vm
    expect(detail.health).toBe("failed")
    expect(detail.recipes_detail.find((r: { name: string }) => r.name === "sick")).toMatchObject({
      applied: true,
      health: "failed"
    })
    expect(applyLog().trimEnd().split("\n").at(-1)).toMatch(/^FAILED: health check failed: sick/)
    const healthy = result((await run("wait", "box", "--healthy", "--timeout", "30s")).stdout)
    expect(healthy["ok"]).toBe(false)
  })

  it("up applies the configured recipes after boot; up --no-apply does not", async () => {
    await json("update", "box", "--recipes", "greet,stamp")
    await json("down", "box")
    await json("up", "box")
    expect(await guest("cat /tmp/stamps")).toBe("stamped\n")
    expect(applyLog().trimEnd().split("\n").at(-1)).toBe("done")
    await json("down", "box")
    await json("up", "box", "--no-apply")
    await json("wait", "box", "--timeout", "2m")
    // The tiny guest's /tmp is RAM: after a restart without apply no stamp exists.
    expect(await guest("cat /tmp/stamps 2>/dev/null; true")).toBe("")
    const healthy = await json("wait", "box", "--healthy", "--timeout", "30s")
    expect(healthy).toMatchObject({ healthy: true })
  })

  it("Ctrl-C of apply stops everything the recipe started in the guest, not only its first process", async () => {
    recipe("hang", "", "sh -c 'sleep 321' &\necho hang-started\nwait\n")
    await json("update", "box", "--recipes", "hang")
    const apply = spawn(process.execPath, [BIN, "--json", "apply", "box"], {
      env: { ...process.env, NO_COLOR: "1", ...env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    const exited = new Promise<number | null>((resolve) => apply.once("exit", (code) => resolve(code)))
    const sleeping = async () =>
      (await guest("ps -o pid,args 2>/dev/null | grep '[s]leep 321' || ps | grep '[s]leep 321' || true")).trim()
    for (let i = 0; i < 240 && (await sleeping()) === ""; i++) await new Promise((resolve) => setTimeout(resolve, 250))
    expect(await sleeping()).not.toBe("")
    apply.kill("SIGINT")
    expect(await exited).not.toBe(0)
    // The stop is sent before apply exits; give the guest a moment to reap.
    for (let i = 0; i < 20 && (await sleeping()) !== ""; i++) await new Promise((resolve) => setTimeout(resolve, 250))
    expect(await sleeping()).toBe("")
    expect(applyLog().trimEnd().split("\n").at(-1)).toBe("CANCELLED: interrupted")
  })
})
