import { execFileSync } from "node:child_process"
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync
} from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Either, Layer, Option } from "effect"
import { describe, expect, it, onTestFinished } from "vitest"
import {
  capabilities,
  createVm,
  execInGuest,
  getVm,
  listVms,
  projectApply,
  projectDown,
  projectInit,
  projectRm,
  projectStatus,
  projectUp,
  projectVms,
  projectWait,
  startVm,
  updateVm,
  type Operation
} from "../../src/operations/index.js"
import { CannotReach, checkHostAt } from "../../src/errors.js"
import { projectOf } from "../../src/projects/file.js"
import { projectScopeLayer } from "../../src/projects/service.js"
import { defaultExecHandler } from "../../src/testing/index.js"
import { harness } from "../harness.js"

/** A lifecycle harness whose frontend stands in a fresh project folder (its working directory). */
const projectHarness = (toml?: string) => {
  const h = harness()
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "stoat-project-")))
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
  const base = h.layer
  h.layer = () => Layer.merge(base(), projectScopeLayer(dir)) as never
  const write = (text: string) => writeFileSync(join(dir, "stoat.toml"), text)
  if (toml !== undefined) write(toml)
  return Object.assign(h, { dir, write })
}

const TWO = `schema = 1
[project]
name = "demo"
[vms.web]
image = "tiny"
[vms.db]
image = "tiny"
ram = 512
`

