import { existsSync, mkdirSync, utimesSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { result, stoat, tempHome } from "./helpers.js"

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
    expect(result(run.stdout)["data"]).toEqual({ dry_run: true, items: [{ class: "partial_download", path: join(home, "isos", "old.img.part") }] })
    expect(existsSync(join(home, "isos", "old.img.part"))).toBe(true)
  })

  it("removes broken VMs and orphaned images only with --apply, keeping what a VM names", async () => {
    const home = populated()
    const run = await stoat(["prune", "--broken", "--images", "--apply", "--json"], { STOAT_HOME: home })
    const data = result(run.stdout)["data"]
    expect(data.dry_run).toBe(false)
    expect(data.items.map((item: { class: string }) => item.class)).toEqual(["broken_vm", "orphaned_image", "partial_download"])
    expect(existsSync(join(home, "bad"))).toBe(false)
    expect(existsSync(join(home, "isos", "orphan.qcow2"))).toBe(false)
    expect(existsSync(join(home, "isos", "old.img.part"))).toBe(false)
    // Named by the broken VM's file before it went, and too fresh to be abandoned.
    expect(existsSync(join(home, "isos", "used.qcow2"))).toBe(true)
    expect(existsSync(join(home, "isos", "fresh.img.part"))).toBe(true)
  })
})

describe("stoat capabilities", () => {
  it("reports schema 1 with the unavailable runtime proposals and per-VM access limits", async () => {
    const home = tempHome()
    mkdirSync(join(home, "box"))
    writeFileSync(join(home, "box", "vm.toml"), 'os = "tiny"\nsshport = 2200\nagent_access = "observe"\n')
    const run = await stoat(["capabilities", "box", "--json"], { STOAT_HOME: home })
    const report = result(run.stdout)["data"]
    expect(report).toMatchObject({ schema: 1, target: { name: "box", agent_access: "observe" }, access_policy: { mcp_agent_access_enforced: true } })
    const byName = Object.fromEntries(report.capabilities.map((entry: { name: string }) => [entry.name, entry]))
    expect(byName["mcp.guest.observe"].status).toBe("supported")
    expect(byName["mcp.guest.exec"]).toMatchObject({ status: "limited", limits: [{ code: "agent_access_required", value: "exec" }] })
    expect(report.unavailable.map((entry: { name: string }) => entry.name)).toEqual(["runtime.fork", "runtime.continuation"])
  })
})
