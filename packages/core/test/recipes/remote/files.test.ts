import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Exit } from "effect"
import { describe, expect, it, onTestFinished } from "vitest"
import { toErrorInfo } from "../../../src/errors.js"
import {
  editDeclarations,
  parseIndex,
  parseLock,
  readDeclarations,
  readLock,
  renderLock,
  writeLock
} from "../../../src/recipes/remote/files.js"

const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "stoat-remote-files-"))
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}
const runFail = async (effect: Effect.Effect<unknown, unknown>) => {
  const exit = await Effect.runPromiseExit(effect)
  if (Exit.isSuccess(exit)) throw new Error(`succeeded: ${JSON.stringify(exit.value)}`)
  return toErrorInfo(exit.cause)
}
const COMMIT = "0123456789abcdef0123456789abcdef01234567"
const entry = (over: Record<string, string> = {}) =>
  Object.entries({
    source: "https://example.org/caddy.git",
    ref: "v1",
    commit: COMMIT,
    added: "2026-12-01T10:00:00Z",
    ...over
  })
    .map(([key, value]) => `${key} = ${JSON.stringify(value)}`)
    .join("\n")

describe("stoat.lock", () => {
  it("renders the header, schema 1 and one table per recipe, and parses back to the same pins", async () => {
    const pins = new Map([
      ["zeta", { source: "/srv/zeta", ref: "main", commit: COMMIT, added: "2026-12-01T10:00:00Z" }],
      [
        "caddy",
        { source: "https://example.org/caddy.git", ref: "v1", commit: "f".repeat(40), added: "2026-11-30T09:00:00Z" }
      ]
    ])
    const text = renderLock(pins)
    expect(text.split("\n").slice(0, 2)).toEqual(["# stoat.lock: written by stoat; do not edit", "schema = 1"])
    expect(text.indexOf("[recipes.caddy]")).toBeLessThan(text.indexOf("[recipes.zeta]"))
    const parsed = await Effect.runPromise(parseLock("stoat.lock", text))
    expect(Object.fromEntries(parsed)).toEqual(Object.fromEntries(pins))
  })

  it("refuses a newer schema with the reference's wording", async () => {
    const error = await runFail(parseLock("/p/stoat.lock", "schema = 2\n"))
    expect(error).toMatchObject({
      code: "invalid_spec",
      message: "stoat.lock: schema 2 is newer than this stoat (1)",
      subject: "/p/stoat.lock:schema"
    })
  })

  it.each([
    ["a short commit", `[recipes.caddy]\n${entry({ commit: "abc1234" })}`, "recipes.caddy.commit", "40-hex"],
    [
      "a commit in upper case",
      `[recipes.caddy]\n${entry({ commit: COMMIT.toUpperCase() })}`,
      "recipes.caddy.commit",
      "40-hex"
    ],
    [
      "a time that is not RFC 3339",
      `[recipes.caddy]\n${entry({ added: "yesterday" })}`,
      "recipes.caddy.added",
      "RFC 3339"
    ],
    [
      "a missing source",
      `[recipes.caddy]\nref = "v1"\ncommit = "${COMMIT}"\nadded = "2026-12-01T10:00:00Z"`,
      "recipes.caddy.source",
      "required"
    ],
    ["an unknown key", `[recipes.caddy]\n${entry()}\nextra = 1`, "recipes.caddy.extra", "not a lock entry key"],
    ["a bad recipe name", `[recipes.Caddy]\n${entry()}`, "recipes.Caddy", "lower-case"],
    [
      "a flag-like source",
      `[recipes.caddy]\n${entry({ source: "--upload-pack=touch /tmp/x" })}`,
      "recipes.caddy.source",
      "must not start with '-'"
    ],
    [
      "an ext:: source",
      `[recipes.caddy]\n${entry({ source: "ext::sh -c touch% /tmp/pwned" })}`,
      "recipes.caddy.source",
      "ext::"
    ],
    ["no schema", `[recipes.caddy]\n${entry()}`, "schema", "positive integer"],
    ["broken TOML", "schema = = 1", undefined, ""]
  ])("names the file and the key for %s", async (_what, body, key, why) => {
    const text = body.startsWith("schema") || key === "schema" ? body : `schema = 1\n${body}`
    const error = await runFail(parseLock("/p/stoat.lock", text))
    expect(error.code).toBe("invalid_spec")
    expect(error.subject).toBe(key === undefined ? "/p/stoat.lock" : `/p/stoat.lock:${key}`)
    expect(error.message).toContain("/p/stoat.lock")
    expect(error.message).toContain(why)
  })

  it("is written atomically: a new file replaces the old one (never rewritten in place) and a missing lock pins nothing", async () => {
    const dir = tempDir()
    const file = join(dir, "stoat.lock")
    expect((await Effect.runPromise(readLock(file))).size).toBe(0)
    writeFileSync(file, "old")
    const before = statSync(file).ino
    await Effect.runPromise(
      writeLock(
        file,
        new Map([["caddy", { source: "/srv/caddy", ref: "v1", commit: COMMIT, added: "2026-12-01T10:00:00Z" }]])
      )
    )
    expect(statSync(file).ino).not.toBe(before)
    expect((await Effect.runPromise(readLock(file))).get("caddy")?.commit).toBe(COMMIT)
  })
})