describe("stoat.toml decoding", () => {
  it.each([
    ["no schema", `[vms.dev]\nimage = "tiny"\n`, "schema"],
    ["a newer schema", `schema = 3\n`, "schema"],
    ["a wrong type", `schema = 1\n[vms.dev]\nimage = "tiny"\nram = "big"\n`, "vms.dev.ram"],
    ["RAM below the floor", `schema = 1\n[vms.dev]\nimage = "tiny"\nram = 64\n`, "vms.dev.ram"],
    ["an unknown key", `schema = 1\n[vms.dev]\nimage = "tiny"\nmemory = 1\n`, "vms.dev.memory"],
    ["no image", `schema = 1\n[vms.dev]\ncpus = 1\n`, "vms.dev.image"],
    ["provider under schema 1", `schema = 1\n[vms.dev]\nimage = "tiny"\nprovider = "qemu"\n`, "vms.dev.provider"],
    ["a bad key", `schema = 1\n[vms.Dev]\nimage = "tiny"\n`, "vms.Dev"],
    ["a key with an underscore", `schema = 1\n[vms.a_b]\nimage = "tiny"\n`, "vms.a_b"],
    ["a key with a leading dash", `schema = 1\n[vms."-x"]\nimage = "tiny"\n`, "vms.-x"],
    ["a key with regex syntax", `schema = 1\n[vms."a(["]\nimage = "tiny"\n`, "vms.a(["],
    [
      "two VMs with one name",
      `schema = 1\n[vms.a]\nimage = "tiny"\nname = "same"\n[vms.b]\nimage = "tiny"\nname = "same"\n`,
      "vms.b.name"
    ],
    ["a flag-like VM name", `schema = 1\n[vms.a]\nimage = "tiny"\nname = "--rm"\n`, "vms.a.name"],
    ["a bad disk size", `schema = 1\n[vms.a]\nimage = "tiny"\ndisk = "+8G"\n`, "vms.a.disk"],
    ["a zero limit", `schema = 1\n[limits]\nmax_vms = 0\n`, "limits.max_vms"],
    ["an image that is shell syntax", `schema = 1\n[vms.a]\nimage = "$(reboot)"\n`, "vms.a.image"]
  ])("refuses %s with invalid_spec naming the file and %s, and writes nothing", async (_what, toml, key) => {
    const h = projectHarness(toml)
    const error = await h.fail(projectUp, {})
    expect(error.code).toBe("invalid_spec")
    expect(error.message).toContain(join(h.dir, "stoat.toml"))
    expect(error.message).toContain(`${key}:`)
    expect(h.vmFolders()).toEqual([])
    expect(readFileSync(join(h.dir, "stoat.toml"), "utf8")).toBe(toml)
    // status reads the same file and gives the same error.
    expect((await h.fail(projectStatus, {})).message).toBe(error.message)
  })

  it("refuses TOML that does not parse, and a stoat.toml that is a folder, without reading further", async () => {
    const h = projectHarness("schema = = 1\n")
    expect(await h.fail(projectStatus, {})).toMatchObject({
      code: "invalid_spec",
      message: expect.stringContaining(join(h.dir, "stoat.toml"))
    })
    rmSync(join(h.dir, "stoat.toml"))
    mkdirSync(join(h.dir, "stoat.toml"))
    expect(await h.fail(projectStatus, {})).toMatchObject({
      code: "invalid_spec",
      message: expect.stringContaining("not a regular file")
    })
    // A FIFO would block a reader forever: it is refused from its stat alone.
    rmSync(join(h.dir, "stoat.toml"), { recursive: true })
    execFileSync("mkfifo", [join(h.dir, "stoat.toml")])
    expect(await h.fail(projectStatus, {})).toMatchObject({
      code: "invalid_spec",
      message: expect.stringContaining("not a regular file")
    })
  })

  it("the capability report tells whether the working directory has a usable stoat.toml", async () => {
    const h = projectHarness()
    const report = async () => {
      const got = await h.ok(capabilities, {})
      return {
        state: got.host.project_state,
        operations: got.capabilities.find((c) => c.name === "project.operations")
      }
    }
    expect(await report()).toMatchObject({
      state: "absent",
      operations: { status: "limited", limits: [{ code: "project_file_required" }] }
    })
    h.write(TWO)
    expect(await report()).toMatchObject({ state: "available", operations: { status: "supported", limits: [] } })
    h.write("schema = 9\n")
    expect(await report()).toMatchObject({
      state: "unknown",
      operations: { status: "limited", reason: { code: "project_state_unknown" } }
    })
  })

  it("refuses a huge stoat.toml before reading it, and a share path with NUL", async () => {
    const h = projectHarness(`schema = 1\n# ${"x".repeat(1024 * 1024)}\n`)
    expect(await h.fail(projectStatus, {})).toMatchObject({
      code: "invalid_spec",
      message: expect.stringContaining("larger than")
    })
    h.write(`schema = 1\n[vms.dev]\nimage = "tiny"\nshares = ["a\\u0000b"]\n`)
    expect(await h.fail(projectUp, {})).toMatchObject({
      code: "share_invalid",
      message: expect.stringContaining("vms.dev.shares")
    })
    expect(h.vmFolders()).toEqual([])
  })

  it("accepts keys of lower-case letters, digits and '-', defaults names to <project>-<key>, keeps declaration order", async () => {
    const h = projectHarness(
      `schema = 2\n[vms.zeta-1]\nimage = "tiny"\n[vms.9]\nimage = "tiny"\nprovider = "qemu"\n[vms.alpha]\nimage = "tiny"\nname = "custom"\n`
    )
    const status = await h.ok(projectStatus, {})
    expect(status.vms.map((vm) => [vm.key, vm.name, vm.state])).toEqual([
      ["zeta-1", `${status.project}-zeta-1`, "missing"],
      ["9", `${status.project}-9`, "missing"],
      ["alpha", "custom", "missing"]
    ])
    expect(status.dir).toBe(h.dir)
  })

  it("names the project after its folder, lower-cased, by default; [recipes] is read and left alone", async () => {
    const h = projectHarness(
      `schema = 1\n[recipes]\ntailscale = "v1.2"\nother = { source = "https://example.invalid/r.git", ref = "main" }\n[vms.dev]\nimage = "tiny"\n`
    )
    const status = await h.ok(projectStatus, {})
    expect(status.project).toMatch(/^stoat-project-[a-z0-9-]+$/)
  })

  it("without a stoat.toml, project operations fail not_found with the project.init hint", async () => {
    const h = projectHarness()
    const operations: ReadonlyArray<Operation> = [
      projectStatus,
      projectUp,
      projectDown,
      projectApply,
      projectWait,
      projectVms
    ]
    for (const operation of operations) {
      const error = await h.fail(operation, {})
      expect(error.code, operation.tool).toBe("not_found")
      expect(error.message, operation.tool).toContain("; or create one there with project.init")
      expect(error.message, operation.tool).toContain("name a VM")
    }
  })
})

