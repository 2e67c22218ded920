import { Effect, Either, Exit } from "effect"
import { describe, expect, it } from "vitest"
import { toErrorInfo } from "../../src/errors.js"
import { parseRecipeToml } from "../../src/recipes/manifest.js"
import {
  applicabilityProblem,
  decideRun,
  orderByDepends,
  recipeHash,
  redact,
  resolveParams,
  scriptHash
} from "../../src/recipes/plan.js"
import type { LoadedRecipe } from "../../src/recipes/store.js"
import { BUNDLED_GUESTS } from "../../src/guest-definitions/definitions.js"
import { defaultVmConfig } from "../../src/vm/config.js"

const recipe = (name: string, extra = ""): LoadedRecipe => ({
  manifest: Either.getOrThrow(
    parseRecipeToml(`${name}/recipe.toml`, name, `schema = 3\nname = "${name}"\nscript = "run.sh"\n${extra}`)
  ),
  dir: `/r/${name}`,
  scope: "local",
  source: "",
  ref: "",
  commit: ""
})
const names = (list: ReadonlyArray<LoadedRecipe>) => list.map((r) => r.manifest.name)
const run = <A>(effect: Effect.Effect<A, unknown>) => {
  const exit = Effect.runSyncExit(effect)
  return Exit.isSuccess(exit)
    ? { ok: true as const, value: exit.value }
    : { ok: false as const, error: toErrorInfo(exit.cause) }
}
const guest = (name: string) => ({ ...BUNDLED_GUESTS.find((g) => g.name === name)!, source: "bundled" as const })

describe("dependency order", () => {
  it("puts dependencies first and keeps the listed order otherwise", () => {
    const order = run(
      orderByDepends(
        [recipe("app", 'depends = ["db", "cache"]'), recipe("db"), recipe("tools"), recipe("cache")],
        new Set()
      )
    )
    expect(order.ok && names(order.value)).toEqual(["db", "cache", "app", "tools"])
  })

  it("accepts a dependency that is already applied", () => {
    const order = run(orderByDepends([recipe("app", 'depends = ["db"]')], new Set(["db"])))
    expect(order.ok && names(order.value)).toEqual(["app"])
  })

  it("rejects an unmet dependency and a cycle, naming them", () => {
    const unmet = run(orderByDepends([recipe("app", 'depends = ["db"]')], new Set()))
    expect(unmet).toMatchObject({ ok: false, error: { code: "invalid_spec", subject: "app" } })
    expect(unmet.ok ? "" : unmet.error.message).toContain('depends on "db"')
    const cycle = run(
      orderByDepends(
        [recipe("a", 'depends = ["b"]'), recipe("b", 'depends = ["c"]'), recipe("c", 'depends = ["a"]')],
        new Set()
      )
    )
    expect(cycle).toMatchObject({ ok: false, error: { code: "invalid_spec" } })
    expect(cycle.ok ? "" : cycle.error.message).toContain("a → b → c → a")
  })
})

describe("run modes and the hash rule", () => {
  const hashes = { hash: "h1", scriptHash: "s1" }
  const entry = (hash: string, script_hash: string) => ({
    version: "",
    hash,
    script_hash,
    at: "",
    health: "ok" as const,
    outputs: {}
  })
  it.each([
    ["once, never applied", "", undefined, false, "run", "never applied"],
    ["once, unchanged", "", entry("h1", "s1"), false, "skip", "already applied"],
    ["once, script changed", "", entry("h0", "s0"), false, "run", "script changed"],
    ["once, params changed", "", entry("h0", "s1"), false, "run", "params changed"],
    ["always", 'run = "always"', entry("h1", "s1"), false, "run", "run = always"],
    ["manual, not named", 'run = "manual"', undefined, false, "skip", "run = manual; name it with --only"],
    ["manual, named", 'run = "manual"', entry("h1", "s1"), true, "run", "named with --only"]
  ] as const)("%s", (_why, extra, applied, named, action, reason) => {
    expect(decideRun(recipe("x", extra).manifest, applied, hashes, named)).toEqual({ action, reason })
  })

  it("the hash covers the script and non-secret params (in any order) and secret names, never secret values", () => {
    const params = (plain: Record<string, string>, secretNames: string[], secretValues: string[]) => ({
      env: {},
      plain,
      secretNames,
      secretValues
    })
    const a = recipeHash("echo hi", params({ a: "1", b: "2" }, ["key"], ["one"]))
    expect(recipeHash("echo hi", params({ b: "2", a: "1" }, ["key"], ["two"]))).toBe(a)
    expect(recipeHash("echo hi", params({ a: "1", b: "3" }, ["key"], ["one"]))).not.toBe(a)
    expect(recipeHash("echo hi", params({ a: "1", b: "2" }, [], []))).not.toBe(a)
    expect(recipeHash("echo ho", params({ a: "1", b: "2" }, ["key"], ["one"]))).not.toBe(a)
    expect(scriptHash("echo hi")).not.toBe(scriptHash("echo ho"))
  })
})

