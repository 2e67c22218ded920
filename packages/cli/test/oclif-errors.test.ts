import { Errors, Flags, Parser } from "@oclif/core"
import { describe, expect, it } from "vitest"
import { waitTimeoutFlag } from "../src/flags.js"
import { oclifFailure } from "../src/oclif-errors.js"

/** What oclif's own parser throws for these words, as `run` would hand it to main. */
const parseError = async (argv: string[], flags: Parser.Input<any, any, any>["flags"] = {}): Promise<unknown> =>
  Parser.parse(argv, { flags, args: {}, strict: true }).then(
    () => expect.fail(`${argv.join(" ")} parsed`),
    (error: unknown) => error
  )

describe("oclifFailure: main's answer to what oclif threw, by class and exit status", () => {
  it("an unknown flag, an extra argument and a bad integer are usage errors, in one line naming the flag", async () => {
    expect(oclifFailure(await parseError(["--nope"]))).toEqual({ kind: "usage", message: "Nonexistent flag: --nope" })
    expect(oclifFailure(await parseError(["extra"]))).toEqual({ kind: "usage", message: "Unexpected argument: extra" })
    expect(oclifFailure(await parseError(["--ram", "lots"], { ram: Flags.integer() }))).toEqual({
      kind: "usage",
      message: "--ram: Expected an integer but received: lots"
    })
  })

  it("a value stoat's own flag refuses is a usage error too", async () => {
    expect(oclifFailure(await parseError(["--timeout", "soon"], { timeout: waitTimeoutFlag("how long") }))).toEqual({
      kind: "usage",
      message: '--timeout: expected a positive duration like 2m or 90s, got "soon"'
    })
  })

  it("a command's exit, the not-found plugin's 127, and anything else", () => {
    expect(oclifFailure(new Errors.ExitError(3))).toEqual({ kind: "exit", code: 3 })
    expect(oclifFailure(new Errors.CLIError("not a stoat command", { exit: 127 }))).toEqual({ kind: "unknown-command" })
    expect(oclifFailure(new Errors.CLIError("it broke", { exit: 1 }))).toEqual({
      kind: "internal",
      message: "it broke",
      code: 1
    })
    // A bug's message that reads like a parser's is still a bug.
    expect(oclifFailure(new Error("Expected a string, got undefined"))).toEqual({
      kind: "internal",
      message: "Expected a string, got undefined",
      code: 1
    })
    expect(oclifFailure("thrown text")).toEqual({ kind: "internal", message: "thrown text", code: 1 })
  })
})
