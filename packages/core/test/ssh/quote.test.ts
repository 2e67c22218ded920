import { spawnSync } from "node:child_process"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { guestCommand, shellQuote } from "../../src/ssh/quote.js"
import { script, templateScript } from "../../src/guest/scripts.js"

/** Any word a C argv can carry: every code point but NUL. */
const word = fc.string({ unit: "binary", maxLength: 40 }).filter((w) => !w.includes("\0"))
const words = fc.array(word, { maxLength: 8 })

const sh = (command: string) => spawnSync("/bin/sh", ["-c", command], { encoding: "buffer" })

describe("shellQuote", () => {
  it("single-quotes every word and escapes quotes as '\\''", () => {
    expect(shellQuote(["a b", "it's", "", "$(x)"])).toBe(`'a b' 'it'\\''s' '' '$(x)'`)
  })

  it("is read back by /bin/sh as exactly the same words", () => {
    fc.assert(
      fc.property(words, (argv) => {
        const result = sh(`printf '%s\\0' ${shellQuote(["", ...argv])}`)
        expect(result.status).toBe(0)
        expect(result.stdout.toString("utf8")).toBe(["", ...argv].map((w) => `${w}\0`).join(""))
      }),
      { numRuns: 300 }
    )
  })
})

describe("guestCommand", () => {
  it("runs argv through env and the constant cd script, values arriving verbatim", () => {
    fc.assert(
      fc.property(words, word, (argv, value) => {
        const command = guestCommand(["sh", "-c", 'printf "%s\\0" "$PWD" "$STOAT_V" "$@"', "x", ...argv], {
          cwd: "/",
          env: { STOAT_V: value }
        })
        const result = sh(command)
        expect(result.stdout.toString("utf8")).toBe(["/", value, ...argv].map((w) => `${w}\0`).join(""))
      }),
      { numRuns: 100 }
    )
  })

  it("keeps a command word containing '=' a command under env", () => {
    const command = guestCommand(["A=B"], { env: { X: "1" } })
    expect(command).toBe(`'env' 'X=1' 'sh' '-c' 'exec "$@"' 'stoat_env' 'A=B'`)
    expect(sh(command).stderr.toString()).toMatch(/A=B.*not found/)
  })

  it("refuses what no shell can carry", () => {
    expect(() => guestCommand([])).toThrow(/non-empty/)
    expect(() => guestCommand(["echo", "a\0b"])).toThrow(/NUL/)
    expect(() => guestCommand(["true"], { env: { "BAD-NAME": "x" } })).toThrow(/invalid environment variable name/)
    expect(() => guestCommand(["true"], { env: { "1X": "x" } })).toThrow(/invalid environment variable name/)
  })
})

describe("guest-definition templates", () => {
  const hostile = [
    "it's",
    "$(touch /tmp/stoat-pwned)",
    "`id`",
    "a\nb",
    "-rf",
    "--",
    "a b",
    '"',
    "\\",
    "*",
    "${HOME}",
    ";|&"
  ]

  it("pass any value as $1 ({name}) or as appended arguments, never as shell syntax", () => {
    for (const value of hostile) {
      const withName = sh(guestCommand(script("t", templateScript('printf "%s|" {name} done'), [value])))
      expect(withName.stdout.toString("utf8"), value).toBe(`${value}|done|`)
      const appended = sh(guestCommand(script("t", templateScript('printf "%s|"'), [value])))
      expect(appended.stdout.toString("utf8"), value).toBe(`${value}|`)
    }
  })

  it("are read back exactly for any value (property)", () => {
    fc.assert(
      fc.property(word, (value) => {
        expect(
          sh(guestCommand(script("t", templateScript('printf "%s" {name}'), [value]))).stdout.toString("utf8")
        ).toBe(value)
      }),
      { numRuns: 200 }
    )
  })

  it("a value with NUL cannot be carried and is refused before anything runs", () => {
    expect(() => guestCommand(script("t", templateScript("echo {name}"), ["a\0b"]))).toThrow(/NUL/)
  })
})
