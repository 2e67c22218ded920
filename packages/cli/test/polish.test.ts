/** The small things a person notices at the prompt, without a VM: typos, completion, one grammar, exit codes. */
import { existsSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { result, stoat, tempHome } from "./helpers.js"

describe("a mistyped command", () => {
  it("suggests the command meant, with a hint that works, as usage (exit 2), in text and JSON", async () => {
    const home = tempHome()
    const text = await stoat(["craete", "dev"], { STOAT_HOME: home })
    expect(text.code).toBe(2)
    expect(text.stderr).toContain("stoat: unknown command 'craete'; did you mean 'stoat create'?\nSee 'stoat help'.\n")
    const json = await stoat(["--json", "craete", "dev"], { STOAT_HOME: home })
    expect(json.code).toBe(2)
    expect(result(json.stdout)).toMatchObject({
      ok: false,
      error: { code: "usage", message: "unknown command 'craete'; did you mean 'stoat create'?" }
    })
    const topic = await stoat(["file", "raed", "dev", "/etc/hostname"], { STOAT_HOME: home })
    expect(topic.stderr).toContain("did you mean 'stoat file read'?")
    const nothingClose = await stoat(["zzzzzzzz"], { STOAT_HOME: home })
    expect(nothingClose).toMatchObject({ code: 2 })
    expect(nothingClose.stderr).toContain("stoat: unknown command 'zzzzzzzz'\nSee 'stoat help'.\n")
    // The hint itself runs.
    expect((await stoat(["help"], { STOAT_HOME: home })).code).toBe(0)
  })
})

describe("shell completion", () => {
  it("stoat autocomplete prints a setup script for bash and zsh", async () => {
    const home = tempHome()
    for (const shell of ["bash", "zsh"]) {
      const run = await stoat(["autocomplete", "script", shell], {
        STOAT_HOME: home,
        XDG_CACHE_HOME: join(home, "cache")
      })
      expect(run.code, run.stderr).toBe(0)
      expect(run.stdout).toMatch(/STOAT_AC_.*SETUP_PATH/)
    }
  })
})

describe("one grammar for snapshots and checkpoints", () => {
  it("snapshot ls <vm> and snapshot rm <vm> <tag> name the VM (ls was read as a VM named ls)", async () => {
    const home = tempHome()
    const ls = await stoat(["--json", "snapshot", "ls", "ghost"], { STOAT_HOME: home })
    expect(result(ls.stdout)["error"]).toMatchObject({ code: "not_found", subject: "ghost" })
    const rm = await stoat(["--json", "snapshot", "rm", "ghost", "t1"], { STOAT_HOME: home })
    expect(result(rm.stdout)["error"]).toMatchObject({ code: "not_found", subject: "ghost" })
    const checkpoints = await stoat(["--json", "checkpoint", "ls", "ghost"], { STOAT_HOME: home })
    expect(result(checkpoints.stdout)["error"]).toMatchObject({ code: "not_found", subject: "ghost" })
  })
})

describe("rm with no VM outside a project", () => {
  it("asks for the VM's name (usage, exit 2) instead of talking about this project", async () => {
    const home = tempHome()
    const run = await stoat(["rm"], { STOAT_HOME: home }, "", home)
    expect(run).toMatchObject({
      code: 2,
      stderr:
        "stoat: rm: name the VM to delete: stoat rm <vm> (there is no stoat.toml here, so no project whose VMs rm would delete)\n"
    })
    expect(existsSync(join(home, "stoat.toml"))).toBe(false)
  })
})