describe("shares", () => {
  it("takes folders inside the project as their real paths", async () => {
    const h = projectHarness()
    mkdirSync(join(h.dir, "src"))
    h.write(`schema = 1\n[vms.dev]\nimage = "tiny"\nshares = [".", "src"]\n`)
    await h.ok(projectUp, {})
    const toml = h.readVmToml(`${(await h.ok(projectStatus, {})).project}-dev`)
    expect(toml).toContain(`host = "${h.dir}"`)
    expect(toml).toContain(`host = "${join(h.dir, "src")}"`)
  })

  it("a share added later is drift that needs a restart; up records it and the next boot shares it", async () => {
    const h = projectHarness(`schema = 1\n[project]\nname = "sh"\n[vms.dev]\nimage = "tiny"\n`)
    await h.ok(projectUp, {})
    mkdirSync(join(h.dir, "src"))
    h.write(`schema = 1\n[project]\nname = "sh"\n[vms.dev]\nimage = "tiny"\nshares = ["src"]\n`)
    expect((await h.ok(projectStatus, {})).vms[0]!.drift).toEqual([
      { field: "shares", from: "", to: join(h.dir, "src"), needs_restart: true }
    ])
    await h.ok(projectUp, {})
    await h.ok(projectDown, {})
    await h.ok(projectUp, {})
    const plan = h.hypervisor.running.get(h.vmDir("sh-dev"))?.plan
    expect(plan?.extraShares).toEqual([{ tag: "share0", host: join(h.dir, "src") }])
  })

  it.each([
    ["a parent folder", ".."],
    ["an absolute path elsewhere", "/tmp"],
    ["a symlink out of the project", "escape"],
    ["a missing folder", "nope"]
  ])("refuses %s with share_invalid naming the file and key, creating nothing", async (_what, share) => {
    const h = projectHarness()
    const outside = mkdtempSync(join(tmpdir(), "stoat-outside-"))
    onTestFinished(() => rmSync(outside, { recursive: true, force: true }))
    symlinkSync(outside, join(h.dir, "escape"))
    h.write(`schema = 1\n[vms.dev]\nimage = "tiny"\nshares = ["${share}"]\n`)
    const error = await h.fail(projectUp, {})
    expect(error.code).toBe("share_invalid")
    expect(error.message).toContain(join(h.dir, "stoat.toml"))
    expect(error.message).toContain("vms.dev.shares")
    expect(h.vmFolders()).toEqual([])
  })
})