describe("params", () => {
  const manifest = recipe(
    "web",
    '[params.port]\ntype = "int"\ndefault = 80\n[params.tls]\ntype = "bool"\ndefault = false\n[params.mode]\ntype = "enum"\nvalues = ["dev", "prod"]\ndefault = "dev"\n[params.owner]\ntype = "string"\ndefault_from = "ssh_user"\n[params.key]\ntype = "secret"\nrequired = true\n[params.extra]\ntype = "secret"\n'
  ).manifest
  const config = (params: Record<string, string> = {}) => defaultVmConfig({ sshport: 2200, params: { web: params } })
  const vm = { name: "box", sshUser: "stoat" }

  it("resolves overrides, defaults and default_from; secrets only in env", () => {
    const resolved = run(
      resolveParams(manifest, config({ port: " 0443 ", tls: "TRUE" }), { web: { key: "s3cret" } }, vm)
    )
    expect(resolved).toEqual({
      ok: true,
      value: {
        env: {
          STOAT_PARAM_PORT: "443",
          STOAT_PARAM_TLS: "true",
          STOAT_PARAM_MODE: "dev",
          STOAT_PARAM_OWNER: "stoat",
          STOAT_PARAM_KEY: "s3cret"
        },
        plain: { port: "443", tls: "true", mode: "dev", owner: "stoat" },
        secretNames: ["key"],
        secretValues: ["s3cret"]
      }
    })
  })

  it.each([
    ["a required secret unset", {}, {}, "params.web.key"],
    ["a bad int", { port: "eighty" }, { web: { key: "k" } }, "params.web.port"],
    ["a bad bool", { tls: "yes" }, { web: { key: "k" } }, "params.web.tls"],
    ["an enum value outside values", { mode: "test" }, { web: { key: "k" } }, "params.web.mode"],
    ["a param the recipe does not have", { colour: "red" }, { web: { key: "k" } }, "params.web.colour"],
    ["a secret given as a plain param", { key: "visible" }, { web: { key: "k" } }, "params.web.key"]
  ])("refuses %s (invalid_spec naming the param, never a value)", (_why, params, secrets, subject) => {
    const resolved = run(resolveParams(manifest, config(params), secrets, vm))
    expect(resolved).toMatchObject({ ok: false, error: { code: "invalid_spec", subject } })
    expect(resolved.ok ? "" : resolved.error.message).not.toContain("visible")
  })
})

describe("applicability", () => {
  it("checks os (names and aliases), requires, stage and the python runtime", () => {
    expect(applicabilityProblem(recipe("a", 'os = ["debian"]').manifest, guest("debian"))).toBeUndefined()
    expect(applicabilityProblem(recipe("a", 'os = ["rpm-family"]').manifest, guest("rocky"))).toBeUndefined()
    expect(applicabilityProblem(recipe("a", 'os = ["debian"]').manifest, guest("alpine"))).toBe(
      "not for alpine (runs on debian)"
    )
    expect(applicabilityProblem(recipe("a", 'requires = ["systemd"]').manifest, guest("alpine"))).toBe(
      "needs capability systemd, which alpine lacks"
    )
    expect(applicabilityProblem(recipe("a", 'stage = "install"').manifest, guest("debian"))).toBe(
      "stage install is not supported"
    )
    expect(applicabilityProblem(recipe("a", 'runtime = "python3"').manifest, guest("tiny"))).toBe(
      "runtime python3 is not available on tiny"
    )
    expect(applicabilityProblem(recipe("a").manifest, guest("tiny"))).toBeUndefined()
  })
})

describe("redaction", () => {
  it("masks every secret value wherever it appears", () => {
    expect(redact("key=abc123 and abc123abc123", ["abc123", ""])).toBe("key=<secret> and <secret><secret>")
  })
})
