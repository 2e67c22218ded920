import { spawnSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Exit, Schema } from "effect"
import { ProgressEvent } from "@stoat/wire"
import { describe, expect, it, onTestFinished } from "vitest"
import {
  applyRecipes,
  createVm,
  getVm,
  hostOnlyFields,
  planRecipes,
  startVm,
  stopVm,
  updateVm,
  waitVm
} from "../../src/operations/index.js"
import { Locks } from "../../src/platform/locks.js"
import { runOperation } from "../../src/operations/run.js"
import type { FakeExecHandler } from "../../src/testing/index.js"
import { harness, type Harness } from "../harness.js"

const SECRET = "pw-77c1d0e5-do-not-leak"

/**
 * A guest that runs what apply sends in the host's sh, inside a scratch folder: `sh -s` with the
 * script on stdin, or `sh -c` for the output pickup. Anything else answers 127.
 */
const hostShell =
  (scratch: string): FakeExecHandler =>
  (argv, context) => {
    const words = argv[0] === "sh" ? argv.slice(1) : undefined
    if (words === undefined) return { exitCode: 127, stderr: `${argv[0]}: not found\n` }
    const run = spawnSync("sh", words, {
      input: context.input,
      cwd: scratch,
      env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", SCRATCH: scratch }
    })
    return { exitCode: run.status ?? 1, stdout: run.stdout, stderr: run.stderr }
  }

const world = async (recipes: Record<string, { manifest: string; script: string }>) => {
  const h = harness()
  const scratch = mkdtempSync(join(tmpdir(), "stoat-guest-"))
  onTestFinished(() => rmSync(scratch, { recursive: true, force: true }))
  h.guest.execHandler = hostShell(scratch)
  for (const [name, { manifest, script }] of Object.entries(recipes)) {
    mkdirSync(join(h.root, "recipes", name), { recursive: true })
    writeFileSync(
      join(h.root, "recipes", name, "recipe.toml"),
      `schema = 3\nname = "${name}"\nscript = "run.sh"\n${manifest}`
    )
    writeFileSync(join(h.root, "recipes", name, "run.sh"), script)
  }
  await h.ok(createVm, { name: "box", image: "tiny" })
  return { h, scratch, log: () => readFileSync(join(h.vmDir("box"), "last-provision.log"), "utf8") }
}
const recipesOf = async (h: Harness, names: string[]) => h.ok(updateVm, { vm: "box", recipes: names })
/** Scripts sent to the guest: recipes (run in a process group of their own) and health checks. */
const sent = (h: Harness) => h.guest.execs.filter((call) => call.options.stdin !== undefined)