describe("up, status and reconcile", () => {
  it("creates missing VMs in declaration order, then reports drift after an edit and reconciles it", async () => {
    const h = projectHarness(TWO)
    const first = await h.ok(projectUp, {})
    expect(first).toEqual({
      project: "demo",
      vms: [
        { key: "web", name: "demo-web", status: "ok" },
        { key: "db", name: "demo-db", status: "ok" }
      ]
    })
    expect(h.readVmToml("demo-db")).toMatch(/ram = 512/)
    expect(h.readVmToml("demo-db")).toContain(`project = "${h.dir}"`)
    expect(h.readVmToml("demo-db")).toMatch(/key = "db"/)
    let status = await h.ok(projectStatus, {})
    expect(status.vms.map((vm) => [vm.key, vm.state, vm.drift])).toEqual([
      ["web", "running", []],
      ["db", "running", []]
    ])

    h.write(TWO.replace("ram = 512", "ram = 768\ncpus = 2"))
    status = await h.ok(projectStatus, {})
    expect(status.vms[1]!.drift).toEqual([
      { field: "cpus", from: "1", to: "2", needs_restart: true },
      { field: "ram", from: "512", to: "768", needs_restart: true }
    ])
    expect(status.vms[0]!.drift).toEqual([])

    await h.ok(projectUp, {})
    expect(h.readVmToml("demo-db")).toMatch(/ram = 768/)
    expect((await h.ok(projectStatus, {})).vms[1]!.drift).toEqual([])
  })

  it("a stopped VM's boot-time drift needs no restart; recipes, params and agent_access drift too", async () => {
    const h = projectHarness(`schema = 1\n[project]\nname = "p"\n[vms.dev]\nimage = "tiny"\n`)
    await h.ok(projectUp, {})
    await h.ok(projectDown, {})
    h.write(
      `schema = 1\n[project]\nname = "p"\n[vms.dev]\nimage = "tiny"\ncpus = 3\nagent_access = "observe"\n[vms.dev.params.devtools]\nuser = "dev"\n`
    )
    const drift = (await h.ok(projectStatus, {})).vms[0]!.drift
    expect(drift).toEqual([
      { field: "cpus", from: "1", to: "3", needs_restart: false },
      { field: "params.devtools.user", from: "", to: "dev", needs_restart: false },
      { field: "agent_access", from: "manage", to: "observe", needs_restart: false }
    ])
    await h.ok(projectUp, {})
    const vm = await h.ok(getVm, { vm: "p-dev" })
    expect(vm).toMatchObject({ cpus: 3, agent_access: "observe", project: h.dir, key: "dev", project_missing: false })
  })

  it("refuses an immutable change (image, disk) in status and up with the rm hint; later VMs are skipped", async () => {
    const h = projectHarness(TWO)
    await h.ok(projectUp, {})
    await h.ok(projectDown, {})
    h.write(
      TWO.replace(`[vms.web]\nimage = "tiny"`, `[vms.web]\nimage = "debian-12-mini"`).replace(
        "ram = 512",
        'ram = 512\ndisk = "5G"'
      )
    )
    const status = await h.ok(projectStatus, {})
    expect(status.vms[0]!.error).toBe(
      'image changed from tiny to debian-12-mini; recreate it with vm.destroy {"vm":"web"}, then project.up'
    )
    expect(status.vms[1]!.error).toBe(
      'disk changed from 1G to 5G; recreate it with vm.destroy {"vm":"db"}, then project.up'
    )
    expect(status.vms[0]!.drift).toEqual([])
    const run = await h.ok(projectUp, {})
    expect(run.vms).toEqual([
      {
        key: "web",
        name: "demo-web",
        status: "error",
        code: "immutable_field",
        error:
          'VM "demo-web": image changed from tiny to debian-12-mini; recreate it with vm.destroy {"vm":"web"}, then project.up'
      },
      { key: "db", name: "demo-db", status: "skipped" }
    ])
    expect(h.hypervisor.running.size).toBe(0)
  })

  it("a declaration may put its VM on a libvirt host; another host later is an immutable change", async () => {
    const far = "qemu+ssh://root@build1/system"
    const toml = `schema = 2\n[project]\nname = "lp"\n[vms.near]\nimage = "tiny"\nprovider = "libvirt"\n[vms.far]\nimage = "tiny"\nprovider = "libvirt"\nhost = "${far}"\n[vms.here]\nimage = "tiny"\n`
    const h = projectHarness(toml)
    const run = await h.ok(projectUp, {})
    expect(run.vms.map((vm) => vm.status)).toEqual(["ok", "ok", "ok"])
    expect(h.readVmToml("lp-near")).toMatch(/provider = "libvirt"/)
    expect(h.readVmToml("lp-near")).not.toMatch(/host/)
    expect(h.readVmToml("lp-far")).toContain(`host = "${far}"`)
    expect(h.readVmToml("lp-here")).toMatch(/provider = ""/)
    await h.ok(projectDown, {})
    h.write(toml.replace(far, "qemu+ssh://root@build2/system"))
    expect((await h.ok(projectStatus, {})).vms[1]!.error).toBe(
      `host changed from ${far} to qemu+ssh://root@build2/system; recreate it with vm.destroy {"vm":"far"}, then project.up`
    )
    h.write(`schema = 2\n[vms.x]\nimage = "tiny"\nhost = "${far}"\n`)
    expect(await h.fail(projectUp, {})).toMatchObject({
      code: "invalid_spec",
      message: expect.stringContaining("vms.x.host: a host is a libvirt URI")
    })
    h.write(`schema = 2\n[vms.x]\nimage = "tiny"\nprovider = "libvirt"\nhost = "ssh://x; reboot"\n`)
    expect(await h.fail(projectUp, {})).toMatchObject({
      code: "invalid_spec",
      message: expect.stringContaining("vms.x.host")
    })
  })

  it("the first failure stops the run: earlier VMs ok, the failing one error, later ones skipped (nothing created for them)", async () => {
    const h = projectHarness(
      `schema = 1\n[project]\nname = "f"\n[vms.a]\nimage = "tiny"\n[vms.b]\nimage = "no-such-image"\n[vms.c]\nimage = "tiny"\n`
    )
    const run = await h.ok(projectUp, {})
    expect(run.vms.map((vm) => [vm.key, vm.status])).toEqual([
      ["a", "ok"],
      ["b", "error"],
      ["c", "skipped"]
    ])
    expect(run.vms[1]!.error).toContain("no-such-image")
    expect(h.vmFolders()).toEqual(["f-a"])
  })

  it("--parallel brings independent VMs up side by side with the same report", async () => {
    const h = projectHarness(TWO)
    const run = await h.ok(projectUp, { parallel: 2 })
    expect(run.vms.map((vm) => vm.status)).toEqual(["ok", "ok"])
    expect(h.hypervisor.running.size).toBe(2)
    // Distinct ssh ports even when created at once.
    const ports = (await h.ok(listVms, {})).vms.map((vm) => vm.ssh_port)
    expect(new Set(ports).size).toBe(2)
  })

  it("two ups of one project at once both end with every VM created once and running", async () => {
    const h = projectHarness(TWO)
    const runs = await Promise.all([h.ok(projectUp, {}), h.ok(projectUp, { parallel: 2 })])
    for (const run of runs) expect(run.vms.map((vm) => vm.status)).toEqual(["ok", "ok"])
    expect(h.vmFolders()).toEqual(["demo-db", "demo-web"])
    expect(h.hypervisor.running.size).toBe(2)
  })

  it("refuses to adopt a VM of the declared name that is not this project's", async () => {
    const h = projectHarness(TWO)
    await h.ok(createVm, { name: "demo-web", image: "tiny" })
    const run = await h.ok(projectUp, {})
    expect(run.vms[0]).toMatchObject({
      status: "error",
      code: "name_taken",
      error: expect.stringContaining("outside any project")
    })
    expect(run.vms[1]!.status).toBe("skipped")
    expect((await h.ok(projectStatus, {})).vms[0]!.error).toContain("outside any project")
  })

  it("project limits lower the account's: max_vms 1 lets one VM be created, the next is limit_reached", async () => {
    const h = projectHarness(TWO.replace(`[vms.web]`, `[limits]\nmax_vms = 1\n[vms.web]`))
    const run = await h.ok(projectUp, {})
    expect(run.vms.map((vm) => vm.status)).toEqual(["ok", "error"])
    expect(run.vms[1]!.error).toContain("max_vms = 1")
  })

  it("a project limit above the account's does not raise it", async () => {
    const h = projectHarness(TWO.replace(`[vms.web]`, `[limits]\nmax_vms = 10\nmax_ram_mb = 100000\n[vms.web]`))
    writeFileSync(join(h.root, "config.toml"), "[limits]\nmax_ram_mb = 600\n")
    const run = await h.ok(projectUp, {})
    // web (256) fits under the account's 600; db (512) would make 768.
    expect(run.vms.map((vm) => vm.status)).toEqual(["ok", "error"])
    expect(run.vms[1]!.error).toContain("max_ram_mb = 600")
  })

  it("a declared VM whose host does not answer is broken in status with the reason, and up answers cannot_reach for it (never a guessed stopped)", async () => {
    const h = projectHarness(TWO)
    await h.ok(projectUp, {})
    const host = "qemu+ssh://root@far.example/system"
    h.hypervisor.unreachable.set(
      h.vmDir("demo-db"),
      new CannotReach({ message: `libvirt host ${host} is unreachable`, subject: host, hint: checkHostAt(host) })
    )
    const status = await h.ok(projectStatus, {})
    expect(status.vms.map((vm) => [vm.key, vm.state])).toEqual([
      ["web", "running"],
      ["db", "broken"]
    ])
    expect(status.vms[1]!.error).toMatch(/^libvirt host .* is unreachable; check it with host\.doctor/)
    h.write(TWO.replace("ram = 512", "ram = 768"))
    const run = await h.ok(projectUp, {})
    expect(run.vms[1]).toMatchObject({ key: "db", status: "error", code: "cannot_reach" })
    expect(h.readVmToml("demo-db")).toMatch(/ram = 512/)
  })
})

