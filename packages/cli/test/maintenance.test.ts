import { existsSync, mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { homeWith, result, stoat, tempHome, vmToml } from "./helpers.js"

describe("stoat prune", () => {
  const populated = () => {
    const home = tempHome()
    mkdirSync(join(home, "isos"))
    const old = join(home, "isos", "old.img.part")
    writeFileSync(old, "x")
    const past = new Date(Date.now() - 5 * 60 * 1000)
    utimesSync(old, past, past)
    writeFileSync(join(home, "isos", "fresh.img.part"), "x")
    writeFileSync(join(home, "isos", "orphan.qcow2"), "x")
    writeFileSync(join(home, "isos", "used.qcow2"), "x")
    mkdirSync(join(home, "bad"))
    writeFileSync(join(home, "bad", "vm.toml"), 'base = "/x/isos/used.qcow2"\n[[[')
    return home
  }

  it("is a dry run by default and lists only old partial downloads without flags", async () => {
    const home = populated()
    const run = await stoat(["prune", "--json"], { STOAT_HOME: home })
    expect(result(run.stdout)["data"]).toEqual({
      dry_run: true,
      items: [{ class: "partial_download", path: join(home, "isos", "old.img.part") }]
    })
    expect(existsSync(join(home, "isos", "old.img.part"))).toBe(true)
  })

  it("removes broken VMs and orphaned images only with --apply, keeping what a VM names", async () => {
    const home = populated()
    const run = await stoat(["prune", "--broken", "--images", "--apply", "--json"], { STOAT_HOME: home })
    const data = result(run.stdout)["data"]
    expect(data.dry_run).toBe(false)
    expect(data.items.map((item: { class: string }) => item.class)).toEqual([
      "broken_vm",
      "orphaned_image",
      "partial_download"
    ])
    expect(existsSync(join(home, "bad"))).toBe(false)
    expect(existsSync(join(home, "isos", "orphan.qcow2"))).toBe(false)
    expect(existsSync(join(home, "isos", "old.img.part"))).toBe(false)
    // Named by the broken VM's file before it went, and too fresh to be abandoned.
    expect(existsSync(join(home, "isos", "used.qcow2"))).toBe(true)
    expect(existsSync(join(home, "isos", "fresh.img.part"))).toBe(true)
  })
})

describe("stoat capabilities", () => {
  it("reports schema 1 with checkpoints and forks available, the remaining runtime proposal unavailable, and per-VM access limits", async () => {
    const home = homeWith({ "box/vm.toml": 'os = "tiny"\nsshport = 2200\nagent_access = "observe"\n' })
    const run = await stoat(["capabilities", "box", "--json"], { STOAT_HOME: home })
    const report = result(run.stdout)["data"]
    expect(report).toMatchObject({
      schema: 1,
      target: { name: "box", agent_access: "observe" },
      access_policy: { mcp_agent_access_enforced: true }
    })
    const byName = Object.fromEntries(report.capabilities.map((entry: { name: string }) => [entry.name, entry]))
    expect(byName["mcp.guest.observe"].status).toBe("supported")
    expect(byName["mcp.guest.exec"]).toMatchObject({
      status: "limited",
      limits: [{ code: "agent_access_required", value: "exec" }]
    })
    expect(byName["vm.fork"]).toMatchObject({ status: "supported", scope: "vm" })
    expect(byName["vm.checkpoint"]).toMatchObject({ status: "supported", scope: "vm" })
    expect(report.unavailable.map((entry: { name: string }) => entry.name)).toEqual(["runtime.continuation"])
  })
})

describe("broken and racing VMs", () => {
  it("a VM folder whose vm.toml is a directory lists as broken and can be pruned or removed", async () => {
    const home = homeWith({ "good/vm.toml": vmToml("good", 2201) })
    mkdirSync(join(home, "odd", "vm.toml"), { recursive: true })
    const ls = await stoat(["ls", "--json"], { STOAT_HOME: home })
    expect(ls.code).toBe(0)
    expect(result(ls.stdout)["data"]["vms"]).toMatchObject([
      { name: "good", state: "stopped" },
      { name: "odd", state: "broken", error: "vm.toml is a directory, not a file" }
    ])
    expect((await stoat(["ls"], { STOAT_HOME: home })).stdout).toMatch(
      /^odd: broken: vm\.toml is a directory, not a file$/m
    )
    const dry = await stoat(["prune", "--broken", "--json"], { STOAT_HOME: home })
    expect(result(dry.stdout)["data"]["items"]).toEqual([{ class: "broken_vm", path: join(home, "odd") }])
    const rm = await stoat(["rm", "-y", "odd", "--json"], { STOAT_HOME: home })
    expect(result(rm.stdout)).toMatchObject({ ok: true, data: { deleted: true, name: "odd" } })
    mkdirSync(join(home, "odd2", "vm.toml"), { recursive: true })
    const applied = await stoat(["prune", "--broken", "--apply", "--json"], { STOAT_HOME: home })
    expect(result(applied.stdout)).toMatchObject({
      ok: true,
      data: { dry_run: false, items: [{ class: "broken_vm" }] }
    })
    expect(
      readdirSync(home).filter(
        (entry) => !["shared", "isos", "logs", "recipes"].includes(entry) && !entry.startsWith(".")
      )
    ).toEqual(["good"])
  })

  it("ten parallel rm -y of one VM: exactly one deleted, the rest not_found", async () => {
    const home = homeWith({ "v1/vm.toml": vmToml("v1", 2202) })
    const runs = await Promise.all(
      Array.from({ length: 10 }, () => stoat(["rm", "-y", "v1", "--json"], { STOAT_HOME: home }))
    )
    const outcomes = runs.map((run) => result(run.stdout))
    expect(outcomes.filter((outcome) => outcome["ok"] === true)).toEqual([
      { v: 3, type: "result", cmd: "rm", ok: true, data: { deleted: true, name: "v1" } }
    ])
    expect(outcomes.filter((outcome) => outcome["ok"] === false).map((outcome) => outcome["error"]["code"])).toEqual(
      Array(9).fill("not_found")
    )
    expect(runs.map((run) => run.code).sort()).toEqual([0, ...Array(9).fill(1)])
    expect(existsSync(join(home, "v1"))).toBe(false)
  })

  it("update on a VM whose os names no guest answers broken and writes nothing", async () => {
    const text = vmToml("odd", 2203).replace('os = "tiny"', 'os = "nope"')
    const home = homeWith({ "odd/vm.toml": text })
    const run = await stoat(["update", "odd", "--cpus", "2", "--json"], { STOAT_HOME: home })
    expect(run.code).toBe(1)
    expect(result(run.stdout)["error"]).toMatchObject({ code: "broken", subject: "odd" })
    expect(readFileSync(join(home, "odd", "vm.toml"), "utf8")).toBe(text)
  })

  it("a .lock that is a directory is invalid_spec naming the path", async () => {
    const home = homeWith({ "v1/vm.toml": vmToml("v1", 2204) })
    mkdirSync(join(home, ".lock"))
    const run = await stoat(["rm", "-y", "v1", "--json"], { STOAT_HOME: home })
    expect(run.code).toBe(1)
    expect(result(run.stdout)["error"]).toMatchObject({
      code: "invalid_spec",
      message: `cannot use the lock file ${join(home, ".lock")}: it is a directory; remove it and stoat will recreate it`
    })
    expect(existsSync(join(home, "v1", "vm.toml"))).toBe(true)
  })
})

describe("create and update input", () => {
  it("refuses disk sizes out of 64M..64T and --cpus over 255 as bad input (usage, exit 2) naming the allowed range, creating nothing", async () => {
    const home = tempHome()
    for (const disk of ["999999999999999999999G", "100", "1K", "8"]) {
      const run = await stoat(["create", "box", "--image", "tiny", "--disk", disk, "--json"], { STOAT_HOME: home })
      expect(run.code, disk).toBe(2)
      expect(result(run.stdout)["error"]).toMatchObject({
        code: "usage",
        message: expect.stringMatching(/^invalid input for create: disk must be 64M\.\.64T, got /)
      })
    }
    const text = await stoat(["create", "box", "--image", "tiny", "--disk", "10M"], { STOAT_HOME: home })
    expect(text).toMatchObject({
      code: 2,
      stderr: "stoat: create: invalid input for create: disk must be 64M..64T, got 10M\n"
    })
    const cpus = await stoat(["create", "box", "--image", "tiny", "--cpus", "256"], { STOAT_HOME: home })
    expect(cpus).toMatchObject({
      code: 2,
      stderr: "stoat: create: invalid input for create: cpus must be 1..255, got 256\n"
    })
    expect(existsSync(join(home, "box"))).toBe(false)
  })

  it("update with the value a VM already has reports no change; out-of-range values name the field and range", async () => {
    const text = vmToml("a", 2205)
    const home = homeWith({ "a/vm.toml": text })
    const same = await stoat(["update", "a", "--cpus", "1", "--json"], { STOAT_HOME: home })
    expect(result(same.stdout)["data"]).toMatchObject({ changed: [], applies_at: "now" })
    expect(readFileSync(join(home, "a", "vm.toml"), "utf8")).toBe(text)
    expect((await stoat(["update", "a", "--cpus", "1"], { STOAT_HOME: home })).stdout).toBe("a: nothing changed\n")
    const big = await stoat(["update", "a", "--cpus", "9999"], { STOAT_HOME: home })
    // The bound is the operation's schema's (Cpus), in the words MCP callers get too.
    expect(big).toMatchObject({
      code: 2,
      stderr: "stoat: update: invalid input for update: cpus must be 1..255, got 9999\n"
    })
  })

  it("--recipes takes one value (a comma list), not the words after it", async () => {
    const home = tempHome()
    // The word after the value is the VM name: CON is refused as a name, not taken as a recipe.
    const run = await stoat(["create", "--recipes", "foo", "CON", "--image", "tiny", "--json"], { STOAT_HOME: home })
    expect(result(run.stdout)["error"]).toMatchObject({ code: "invalid_spec", subject: "CON" })
    const csv = await stoat(["create", "box", "--recipes", "foo,bar", "--image", "tiny", "--json"], {
      STOAT_HOME: home
    })
    expect(result(csv.stdout)["error"]).toMatchObject({ code: "not_found", subject: "foo" })
    // oclif's note that a list flag swallows the arguments after it would now be wrong.
    const missing = await stoat(["create", "--recipes", "foo", "--json"], { STOAT_HOME: home })
    expect(result(missing.stdout)["error"]).toEqual({
      code: "usage",
      message: "Missing 1 required arg:\nname  new VM name"
    })
  })
})
