/**
 * A way back from what crashes and damage leave: a QEMU whose pidfile was overwritten, a running
 * VM whose vm.toml broke, a QEMU killed with SIGKILL. Real tiny guests under QEMU, the real binary.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { e2eEnv, requireQemu, result, stoat, tempHome } from "../helpers.js"

const home = tempHome()
const env = e2eEnv(home)
const run = async (...args: string[]) => result((await stoat(["--json", ...args], env)).stdout)
const json = async (...args: string[]) => {
  const envelope = await run(...args)
  if (!envelope["ok"]) throw new Error(`stoat ${args.join(" ")} failed: ${JSON.stringify(envelope["error"])}`)
  return envelope["data"]
}
const listed = async (name: string) =>
  ((await json("ls")).vms as Array<Record<string, any>>).find((vm) => vm.name === name)
const pidfile = (vm: string) => join(home, vm, "qemu.pid")

/** The processes running QEMU for this VM, found the way a person would: by the pidfile argument on their command line. */
const qemuOf = (vm: string): number[] =>
  readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")
        return argv[argv.indexOf("-pidfile") + 1] === pidfile(vm)
      } catch {
        return false
      }
    })
    .map(Number)

const gone = async (pid: number) => {
  while (existsSync(`/proc/${pid}/cmdline`) && readFileSync(`/proc/${pid}/cmdline`, "utf8") !== "")
    await new Promise((resolve) => setTimeout(resolve, 50))
}

const vmsCheck = async () =>
  ((await json("doctor")).checks as Array<{ name: string; ok: boolean; detail: string; fix: string[] }>).find(
    (check) => check.name === "vms"
  )!

describe("fault recovery with the tiny guest", () => {
  beforeAll(() => requireQemu())
  afterAll(async () => {
    for (const vm of ["orphan", "brittle", "crashy"]) for (const pid of qemuOf(vm)) process.kill(pid, "SIGKILL")
  })

  it("a garbage pidfile orphans nothing: ls says running, up starts nothing and moves no port, doctor names it, down stops it", async () => {
    await json("create", "orphan", "--image", "tiny")
    await json("up", "orphan", "--no-wait")
    const [pid] = qemuOf("orphan")
    expect(pid).toBeGreaterThan(0)
    const settings = readFileSync(join(home, "orphan", "vm.toml"), "utf8")
    writeFileSync(pidfile("orphan"), "garbage\n")

    expect(await listed("orphan")).toMatchObject({ state: "running" })
    expect((await listed("orphan"))?.["error"]).toBeUndefined()
    expect((await json("up", "orphan", "--no-wait")).vm).toMatchObject({ state: "running" })
    expect(qemuOf("orphan")).toEqual([pid])
    expect(readFileSync(join(home, "orphan", "vm.toml"), "utf8")).toBe(settings)
    const check = await vmsCheck()
    expect(check.ok).toBe(false)
    expect(check.detail).toContain(`orphan's QEMU (pid ${pid}) runs without a pidfile naming it`)
    expect(check.fix).toContain("stoat down orphan  # then stoat up orphan")

    expect((await json("down", "orphan")).vm).toMatchObject({ state: "stopped" })
    await gone(pid!)
    expect(qemuOf("orphan")).toEqual([])
    expect(existsSync(pidfile("orphan"))).toBe(false)
    const after = await listed("orphan")
    expect(after).toMatchObject({ state: "stopped" })
    expect(after?.["error"]).toBeUndefined()
    expect((await vmsCheck()).ok).toBe(true)
  })

  it("a running VM whose vm.toml broke is listed as still running, stopped by down, then removed", async () => {
    await json("create", "brittle", "--image", "tiny")
    await json("up", "brittle", "--no-wait")
    const [pid] = qemuOf("brittle")
    writeFileSync(join(home, "brittle", "vm.toml"), "name = [not toml")

    const broken = await listed("brittle")
    expect(broken).toMatchObject({ state: "broken" })
    expect(broken?.["error"]).toContain("its QEMU still runs: stop it with stoat down brittle")
    expect((await run("rm", "brittle", "-y"))["error"]).toMatchObject({ code: "already_running" })
    expect((await vmsCheck()).detail).toContain("brittle runs but its vm.toml is broken")
    // prune never takes a running VM's folder.
    expect(((await json("prune", "--broken")).items as Array<{ path: string }>).map((item) => item.path)).not.toContain(
      join(home, "brittle")
    )

    expect((await json("down", "brittle")).vm).toMatchObject({ name: "brittle", state: "broken" })
    await gone(pid!)
    expect(qemuOf("brittle")).toEqual([])
    expect(await json("rm", "brittle", "-y")).toEqual({ deleted: true, name: "brittle" })
    expect(existsSync(join(home, "brittle"))).toBe(false)
  })

  it("a SIGKILLed QEMU reads as stopped without a shutdown (health failed) until prune removes what it left", async () => {
    await json("create", "crashy", "--image", "tiny")
    await json("up", "crashy", "--no-wait")
    const [pid] = qemuOf("crashy")
    process.kill(pid!, "SIGKILL")
    await gone(pid!)

    const crashed = await listed("crashy")
    expect(crashed).toMatchObject({ state: "stopped" })
    expect(crashed?.["error"]).toContain("QEMU ended without a shutdown (killed or crashed)")
    expect((await json("get", "crashy")).vm).toMatchObject({ state: "stopped", health: "failed" })
    expect((await vmsCheck()).detail).toContain("crashy's QEMU ended without a shutdown")
    const leftovers = ["boot.json", "qemu.pid", "qmp.sock", "vnc.sock"].map((file) => join(home, "crashy", file))
    expect(await json("prune")).toEqual({
      dry_run: true,
      items: leftovers.map((path) => ({ class: "crash_leftover", path }))
    })
    for (const path of leftovers) expect(existsSync(path)).toBe(true)

    expect((await json("prune", "--apply")).items).toHaveLength(4)
    for (const path of leftovers) expect(existsSync(path)).toBe(false)
    const cleaned = await listed("crashy")
    expect(cleaned).toMatchObject({ state: "stopped" })
    expect(cleaned?.["error"]).toBeUndefined()
    expect((await json("get", "crashy")).vm.health).toBe("ok")
    expect((await json("prune")).items).toEqual([])
  })
})