describe("fan-out of down, wait, apply and rm", () => {
  it("down stops every VM (a missing one counts as stopped), rm deletes them, both in order", async () => {
    const h = projectHarness(TWO)
    await h.ok(projectUp, {})
    const down = await h.ok(projectDown, {})
    expect(down.vms.map((vm) => [vm.key, vm.status])).toEqual([
      ["web", "ok"],
      ["db", "ok"]
    ])
    expect(h.hypervisor.running.size).toBe(0)
    const rm = await h.ok(projectRm, {})
    expect(rm.vms.map((vm) => vm.status)).toEqual(["ok", "ok"])
    expect(h.vmFolders()).toEqual([])
    expect((await h.ok(projectStatus, {})).vms.map((vm) => vm.state)).toEqual(["missing", "missing"])
  })

  it("rm refuses a running VM and skips the rest; wait on a missing VM says to bring the project up", async () => {
    const h = projectHarness(TWO)
    await h.ok(projectUp, {})
    const rm = await h.ok(projectRm, {})
    expect(rm.vms.map((vm) => vm.status)).toEqual(["error", "skipped"])
    expect(rm.vms[0]!.error).toContain("running")
    await h.ok(projectDown, {})
    await h.ok(projectRm, {})
    const wait = await h.ok(projectWait, { until: "stopped", timeout_seconds: 1 })
    expect(wait.vms[0]).toMatchObject({
      status: "error",
      code: "not_found",
      error: expect.stringContaining("; create it with project.up")
    })
    expect(wait.vms[1]!.status).toBe("skipped")
  })

  it("at agent_access none an agent still has every host-side project operation", async () => {
    const none = TWO.replace(/image = "tiny"/g, 'image = "tiny"\nagent_access = "none"')
    const h = projectHarness(none)
    for (const operation of [projectUp, projectDown, projectUp]) {
      expect(
        (await h.ok(operation, {}, { caller: "mcp" })).vms.map((vm) => vm.status),
        operation.tool
      ).toEqual(["ok", "ok"])
    }
    expect((await h.ok(projectStatus, {}, { caller: "mcp" })).vms.map((vm) => vm.state)).toEqual(["running", "running"])
    expect((await h.fail(projectApply, {}, { caller: "mcp" })).code).toBe("access_denied")
  })

  it("project_apply from an agent needs manage on every VM, checked before anything runs", async () => {
    const h = projectHarness(
      TWO.replace(`[vms.db]\nimage = "tiny"`, `[vms.db]\nimage = "tiny"\nagent_access = "observe"`)
    )
    await h.ok(projectUp, {})
    const error = await h.fail(projectApply, {}, { caller: "mcp" })
    // The words of every access refusal (seed 000), not a project-only variant.
    expect(error).toEqual({
      code: "access_denied",
      message: 'vm "demo-db" has agent_access = observe; needs manage',
      subject: "demo-db"
    })
    // A person at the CLI is not held to agent_access.
    expect((await h.ok(projectApply, {})).vms.map((vm) => vm.status)).toEqual(["ok", "ok"])
  })

  it("an agent's project_up cannot raise agent_access through stoat.toml", async () => {
    const h = projectHarness(TWO)
    await h.ok(projectUp, {})
    h.write(TWO.replace(`[vms.web]\nimage = "tiny"`, `[vms.web]\nimage = "tiny"\nagent_access = "exec"`))
    const run = await h.ok(projectUp, {}, { caller: "mcp" })
    expect(run.vms[0]).toMatchObject({
      status: "error",
      code: "access_denied",
      error: expect.stringContaining("may only lower agent_access")
    })
  })
})

