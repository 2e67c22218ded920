import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { e2eEnv, result, requireQemu, stoat, tempHome } from "../helpers.js"

const home = tempHome()
const env = e2eEnv(home)
const dir = realpathSync(mkdtempSync(join(tmpdir(), "stoat-e2e-project-")))

/** Runs stoat in the project folder; answers the result envelope (ok or not) and the exit code. */
const inProject = async (...args: string[]) => {
  const run = await stoat(["--json", ...args], env, "", dir)
  return { code: run.code, envelope: result(run.stdout), stderr: run.stderr }
}
const data = async (...args: string[]) => {
  const { envelope, stderr, code } = await inProject(...args)
  if (!envelope["ok"] || code !== 0)
    throw new Error(`stoat ${args.join(" ")} (exit ${code}) failed: ${JSON.stringify(envelope)}\n${stderr}`)
  return envelope["data"]
}
const timed = async (...args: string[]) => {
  const started = performance.now()
  const out = await data(...args)
  return { out, seconds: (performance.now() - started) / 1000 }
}
const declare = (db: string) =>
  writeFileSync(
    join(dir, "stoat.toml"),
    `schema = 1\n[project]\nname = "e2e"\n[vms.web]\nimage = "tiny"\nram = 256\ncpus = 1\nshares = ["."]\n[vms.db]\nimage = "tiny"\n${db}\n`
  )

const bothOk = (run: { project: string; vms: Array<{ key: string; status: string }> }) => {
  expect(run.project).toBe("e2e")
  expect(run.vms.map((vm) => [vm.key, vm.status])).toEqual([
    ["web", "ok"],
    ["db", "ok"]
  ])
}

describe("a two-VM project on the tiny guest", () => {
  beforeAll(() => requireQemu())
  afterAll(async () => {
    await stoat(["down"], env, "", dir)
    await stoat(["rm", "-y"], env, "", dir)
    rmSync(dir, { recursive: true, force: true })
    rmSync(home, { recursive: true, force: true })
  })

  it("is brought up, drifted, reconciled, restarted serially and in parallel, and torn down", async () => {
    declare("ram = 256\ncpus = 1")
    expect((await data("status")).vms.map((vm: { state: string }) => vm.state)).toEqual(["missing", "missing"])
    // A VM outside the project needs --global here.
    const refused = await inProject("create", "loose", "--image", "tiny")
    expect(refused.code).toBe(1)
    expect(refused.envelope["error"]).toMatchObject({
      code: "invalid_spec",
      message: expect.stringContaining("--global")
    })

    const first = await timed("up")
    bothOk(first.out)
    const status = await data("status")
    expect(status.vms.map((vm: { key: string; name: string; state: string }) => [vm.key, vm.name, vm.state])).toEqual([
      ["web", "e2e-web", "running"],
      ["db", "e2e-db", "running"]
    ])
    // Bare VM arguments are declaration keys: exec reaches the real guest of [vms.web].
    expect((await data("get", "web")).vm).toMatchObject({ name: "e2e-web", key: "web", project: dir })
    expect((await data("exec", "web", "--", "hostname")).stdout.trim()).toBe("e2e-web")
    // The declared share (the project folder) is mounted in the guest, live both ways.
    expect((await data("exec", "web", "--", "cat", "/mnt/share0/stoat.toml")).stdout).toContain('name = "e2e"')
    expect(
      (await data("exec", "web", "--", "sh", "-c", "echo from-guest > /mnt/share0/guest-wrote.txt")).exit_code
    ).toBe(0)
    expect(readFileSync(join(dir, "guest-wrote.txt"), "utf8")).toBe("from-guest\n")
    expect((await data("ls", "--project")).vms.map((vm: { name: string }) => vm.name)).toEqual(["e2e-web", "e2e-db"])

    declare("ram = 320\ncpus = 2")
    const drifted = await data("status")
    expect(drifted.vms[0].drift).toEqual([])
    expect(drifted.vms[1].drift).toEqual([
      { field: "cpus", from: "1", to: "2", needs_restart: true },
      { field: "ram", from: "256", to: "320", needs_restart: true }
    ])
    bothOk(await data("up"))
    expect((await data("status")).vms[1].drift).toEqual([])
    expect((await data("get", "db")).vm).toMatchObject({ cpus: 2, ram_mb: 320 })

    bothOk(await data("down"))
    expect((await data("status")).vms.map((vm: { state: string }) => vm.state)).toEqual(["stopped", "stopped"])
    const serial = await timed("up")
    bothOk(serial.out)
    // The reconciled size is what the guest boots with.
    expect((await data("exec", "db", "--", "nproc")).stdout.trim()).toBe("2")

    bothOk(await data("down"))
    const parallel = await timed("up", "--parallel", "2")
    bothOk(parallel.out)
    // wait and apply fan out over the running VMs too (no recipes declared: nothing to run).
    bothOk(await data("wait", "--timeout", "2m"))
    bothOk(await data("apply"))
    expect((await data("exec", "web", "--", "true")).exit_code).toBe(0)
    expect((await data("exec", "db", "--", "true")).exit_code).toBe(0)
    console.log(
      `project up: first (create + boot) ${first.seconds.toFixed(1)} s; serial restart ${serial.seconds.toFixed(1)} s; --parallel 2 ${parallel.seconds.toFixed(1)} s (ratio ${(parallel.seconds / serial.seconds).toFixed(2)})`
    )

    // rm refuses running VMs (the first stops the run), then works after down.
    const early = await inProject("rm", "-y")
    expect(early.code).toBe(1)
    expect(early.envelope["data"].vms.map((vm: { status: string }) => vm.status)).toEqual(["error", "skipped"])
    bothOk(await data("down"))
    bothOk(await data("rm", "-y"))
    expect((await data("status")).vms.map((vm: { state: string }) => vm.state)).toEqual(["missing", "missing"])
    expect((await data("ls")).vms).toEqual([])
  })
})