describe("index.toml", () => {
  it("lists entries by name with description and os, ignoring keys a newer index may add", async () => {
    const text = `schema = 1\n[recipes.zed]\nsource = "/srv/zed"\n[recipes.caddy]\nsource = "https://example.org/caddy.git"\ndescription = "web server"\nos = ["debian"]\nstars = 5\n`
    expect(await Effect.runPromise(parseIndex("index.toml", text))).toEqual([
      { name: "caddy", source: "https://example.org/caddy.git", description: "web server", os: ["debian"] },
      { name: "zed", source: "/srv/zed", description: "", os: [] }
    ])
  })

  it.each([
    ["a newer schema", "schema = 2\n", "schema", "index.toml: schema 2 is newer than this stoat (1)"],
    [
      "a source that is not a string",
      "schema = 1\n[recipes.caddy]\nsource = 3\n",
      "recipes.caddy.source",
      "must be a string"
    ],
    ["a missing source", 'schema = 1\n[recipes.caddy]\ndescription = "x"\n', "recipes.caddy.source", "is required"],
    [
      "an os that is not a list of strings",
      'schema = 1\n[recipes.caddy]\nsource = "/s"\nos = "debian"\n',
      "recipes.caddy.os",
      "list of strings"
    ],
    ["a bad recipe name", 'schema = 1\n[recipes."Bad Name"]\nsource = "/s"\n', "recipes.Bad Name", "lower-case"],
    ["recipes that are not a table", "schema = 1\nrecipes = 3\n", "recipes", "must be a table"]
  ])("names the file and the key for %s", async (_what, text, key, why) => {
    const error = await runFail(parseIndex("/i/index.toml", text))
    expect(error).toMatchObject({ code: "invalid_spec", subject: `/i/index.toml:${key}` })
    expect(error.message).toContain(why)
  })
})

describe("stoat.toml [recipes]", () => {
  const PROJECT = `# my project, hand-written\nschema = 1\n\n[project]\nname = "demo" # the name\n\n[recipes]\n# pinned tools\ncaddy = "v1"\n\n[vms.dev]\nimage = "tiny"\nrecipes = ["caddy"]\n`

  it("reads index-name and Git-source declarations; no stoat.toml is no project", async () => {
    const dir = tempDir()
    expect((await Effect.runPromise(readDeclarations(dir)))._tag).toBe("None")
    writeFileSync(
      join(dir, "stoat.toml"),
      `schema = 1\n[recipes]\ncaddy = "v1"\nmine = { source = "/srv/mine", ref = "main" }\nlatest = ""\n`
    )
    const found = await Effect.runPromise(readDeclarations(dir))
    expect(found._tag === "Some" && found.value).toEqual([
      { name: "caddy", ref: "v1" },
      { name: "mine", source: "/srv/mine", ref: "main" },
      { name: "latest", ref: "" }
    ])
  })

  it.each([
    ["a ref with ..", '[recipes]\ncaddy = "v1..v2"\n', "recipes.caddy", "'..'"],
    ["a flag-like source", '[recipes]\nx = { source = "-oProxyCommand=id" }\n', "recipes.x.source", "'-'"],
    [
      "an unknown declaration key",
      '[recipes]\nx = { source = "/s", branch = "main" }\n',
      "recipes.x.branch",
      "not a declaration key"
    ],
    ["a number", "[recipes]\nx = 1\n", "recipes.x", "ref string"]
  ])("refuses %s naming the file and key", async (_what, body, key, why) => {
    const dir = tempDir()
    writeFileSync(join(dir, "stoat.toml"), `schema = 1\n${body}`)
    const error = await runFail(readDeclarations(dir))
    expect(error).toMatchObject({ code: "invalid_spec", subject: `${join(dir, "stoat.toml")}:${key}` })
    expect(error.message).toContain(why)
  })

  it("sets, replaces and removes one declaration and keeps every other line and comment", async () => {
    const added = await Effect.runPromise(
      editDeclarations("stoat.toml", PROJECT, { name: "mine", source: "/srv/mine", ref: "main" })
    )
    expect(added).toBe(
      PROJECT.replace('caddy = "v1"\n', 'caddy = "v1"\nmine = { source = "/srv/mine", ref = "main" }\n')
    )
    const replaced = await Effect.runPromise(editDeclarations("stoat.toml", added, { name: "caddy", ref: "v2" }))
    expect(replaced).toBe(added.replace('caddy = "v1"', 'caddy = "v2"'))
    const removed = await Effect.runPromise(editDeclarations("stoat.toml", replaced, { remove: "caddy" }))
    expect(removed).toBe(added.replace('caddy = "v1"\n', ""))
  })

  it("adds a [recipes] table when there is none, at the end", async () => {
    const text = 'schema = 1\n[project]\nname = "demo"\n'
    expect(await Effect.runPromise(editDeclarations("stoat.toml", text, { name: "caddy", ref: "v1" }))).toBe(
      `${text}\n[recipes]\ncaddy = "v1"\n`
    )
  })

  it("refuses to edit a declaration written as its own table, and writes nothing", async () => {
    const text = 'schema = 1\n[recipes.caddy]\nsource = "/srv/caddy"\nref = "v1"\n'
    const error = await runFail(editDeclarations("stoat.toml", text, { remove: "caddy" }))
    expect(error).toMatchObject({ code: "invalid_spec", subject: "stoat.toml:recipes.caddy" })
    expect(error.message).toContain("edit it by hand")
  })
})