describe("project scope", () => {
  it("a bare VM argument names a declaration key first, then a VM", async () => {
    const h = projectHarness(TWO)
    await h.ok(projectUp, {})
    await h.ok(createVm, { name: "other", image: "tiny" })
    expect((await h.ok(getVm, { vm: "web" })).name).toBe("demo-web")
    expect((await h.ok(getVm, { vm: "other" })).name).toBe("other")
    const updated = await h.ok(updateVm, { vm: "db", cpus: 2 })
    expect(updated.vm.name).toBe("demo-db")
  })

  it("a broken stoat.toml does not stop a call on a VM that exists; a declaration key still answers the file's error", async () => {
    const h = projectHarness()
    await h.ok(createVm, { name: "box", image: "tiny", agent_access: "exec" })
    await h.ok(startVm, { vm: "box" })
    h.write("schema = 1\n[vms.dev\n")
    expect(await h.ok(execInGuest, { vm: "box", argv: ["true"] }, { caller: "mcp" })).toMatchObject({ exit_code: 0 })
    expect((await h.ok(getVm, { vm: "box" })).name).toBe("box")
    expect(await h.fail(getVm, { vm: "dev" })).toMatchObject({
      code: "invalid_spec",
      message: expect.stringContaining(join(h.dir, "stoat.toml"))
    })
  })

  it("one scope reads stoat.toml again whenever it changes: added, edited, broken, fixed, removed", async () => {
    const h = projectHarness()
    const current = projectOf(h.dir)
    const read = () => Effect.runPromise(Effect.either(current))
    const projectName = async () => {
      const either = await read()
      return Either.isRight(either) ? Option.map(either.right, (project) => project.name) : either.left._tag
    }
    expect(await projectName()).toEqual(Option.none())
    h.write(TWO)
    expect(await projectName()).toEqual(Option.some("demo"))
    expect(await projectName()).toEqual(Option.some("demo"))
    h.write(TWO.replace('name = "demo"', 'name = "renamed"'))
    expect(await projectName()).toEqual(Option.some("renamed"))
    h.write("schema = 1\n[vms.dev\n")
    expect(await projectName()).toBe("InvalidSpec")
    h.write(TWO)
    expect(await projectName()).toEqual(Option.some("demo"))
    rmSync(join(h.dir, "stoat.toml"))
    expect(await projectName()).toEqual(Option.none())
  })

  it("create from the CLI inside a project is refused unless global", async () => {
    const h = projectHarness(TWO)
    const error = await h.fail(createVm, { name: "loose", image: "tiny", global: false })
    expect(error.code).toBe("invalid_spec")
    expect(error.message).toContain("--global")
    expect(h.vmFolders()).toEqual([])
    await h.ok(createVm, { name: "loose", image: "tiny", global: true })
  })

  it("ls --project lists the declared VMs that exist; a VM whose stoat.toml is gone is project_missing", async () => {
    const h = projectHarness(TWO)
    await h.ok(projectUp, {})
    await h.ok(createVm, { name: "other", image: "tiny" })
    expect((await h.ok(projectVms, {})).vms.map((vm) => vm.name)).toEqual(["demo-web", "demo-db"])
    rmSync(join(h.dir, "stoat.toml"))
    const all = (await h.ok(listVms, {})).vms
    expect(all.find((vm) => vm.name === "demo-web")).toMatchObject({
      project: h.dir,
      key: "web",
      project_missing: true
    })
    expect(all.find((vm) => vm.name === "other")).toMatchObject({ project: "", project_missing: false })
  })

  it("init writes an annotated stoat.toml that decodes, refuses a second time, and ignores .stoat/ in a git checkout once", async () => {
    const h = projectHarness()
    mkdirSync(join(h.dir, ".git"))
    writeFileSync(join(h.dir, ".gitignore"), "node_modules")
    const result = await h.ok(projectInit, { name: "mine" })
    expect(result).toEqual({ path: join(h.dir, "stoat.toml"), project: "mine", gitignore_updated: true })
    expect(readFileSync(join(h.dir, ".gitignore"), "utf8")).toBe("node_modules\n.stoat/\n")
    expect((await h.ok(projectStatus, {})).vms).toEqual([
      { key: "dev", name: "mine-dev", state: "missing", health: "unknown", drift: [] }
    ])
    const before = readFileSync(join(h.dir, "stoat.toml"), "utf8")
    expect((await h.fail(projectInit, {})).message).toContain("already exists")
    expect(readFileSync(join(h.dir, "stoat.toml"), "utf8")).toBe(before)
    expect((await h.fail(projectInit, { name: "Bad Name" })).code).toBe("usage")
  })

  it("init outside a git checkout leaves .gitignore alone", async () => {
    const h = projectHarness()
    expect((await h.ok(projectInit, {})).gitignore_updated).toBe(false)
    expect(existsSync(join(h.dir, ".gitignore"))).toBe(false)
  })
})

