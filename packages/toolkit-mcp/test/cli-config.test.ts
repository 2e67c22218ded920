import { existsSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import Database from "better-sqlite3"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { tempHome, toolkit, type Home } from "./helpers.js"

/** `toolkit config …` (reference A5) against the real binary and a temporary XDG_CONFIG_HOME. */

let home: Home
beforeEach(() => {
  home = tempHome()
})
afterEach(() => home.cleanup())

const TEXT = `${Array.from({ length: 120 }, () => "word").join(" ")}.`
const readingTime = async (...extra: string[]): Promise<string> => {
  const run = await toolkit(home, ["strings", "report", "--string", TEXT, ...extra])
  return /^Est\. reading time: +(\S+)$/m.exec(run.stdout)?.[1] ?? run.stdout
}

describe("config: show, set, unset", () => {
  it("shows nothing configured without creating the database", async () => {
    expect(await toolkit(home, ["config", "strings", "report"])).toMatchObject({
      code: 0,
      stdout: "No configured defaults for strings report\n"
    })
    expect(await toolkit(home, ["config"])).toMatchObject({ code: 0, stdout: "No configured defaults\n" })
    await toolkit(home, ["strings", "report", "--string", "x"])
    expect(existsSync(home.db)).toBe(false)
  })

  it("sets a value at action level and shows where effective values come from", async () => {
    expect(await toolkit(home, ["config", "strings", "report", "--words-per-minute", "60"])).toMatchObject({
      code: 0,
      stdout: "Set strings report --words-per-minute = 60\n"
    })
    expect((await toolkit(home, ["config", "strings", "report"])).stdout).toBe(
      "--words-per-minute = 60 (from: strings report)\n"
    )
    expect(await readingTime()).toBe("2m")
    // The command line beats the configured default.
    expect(await readingTime("--words-per-minute", "240")).toBe("30s")
  })

  it("applies precedence action > topic > built-in", async () => {
    await toolkit(home, ["config", "strings", "--words-per-minute", "120"])
    expect(await readingTime()).toBe("1m")
    await toolkit(home, ["config", "strings", "report", "--words-per-minute", "60"])
    expect(await readingTime()).toBe("2m")
    expect((await toolkit(home, ["config", "strings", "report"])).stdout).toBe(
      "--words-per-minute = 60 (from: strings report)\n"
    )
    expect(await toolkit(home, ["config", "strings", "report", "--unset", "words-per-minute"])).toMatchObject({
      stdout: "Unset strings report --words-per-minute\n"
    })
    expect((await toolkit(home, ["config", "strings", "report"])).stdout).toBe(
      "--words-per-minute = 120 (from: strings)\n"
    )
    expect(await readingTime()).toBe("1m")
    await toolkit(home, ["config", "strings", "--unset", "words-per-minute"])
    expect(await readingTime()).toBe("31s")
    expect(await toolkit(home, ["config", "strings", "--unset", "words-per-minute"])).toMatchObject({
      code: 0,
      stdout: "strings --words-per-minute was not set\n"
    })
  })

  it("applies a group level to the actions below it, and booleans", async () => {
    await toolkit(home, ["config", "oauth", "profile", "--scope", "read write"])
    await toolkit(home, [
      "oauth",
      "profile",
      "add",
      "--name",
      "p",
      "--token-url",
      "http://127.0.0.1:1/t",
      "--client-id",
      "c",
      "--client-secret",
      "s"
    ])
    expect((await toolkit(home, ["oauth", "profile", "list"])).stdout).toContain("  scope: read write\n")
    expect((await toolkit(home, ["config", "strings", "levenshtein-distance", "--ignore-case"])).stdout).toBe(
      "Set strings levenshtein-distance --ignore-case = true\n"
    )
    expect(
      (await toolkit(home, ["strings", "levenshtein-distance", "--string1", "AB", "--string2", "ab"])).stdout
    ).toBe("Levenshtein distance: 0\n")
    expect(
      (
        await toolkit(home, [
          "strings",
          "levenshtein-distance",
          "--string1",
          "AB",
          "--string2",
          "ab",
          "--ignore-case",
          "false"
        ])
      ).stdout
    ).toBe("Levenshtein distance: 2\n")
    expect((await toolkit(home, ["config", "demoscene", "--frames", "5"])).stdout).toBe("Set demoscene --frames = 5\n")
    expect((await toolkit(home, ["config", "demoscene", "fire"])).stdout).toBe("--frames = 5 (from: demoscene)\n")
    expect((await toolkit(home, ["config"])).stdout).toBe(
      'strings levenshtein-distance --ignore-case = true\ndemoscene --frames = 5\noauth profile --scope = "read write"\n'
    )
  })

  it("stores one table per topic with JSON token arrays, in a private file", async () => {
    await toolkit(home, ["config", "strings", "report", "--words-per-minute", "90"])
    await toolkit(home, ["config", "web", "serve-html", "--port", "9000"])
    const db = new Database(home.db, { readonly: true })
    expect(db.prepare(`SELECT action, option, value FROM "strings"`).all()).toEqual([
      { action: "report", option: "words-per-minute", value: '["90"]' }
    ])
    expect(db.prepare(`SELECT action, option, value FROM "web"`).all()).toEqual([
      { action: "serve-html", option: "port", value: '["9000"]' }
    ])
    db.close()
  })

  it("uses ~/.config/toolkit when XDG_CONFIG_HOME is not set", async () => {
    const env = { ...home.env }
    delete env["XDG_CONFIG_HOME"]
    await toolkit(home, ["config", "strings", "report", "--words-per-minute", "90"], { env })
    expect(existsSync(join(env["HOME"]!, ".config", "toolkit", "config.db"))).toBe(true)
    expect(existsSync(home.db)).toBe(false)
  })
})

describe("config: validation", () => {
  it("checks values with the option's own parser and writes nothing if any fails", async () => {
    const run = await toolkit(home, ["config", "strings", "report", "--words-per-minute", "fast", "--string", "ok"])
    expect(run.code).toBe(1)
    expect(run.stdout).toBe(
      "Error: invalid value for strings report --words-per-minute: Expected an integer but received: fast\n"
    )
    expect(existsSync(home.db)).toBe(false)
    expect((await toolkit(home, ["config", "strings", "reverse", "--unit", "word"])).code).toBe(1)
    expect((await toolkit(home, ["config", "strings", "report", "--words-per-minute", "0"])).code).toBe(1) // below the minimum
  })

  it("refuses required, immutable, unknown and reserved options", async () => {
    expect(await toolkit(home, ["config", "interpreters", "brainfuck", "--file", "x.bf"])).toMatchObject({
      code: 1,
      stdout: "Error: --file is required by interpreters brainfuck and cannot have a default\n"
    })
    expect(await toolkit(home, ["config", "oauth", "profile", "add", "--client-secret", "x"])).toMatchObject({
      code: 1,
      stdout: "Error: --client-secret of oauth profile add cannot be configured\n"
    })
    expect(await toolkit(home, ["config", "strings", "--nope", "1"])).toMatchObject({
      code: 1,
      stdout: "Error: --nope is not an option of strings\n"
    })
    expect((await toolkit(home, ["config", "strings", "--unset"])).code).toBe(1)
  })

  it("refuses options without a level instead of ignoring them", async () => {
    expect(await toolkit(home, ["config", "--x", "1"])).toMatchObject({
      code: 1,
      stdout: "Error: options need a level: toolkit config <topic> [group...] [action] --option value\n"
    })
    expect(await toolkit(home, ["config", "--unset", "x"])).toMatchObject({ code: 1 })
    expect(existsSync(home.db)).toBe(false)
  })

  it("stores a value that looks like an option as the value it is", async () => {
    expect(await toolkit(home, ["config", "strings", "report", "--string=--string"])).toMatchObject({
      code: 0,
      stdout: "Set strings report --string = --string\n"
    })
    expect((await toolkit(home, ["strings", "report"])).stdout).toMatch(/^Characters \(with spaces\): +8$/m)
  })

  it("refuses config itself, mcp and unknown levels", async () => {
    expect((await toolkit(home, ["config", "config"])).code).toBe(1)
    expect(await toolkit(home, ["config", "mcp", "serve", "--port", "1"])).toMatchObject({
      code: 1,
      stdout: "Error: the mcp topic has no configurable options\n"
    })
    expect(await toolkit(home, ["config", "nope"])).toMatchObject({
      code: 1,
      stdout: "Error: unknown config level 'nope'\n"
    })
    expect((await toolkit(home, ["config", "strings", "nope"])).code).toBe(1)
  })
})

describe("config: options that exclude each other", () => {
  it("a command-line value wins over the default of an option it excludes", async () => {
    home.file("text.txt", "One two three.")
    expect((await toolkit(home, ["config", "strings", "report", "--in-file", "text.txt"])).code).toBe(0)
    expect((await toolkit(home, ["strings", "report"])).stdout).toMatch(/^Words: +3$/m) // the default file
    const run = await toolkit(home, ["strings", "report", "--string", "hi"])
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(/^Words: +1$/m)
  })

  it("refuses defaults for both, at once or one after the other, at any levels", async () => {
    const both =
      "Error: --in-file and --string of strings report cannot both have defaults: the command takes only one of them\n"
    expect(await toolkit(home, ["config", "strings", "report", "--in-file", "a.txt", "--string", "b"])).toMatchObject({
      code: 1,
      stdout: both
    })
    expect(existsSync(home.db)).toBe(false)
    expect((await toolkit(home, ["config", "strings", "report", "--in-file", "a.txt"])).code).toBe(0)
    expect(await toolkit(home, ["config", "strings", "report", "--string", "b"])).toMatchObject({
      code: 1,
      stdout: both
    })
    expect(await toolkit(home, ["config", "strings", "--string", "b"])).toMatchObject({ code: 1, stdout: both })
    // Unsetting one in the same request makes room for the other.
    expect(await toolkit(home, ["config", "strings", "report", "--unset", "in-file", "--string", "b"])).toMatchObject({
      code: 0,
      stdout: "Set strings report --string = b\nUnset strings report --in-file\n"
    })
  })
})

describe("config: broken stores", () => {
  it("warns about unknown rows and ignores them", async () => {
    await toolkit(home, ["config", "strings", "report", "--words-per-minute", "60"])
    const db = new Database(home.db)
    db.prepare(`INSERT INTO "strings" VALUES ('', 'gone', '["1"]')`).run()
    db.close()
    const run = await toolkit(home, ["strings", "report", "--string", TEXT])
    expect(run.code).toBe(0)
    expect(run.stderr).toBe("Warning: ignoring unknown config entry strings --gone\n")
    expect(run.stdout).toMatch(/^Est\. reading time: +2m$/m)
  })

  it("fails only the commands using a stored value that no longer parses", async () => {
    await toolkit(home, ["config", "strings", "report", "--words-per-minute", "60"])
    const db = new Database(home.db)
    db.prepare(`UPDATE "strings" SET value = '["abc"]'`).run()
    db.close()
    expect(await toolkit(home, ["strings", "report", "--string", "x"])).toMatchObject({
      code: 1,
      stdout:
        "Error: Configured default for strings report --words-per-minute is invalid: Expected an integer but received: abc\n"
    })
    // Given on the command line, the stored value is not used.
    expect((await toolkit(home, ["strings", "report", "--string", "x", "--words-per-minute", "100"])).code).toBe(0)
    expect((await toolkit(home, ["strings", "levenshtein-distance", "--string1", "a", "--string2", "b"])).code).toBe(0)
  })

  it("reports an unreadable database", async () => {
    await toolkit(home, ["config", "strings", "report", "--words-per-minute", "60"])
    writeFileSync(home.db, "garbage that is certainly not an SQLite database header, long enough......")
    const run = await toolkit(home, ["strings", "report", "--string", "x"])
    expect(run.code).toBe(1)
    expect(run.stdout).toBe(`Error: config database ${home.db} is unreadable: file is not a database\n`)
  })
})