describe("apply", () => {
  it("reports each recipe as a stage and each line of its output as a log, every event a member of the wire's ProgressEvent", async () => {
    const { h } = await world({ greet: { manifest: "", script: "echo hello from greet\n" } })
    await recipesOf(h, ["greet"])
    await h.ok(startVm, { vm: "box" })
    const events: ProgressEvent[] = []
    await h.ok(applyRecipes, { vm: "box" }, { progress: (event) => events.push(event) })
    for (const event of events) expect(Schema.is(ProgressEvent)(event), JSON.stringify(event)).toBe(true)
    expect(events).toContainEqual({ type: "stage", data: { recipe: "greet" } })
    expect(events).toContainEqual({ type: "log", data: { line: "hello from greet" } })
  })

  it("a secret reaches the script's environment only: never the log, results, errors, argv or stoat.log", async () => {
    const { h, scratch, log } = await world({
      leaky: {
        manifest: '[params.key]\ntype = "secret"\nrequired = true\n[outputs]\nkey_echo = "x"\n',
        script:
          'printf %s "$STOAT_PARAM_KEY" > "$SCRATCH/seen"\necho "out $STOAT_PARAM_KEY"\necho "err $STOAT_PARAM_KEY" >&2\necho "key_echo=$STOAT_PARAM_KEY" >> "$STOAT_OUTPUT"\n'
      },
      fails: { manifest: "", script: 'echo "dying with $STOAT_PARAM_KEY" >&2; exit 3\n' }
    })
    await h.ok(updateVm, { vm: "box", recipes: ["leaky"], secrets: { leaky: { key: SECRET }, fails: { key: SECRET } } })
    await h.ok(startVm, { vm: "box" })
    const applied = await h.ok(applyRecipes, { vm: "box" })
    expect(readFileSync(join(scratch, "seen"), "utf8")).toBe(SECRET)
    expect(applied.recipes_detail[0]!.outputs).toEqual({ key_echo: "<secret>" })
    expect(applied.recipes_detail[0]!.params).toEqual({ key: "<set>" })
    expect((await h.ok(getVm, { vm: "box" })).recipes_detail[0]!.params).toEqual({ key: "<set>" })
    expect(log()).toContain("out <secret>")
    expect(log()).toContain("err <secret>")
    expect(JSON.stringify(applied)).not.toContain(SECRET)
    expect(log()).not.toContain(SECRET)
    for (const call of h.guest.execs) expect(call.argv.join(" ")).not.toContain(SECRET)
    // A failure's message carries the guest's stderr, masked. (The secret is the recipe's own env only.)
    writeFileSync(
      join(h.root, "recipes", "fails", "recipe.toml"),
      'schema = 3\nname = "fails"\nscript = "run.sh"\n[params.key]\ntype = "secret"\nrequired = true\n'
    )
    await recipesOf(h, ["fails"])
    const error = await h.fail(applyRecipes, { vm: "box" })
    expect(error).toMatchObject({ code: "invalid_spec", subject: "fails" })
    expect(error.message).toContain("dying with <secret>")
    expect(JSON.stringify(error)).not.toContain(SECRET)
    expect(log().trimEnd().split("\n").at(-1)).toBe("FAILED: fails exited 3")
    expect(readFileSync(join(h.root, "logs", "stoat.log"), "utf8")).not.toContain(SECRET)
    expect(readFileSync(join(h.vmDir("box"), "vm.toml"), "utf8")).not.toContain(SECRET)
  })

  it("cycles, unmet dependencies, stray --only names and unset required secrets are refused before anything runs", async () => {
    const { h } = await world({
      a: { manifest: 'depends = ["b"]\n', script: "true\n" },
      b: { manifest: 'depends = ["a"]\n', script: "true\n" },
      c: { manifest: 'depends = ["d"]\n', script: "true\n" },
      d: { manifest: "", script: "true\n" },
      s: { manifest: '[params.key]\ntype = "secret"\nrequired = true\n', script: "true\n" }
    })
    await h.ok(startVm, { vm: "box" })
    await recipesOf(h, ["a", "b"])
    expect((await h.fail(applyRecipes, { vm: "box" })).message).toContain("recipe dependency cycle: a → b → a")
    await recipesOf(h, ["c", "d"])
    expect((await h.fail(applyRecipes, { vm: "box", only: ["c"] })).message).toContain('depends on "d"')
    expect(await h.fail(applyRecipes, { vm: "box", only: ["zzz"] })).toMatchObject({
      code: "invalid_spec",
      subject: "zzz"
    })
    await recipesOf(h, ["s"])
    expect(await h.fail(applyRecipes, { vm: "box" })).toMatchObject({ code: "invalid_spec", subject: "params.s.key" })
    expect(sent(h)).toEqual([])
    expect(h.exists("box", "last-provision.log")).toBe(false)
  })

  it("orders by depends, records [applied.*] with hashes and outputs, then skips until the script or params change", async () => {
    const { h, log } = await world({
      app: {
        manifest:
          'version = "2"\ndepends = ["base"]\n[params.port]\ntype = "int"\ndefault = 80\n[outputs]\nport = "p"\n',
        script: 'echo "port=$STOAT_PARAM_PORT" >> "$STOAT_OUTPUT"\n'
      },
      base: { manifest: "", script: "echo base\n" }
    })
    await recipesOf(h, ["app", "base"])
    await h.ok(startVm, { vm: "box" })
    expect((await h.ok(applyRecipes, { vm: "box" })).applied).toEqual(["base", "app"])
    expect(
      log()
        .split("\n")
        .filter((line) => line.startsWith("==="))
    ).toEqual(["=== recipe base ===", "=== recipe app ==="])
    const toml = h.readVmToml("box")
    expect(toml).toContain("# written by stoat; do not edit")
    expect(toml).toMatch(
      /\[applied\.app\][\s\S]*version = "2"[\s\S]*hash = "[0-9a-f]{64}"[\s\S]*script_hash = "[0-9a-f]{64}"/
    )
    expect((await h.ok(getVm, { vm: "box" })).recipes_detail.find((r) => r.name === "app")).toMatchObject({
      applied: true,
      health: "ok",
      outputs: { port: "80" }
    })
    expect((await h.ok(applyRecipes, { vm: "box" })).applied).toEqual([])
    await h.ok(updateVm, { vm: "box", params: { app: { port: "8080" } } })
    expect((await h.ok(planRecipes, { vm: "box" })).plan).toEqual([
      { name: "base", action: "skip", reason: "already applied" },
      { name: "app", action: "run", reason: "params changed", version: "2" }
    ])
    expect((await h.ok(applyRecipes, { vm: "box" })).applied).toEqual(["app"])
    // Plan is host-side: it works on a stopped VM and sends nothing to the guest.
    await h.ok(stopVm, { vm: "box" })
    const before = h.guest.execs.length
    writeFileSync(join(h.root, "recipes", "base", "run.sh"), "echo base v2\n")
    expect((await h.ok(planRecipes, { vm: "box" })).plan[0]).toEqual({
      name: "base",
      action: "run",
      reason: "script changed"
    })
    expect(h.guest.execs.length).toBe(before)
    expect(await h.fail(applyRecipes, { vm: "box" })).toMatchObject({ code: "not_running" })
  })

  it("hostile param values reach the script literally: quotes, $(), backticks, newlines; NUL is refused", async () => {
    const { h, scratch } = await world({
      echo: {
        manifest: '[params.text]\ntype = "string"\ndefault = ""\n',
        script: 'printf %s "$STOAT_PARAM_TEXT" > "$SCRATCH/text"\n'
      }
    })
    await recipesOf(h, ["echo"])
    await h.ok(startVm, { vm: "box" })
    const hostile = `it's $(touch ${scratch}/pwned) \`id\` "q" ; exit 9\nline2 -rf`
    await h.ok(updateVm, { vm: "box", params: { echo: { text: hostile } } })
    await h.ok(applyRecipes, { vm: "box" })
    expect(readFileSync(join(scratch, "text"), "utf8")).toBe(hostile)
    expect(existsSync(join(scratch, "pwned"))).toBe(false)
    await h.ok(updateVm, { vm: "box", params: { echo: { text: "a\u0000b" } } })
    expect(await h.fail(planRecipes, { vm: "box" })).toMatchObject({
      code: "invalid_spec",
      subject: "params.echo.text"
    })
  })

  it("manual recipes run only when named; always recipes every time", async () => {
    const { h } = await world({
      hand: { manifest: 'run = "manual"\n', script: "true\n" },
      each: { manifest: 'run = "always"\n', script: "true\n" }
    })
    await recipesOf(h, ["hand", "each"])
    await h.ok(startVm, { vm: "box" })
    expect((await h.ok(applyRecipes, { vm: "box" })).applied).toEqual(["each"])
    expect((await h.ok(applyRecipes, { vm: "box" })).applied).toEqual(["each"])
    expect((await h.ok(applyRecipes, { vm: "box", only: ["hand"] })).applied).toEqual(["hand"])
  })

  it("a failing health check fails the call, keeps the recipe applied and stores health failed", async () => {
    const { h, log } = await world({
      web: { manifest: '[health]\ncheck = "echo not listening; exit 1"\n', script: "true\n" }
    })
    await recipesOf(h, ["web"])
    await h.ok(startVm, { vm: "box" })
    const error = await h.fail(applyRecipes, { vm: "box" })
    expect(error).toMatchObject({ code: "invalid_spec", subject: "web" })
    expect(error.message).toContain("not listening")
    expect((await h.ok(getVm, { vm: "box" })).recipes_detail[0]).toMatchObject({ applied: true, health: "failed" })
    expect(log().trimEnd().split("\n").at(-1)).toBe("FAILED: health check failed: web (not listening)")
  })

  it("a second apply while one holds the provision lock is skipped with the reason", async () => {
    const { h } = await world({ web: { manifest: "", script: "true\n" } })
    await recipesOf(h, ["web"])
    await h.ok(startVm, { vm: "box" })
    const context = { requestId: "t" }
    const nested = Effect.flatMap(Locks, (locks) =>
      locks.tryLock(
        join(h.vmDir("box"), "provision.lock"),
        "held by the test",
        runOperation(applyRecipes, { vm: "box" }, context)
      )
    )
    const exit = await Effect.runPromiseExit(
      Effect.provide(nested, h.layer() as never) as Effect.Effect<unknown, unknown>
    )
    expect(Exit.isSuccess(exit) && exit.value).toMatchObject({
      vm: "box",
      applied: [],
      skipped_reason: "provision in progress"
    })
    expect(sent(h)).toEqual([])
  })

  it("start with apply (up) applies after boot; without it nothing runs", async () => {
    const { h, scratch } = await world({
      mark: { manifest: 'run = "always"\n', script: 'echo x >> "$SCRATCH/marks"\n' }
    })
    await recipesOf(h, ["mark"])
    await h.ok(startVm, { vm: "box" })
    expect(sent(h)).toEqual([])
    await h.ok(stopVm, { vm: "box" })
    await h.ok(startVm, { vm: "box", apply: true })
    expect(readFileSync(join(scratch, "marks"), "utf8")).toBe("x\n")
    expect(hostOnlyFields(startVm.input)).toContain("apply")
  })

  it("a reboot recipe on a disk VM restarts it once, then runs health checks", async () => {
    const { h, log } = await world({
      desk: { manifest: 'reboot = true\n[health]\ncheck = "true"\n', script: "true\n" }
    })
    await recipesOf(h, ["desk"])
    await h.ok(startVm, { vm: "box" })
    const starts = h.hypervisor.starts
    await h.ok(applyRecipes, { vm: "box" })
    expect(h.hypervisor.starts).toBe(starts + 1)
    expect(log()).toContain("rebooting box to finish desk...")
    expect(log().trimEnd().split("\n").at(-1)).toBe("done")
  })
})