describe(".stoat/secrets.toml", () => {
  const withSecrets = (mode: number) => {
    const h = projectHarness(`schema = 1\n[project]\nname = "s"\n[vms.dev]\nimage = "tiny"\n`)
    mkdirSync(join(h.dir, ".stoat"))
    const path = join(h.dir, ".stoat", "secrets.toml")
    writeFileSync(path, `[dev.tailscale]\nauthkey = "tskey-very-secret"\n`)
    chmodSync(path, mode)
    return h
  }

  it("is refused when wider than 0600, naming the mode, never the value, and nothing is created", async () => {
    const h = withSecrets(0o644)
    const error = await h.fail(projectUp, {})
    expect(error).toMatchObject({ code: "invalid_spec", message: ".stoat/secrets.toml: mode 0644, want 0600" })
    expect(JSON.stringify(error)).not.toContain("tskey")
    expect(h.vmFolders()).toEqual([])
  })

  it("at 0600 gives each key's VM its secrets (stored 0600 beside vm.toml, shown only as <set>)", async () => {
    const h = withSecrets(0o600)
    await h.ok(projectUp, {})
    const secrets = join(h.vmDir("s-dev"), "secrets.toml")
    expect(readFileSync(secrets, "utf8")).toContain("tskey-very-secret")
    expect(h.readVmToml("s-dev")).not.toContain("tskey")
    const run = await h.ok(projectUp, {})
    expect(JSON.stringify(run)).not.toContain("tskey")
  })
})

