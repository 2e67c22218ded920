import { mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { homeWith, result, stoat, tempHome, vmToml } from "./helpers.js"

/** A project folder (optionally with a stoat.toml) and a data root, for commands run in that folder. */
const project = (toml?: string) => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "stoat-cli-project-")))
  if (toml !== undefined) writeFileSync(join(dir, "stoat.toml"), toml)
  const home = tempHome()
  const run = (...args: string[]) => stoat(args, { STOAT_HOME: home }, "", dir)
  return { dir, home, run }
}

const DECLARED = `schema = 1\n[project]\nname = "cli"\n[vms.dev]\nimage = "tiny"\n[vms.db]\nimage = "tiny"\nram = 512\n`

describe("project commands (no VM started)", () => {
  it("status, ls --project and the no-name fan-outs answer not_found with the init hint outside a project", async () => {
    const p = project()
    for (const args of [["status"], ["ls", "--project"], ["up"], ["down"], ["wait"], ["apply"]]) {
      const run = await p.run("--json", ...args)
      expect(run.code, args.join(" ")).toBe(1)
      expect(result(run.stdout)["error"], args.join(" ")).toMatchObject({
        code: "not_found",
        message: expect.stringContaining("stoat init")
      })
    }
  })

  it("init writes stoat.toml, says where, refuses a second time; status then shows the declaration missing", async () => {
    const p = project()
    mkdirSync(join(p.dir, ".git"))
    const first = await p.run("init")
    expect(first.code).toBe(0)
    expect(first.stdout).toContain(`stoat.toml created in ${p.dir}`)
    expect(readFileSync(join(p.dir, ".gitignore"), "utf8")).toBe(".stoat/\n")
    const again = await p.run("--json", "init")
    expect(again.code).toBe(1)
    expect(result(again.stdout)["error"]["message"]).toContain("already exists")
    const status = await p.run("status")
    expect(status.stdout).toMatch(/^KEY\s+NAME\s+STATE\s+HEALTH\s+DRIFT\n/)
    expect(status.stdout).toMatch(/dev\s+\S+-dev\s+missing\s+unknown\s+-/)
  })

  it("a bare VM argument is a declaration key first, then a global name", async () => {
    const p = project(DECLARED)
    for (const [name, port] of [
      ["cli-dev", 2201],
      ["db", 2202]
    ] as const) {
      mkdirSync(join(p.home, name))
      writeFileSync(join(p.home, name, "vm.toml"), vmToml(name, port))
    }
    expect(result((await p.run("--json", "get", "dev")).stdout)["data"]["vm"]["name"]).toBe("cli-dev")
    // "db" is a key too: it names the declared (not yet created) cli-db, not the global VM db.
    expect(result((await p.run("--json", "get", "db")).stdout)["error"]).toMatchObject({
      code: "not_found",
      subject: "cli-db"
    })
    expect(result((await p.run("--json", "get", "cli-dev")).stdout)["data"]["vm"]["name"]).toBe("cli-dev")
  })

  it("create inside a project needs --global; flags that only fit one form are usage errors", async () => {
    const p = project(DECLARED)
    const refused = await p.run("--json", "create", "loose", "--image", "tiny")
    expect(refused.code).toBe(1)
    expect(result(refused.stdout)["error"]).toMatchObject({
      code: "invalid_spec",
      message: expect.stringContaining("--global")
    })
    expect((await p.run("--json", "up", "dev", "--parallel", "2")).code).toBe(2)
    expect((await p.run("--json", "apply", "--only", "devtools")).code).toBe(2)
    const rm = await p.run("--json", "rm")
    expect(rm.code).toBe(1)
    expect(result(rm.stdout)["error"]["code"]).toBe("confirmation_required")
  })

  it("a malformed stoat.toml is one typed error naming the file and key, for status and for a bare VM argument", async () => {
    const p = project(`schema = 1\n[vms.dev]\nimage = "tiny"\ncpus = "many"\n`)
    for (const args of [["status"], ["get", "dev"]]) {
      const error = result((await p.run("--json", ...args)).stdout)["error"]
      expect(error, args.join(" ")).toMatchObject({
        code: "invalid_spec",
        message: expect.stringContaining(`${join(p.dir, "stoat.toml")}: vms.dev.cpus:`)
      })
    }
  })

  it("outside any project, plain commands are unaffected", async () => {
    const home = homeWith({ "dev/vm.toml": vmToml("dev", 2203) })
    const dir = realpathSync(mkdtempSync(join(tmpdir(), "stoat-cli-plain-")))
    const run = await stoat(["--json", "get", "dev"], { STOAT_HOME: home }, "", dir)
    expect(result(run.stdout)["data"]["vm"]).toMatchObject({
      name: "dev",
      project: "",
      key: "",
      project_missing: false
    })
  })
})
