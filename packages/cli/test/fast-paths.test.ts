import { describe, expect, it } from "vitest"
import { fastPathOf } from "../src/plain-forms.js"
import { homeWith, stoat, vmToml } from "./helpers.js"

describe("the plain forms served without oclif", () => {
  it.each([
    [["ls"], { kind: "ls" }],
    [["list", "--quiet"], { kind: "ls" }],
    [["ls", "--all"], undefined],
    [["mcp"], { kind: "mcp" }],
    [["mcp", "serve"], { kind: "mcp" }],
    [["mcp", "serve", "--http", "0"], undefined],
    [["mcp", "install"], undefined],
    [["up", "dev"], { kind: "up", vm: "dev", wait: undefined, quiet: false }],
    [["start", "dev", "--wait"], { kind: "up", vm: "dev", wait: true, quiet: false }],
    [["up", "--no-wait", "dev"], { kind: "up", vm: "dev", wait: false, quiet: false }],
    [["up", "dev", "--quiet"], { kind: "up", vm: "dev", wait: undefined, quiet: true }],
    [["up"], undefined],
    [["up", "dev", "--timeout", "5m"], undefined],
    [["up", "dev", "-y"], undefined],
    [["up", "dev", "--wait", "--no-wait"], undefined],
    [["up", "a", "b"], undefined],
    [["up", "dev", "--"], undefined],
    [["down", "dev"], undefined]
  ])("%j → %j", (words, fast) => {
    expect(fastPathOf(words, false)).toEqual(fast)
  })

  it("never takes one for help", () => {
    expect(fastPathOf(["ls"], true)).toBeUndefined()
    expect(fastPathOf(["up", "dev"], true)).toBeUndefined()
  })

  // `-y` changes nothing for these VMs, and sends the same command through oclif: both answers must match.
  it.each([
    ["a VM that does not exist", ["up", "nosuch"]],
    ["a broken VM", ["up", "broken"]],
    ["a name that is not one", ["up", "../x"]],
    ["the start alias", ["start", "nosuch", "--no-wait"]],
    ["a quiet word before the command", ["-q", "up", "nosuch"]]
  ])(
    "%s: the same stdout, stderr and exit status as the oclif command, in JSON and for people",
    async (_what, words) => {
      const home = homeWith({ "broken/vm.toml": "[[[", "ok/vm.toml": vmToml("ok", 2299) })
      for (const json of [[], ["--json"]]) {
        const fast = await stoat([...words, ...json], { STOAT_HOME: home })
        const oclif = await stoat([...words, ...json, "-y"], { STOAT_HOME: home })
        expect(fast).toEqual(oclif)
        expect(fast.code).not.toBe(0)
      }
    }
  )
})