describe("recipes declared in stoat.toml", () => {
  it("up sets them with their params, gives the script the project's secret, applies once; apply fans out and skips unchanged", async () => {
    const h = projectHarness(
      `schema = 1\n[project]\nname = "r"\n[vms.dev]\nimage = "tiny"\nrecipes = ["greet"]\n[vms.dev.params.greet]\nwho = "world"\n`
    )
    mkdirSync(join(h.root, "recipes", "greet"), { recursive: true })
    writeFileSync(
      join(h.root, "recipes", "greet", "recipe.toml"),
      'schema = 3\nname = "greet"\nscript = "run.sh"\n[params.who]\ntype = "string"\nrequired = true\n[params.token]\ntype = "secret"\nrequired = true\n'
    )
    writeFileSync(join(h.root, "recipes", "greet", "run.sh"), 'echo "hello $STOAT_PARAM_WHO"\n')
    mkdirSync(join(h.dir, ".stoat"))
    writeFileSync(join(h.dir, ".stoat", "secrets.toml"), '[dev.greet]\ntoken = "tok-s3cret"\n', { mode: 0o600 })
    const scripts: string[] = []
    h.guest.execHandler = (argv, context) => {
      // A recipe reaches the guest as a script on stdin (run in a process group of its own).
      if (context.input.length === 0) return defaultExecHandler(argv, context)
      scripts.push(Buffer.from(context.input).toString("utf8"))
      return { exitCode: 0, stdout: "hello world\n" }
    }
    const up = await h.ok(projectUp, { apply: true })
    expect(up.vms).toEqual([{ key: "dev", name: "r-dev", status: "ok" }])
    expect(scripts).toHaveLength(1)
    expect(scripts[0]).toContain("world")
    expect(scripts[0]).toContain("tok-s3cret")
    const vm = await h.ok(getVm, { vm: "dev" })
    expect(vm.recipes_detail).toMatchObject([
      { name: "greet", applied: true, params: { who: "world", token: "<set>" } }
    ])
    expect(JSON.stringify(vm)).not.toContain("tok-s3cret")
    expect((await h.ok(projectStatus, {})).vms[0]!.drift).toEqual([])
    // A second apply finds the once-recipe unchanged and runs nothing.
    expect((await h.ok(projectApply, {})).vms[0]!.status).toBe("ok")
    expect(scripts).toHaveLength(1)
  })
})
