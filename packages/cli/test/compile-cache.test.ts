import { execFileSync, spawnSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const loader = fileURLToPath(new URL("../bin/compile-cache.js", import.meta.url))
const dist = fileURLToPath(new URL("../dist", import.meta.url))
const mcpBundle = fileURLToPath(new URL("../../mcp/dist/bundle", import.meta.url))

/** A bundle root with one module that requires a second, and the cache directory beside it. */
const fixture = () => {
  const dir = mkdtempSync(join(tmpdir(), "stoat-ccache-"))
  mkdirSync(join(dir, "bundle"))
  writeFileSync(
    join(dir, "bundle", "main.cjs"),
    'const { twice } = require("./lib.cjs"); module.exports = twice(21) + ":" + __filename.endsWith("main.cjs")\n'
  )
  writeFileSync(join(dir, "bundle", "lib.cjs"), "exports.twice = (n) => n * 2\n")
  return { root: join(dir, "bundle"), cache: join(dir, "cache") }
}

/** Loads the fixture through the cache in a fresh node; prints its export and the cache's counts. */
const load = (root: string, cache: string, env: Record<string, string> = {}, roots = [root]) => {
  const script = `const c = require(${JSON.stringify(loader)}); c.enableCompileCache(${JSON.stringify(roots)}, ${JSON.stringify(cache)}); const value = require(${JSON.stringify(join(root, "main.cjs"))}); console.log(JSON.stringify({ value, ...c.compileCacheStats }))`
  return JSON.parse(
    execFileSync(process.execPath, ["-e", script], { env: { ...process.env, ...env }, encoding: "utf8" })
  ) as { value: string; hits: number; misses: number }
}

describe("the V8 code cache of stoat's bundles", () => {
  it("compiles from source once, then from the cache, with the same result", () => {
    const { root, cache } = fixture()
    expect(load(root, cache)).toEqual({ value: "42:true", hits: 0, misses: 2 })
    expect(readdirSync(cache)).toHaveLength(2)
    expect(load(root, cache)).toEqual({ value: "42:true", hits: 2, misses: 0 })
  })

  it("never uses an entry for other source: a changed file is compiled anew", () => {
    const { root, cache } = fixture()
    load(root, cache)
    // Same length, other code: V8's own check of cached data looks at little more than the length.
    writeFileSync(join(root, "lib.cjs"), "exports.twice = (n) => n * 3\n")
    expect(load(root, cache)).toEqual({ value: "63:true", hits: 1, misses: 1 })
  })

  it("works, uncached, when the cache cannot be written", () => {
    const { root, cache } = fixture()
    // A file where the directory should be: not even root can create entries under it.
    writeFileSync(cache, "")
    expect(load(root, cache)).toEqual({ value: "42:true", hits: 0, misses: 2 })
    expect(load(root, cache)).toEqual({ value: "42:true", hits: 0, misses: 2 })
  })

  it("leaves a file that calls import() to Node, so it works on every run", () => {
    const { root, cache } = fixture()
    writeFileSync(join(root, "lib.cjs"), 'exports.twice = (n) => n * 2\nexports.later = () => import("node:os")\n')
    writeFileSync(
      join(root, "main.cjs"),
      'const lib = require("./lib.cjs"); module.exports = lib.twice(21) + ":" + typeof lib.later\n'
    )
    expect(load(root, cache)).toEqual({ value: "42:function", hits: 0, misses: 1 })
    expect(load(root, cache)).toEqual({ value: "42:function", hits: 1, misses: 0 })
    const script = `const c = require(${JSON.stringify(loader)}); c.enableCompileCache([${JSON.stringify(root)}], ${JSON.stringify(cache)}); require(${JSON.stringify(join(root, "lib.cjs"))}).later().then((os) => console.log(typeof os.cpus))`
    expect(execFileSync(process.execPath, ["-e", script], { encoding: "utf8" }).trim()).toBe("function")
  })

  it("is off with STOAT_COMPILE_CACHE=0", () => {
    const { root, cache } = fixture()
    expect(load(root, cache, { STOAT_COMPILE_CACHE: "0" })).toEqual({ value: "42:true", hits: 0, misses: 0 })
  })

  it("leaves files outside its roots to Node", () => {
    const { root, cache } = fixture()
    const elsewhere = mkdtempSync(join(tmpdir(), "stoat-ccache-other-"))
    expect(load(root, cache, {}, [elsewhere])).toEqual({ value: "42:true", hits: 0, misses: 0 })
  })

  // Node 20 drops the dynamic-import callback of a script compiled from cached data, so an
  // `import()` in a bundle would fail on every run after the first.
  it("the CLI's and the MCP server's bundles contain no import()", () => {
    const files = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
        entry.isDirectory() ? files(join(dir, entry.name)) : entry.name.endsWith(".cjs") ? [join(dir, entry.name)] : []
      )
    const offenders = [...files(dist), ...files(mcpBundle)].filter((file) =>
      /\bimport\(/.test(readFileSync(file, "utf8"))
    )
    expect(offenders).toEqual([])
  })

  it("a second stoat run of each bundle is served from the cache and answers the same", () => {
    const cache = mkdtempSync(join(tmpdir(), "stoat-ccache-cli-"))
    const home = mkdtempSync(join(tmpdir(), "stoat-ccache-home-"))
    const run = () =>
      spawnSync(process.execPath, [fileURLToPath(new URL("../bin/run.js", import.meta.url)), "ls", "--json"], {
        env: { ...process.env, STOAT_HOME: home, STOAT_COMPILE_CACHE_DIR: cache },
        encoding: "utf8"
      })
    const first = run()
    const entries = readdirSync(cache).length
    const second = run()
    expect(first.status).toBe(0)
    expect(entries).toBeGreaterThan(0)
    expect(second.stdout).toBe(first.stdout)
    expect(readdirSync(cache)).toHaveLength(entries)
  })
})