describe("apply as a user that is not root", () => {
  it("on a guest with no escalate command is capability_unavailable before any recipe runs (never run unprivileged)", async () => {
    const { h } = await world({ hello: { manifest: "", script: 'touch "$SCRATCH/ran"\n' } })
    await recipesOf(h, ["hello"])
    const vmToml = join(h.vmDir("box"), "vm.toml")
    writeFileSync(vmToml, readFileSync(vmToml, "utf8").replace(/^sshuser = .*$/m, 'sshuser = "guest"'))
    await h.ok(startVm, { vm: "box" })
    expect(await h.fail(applyRecipes, { vm: "box" })).toMatchObject({
      code: "capability_unavailable",
      reason: "escalate",
      subject: "box"
    })
    expect(sent(h)).toEqual([])
  })
})

describe("recipe names on create and update", () => {
  it("an undeclared recipe is not_found; one that cannot run on the guest is recipe_not_applicable", async () => {
    const h = harness()
    expect(await h.fail(createVm, { name: "box", image: "tiny", recipes: ["nope"] })).toMatchObject({
      code: "not_found",
      subject: "nope"
    })
    expect(await h.fail(createVm, { name: "box", image: "tiny", recipes: ["devtools"] })).toMatchObject({
      code: "recipe_not_applicable",
      subject: "devtools"
    })
    expect(h.vmFolders()).toEqual([])
    await h.ok(createVm, { name: "box", image: "tiny" })
    expect(await h.fail(updateVm, { vm: "box", recipes: ["docker"] })).toMatchObject({ code: "recipe_not_applicable" })
  })

  it("wait healthy=true runs the checks again until they pass, and gives up after the longest check timeout", async () => {
    const { h, scratch } = await world({
      slow: { manifest: '[health]\ncheck = "test -f \\"$SCRATCH/ready\\""\ntimeout = "20s"\n', script: "true\n" },
      never: { manifest: '[health]\ncheck = "false"\ntimeout = "1s"\n', script: "true\n" }
    })
    await recipesOf(h, ["slow"])
    await h.ok(startVm, { vm: "box" })
    expect((await h.fail(applyRecipes, { vm: "box" })).message).toContain("health check failed")
    expect((await h.ok(getVm, { vm: "box" })).recipes_detail[0]).toMatchObject({ name: "slow", health: "failed" })
    // The service comes up a moment later: the wait sees it without another apply.
    const ready = setTimeout(() => writeFileSync(join(scratch, "ready"), ""), 700)
    onTestFinished(() => clearTimeout(ready))
    expect(await h.ok(waitVm, { vm: "box", healthy: true, timeout_seconds: 60 })).toMatchObject({ healthy: true })
    expect((await h.ok(getVm, { vm: "box" })).recipes_detail[0]).toMatchObject({ name: "slow", health: "ok" })
    const checks = sent(h).filter((call) => String(call.options.stdin ?? "").includes("SCRATCH/ready")).length
    expect(checks).toBeGreaterThan(2)
    // A check that never passes ends the wait at its own timeout (1 s), not at timeout_seconds.
    await recipesOf(h, ["slow", "never"])
    await h.fail(applyRecipes, { vm: "box" })
    expect(await h.ok(waitVm, { vm: "box", healthy: true, timeout_seconds: 600 })).toMatchObject({ healthy: false })
    expect((await h.ok(getVm, { vm: "box" })).recipes_detail.find((recipe) => recipe.name === "never")).toMatchObject({
      health: "failed"
    })
  })
})
