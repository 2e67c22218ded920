import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ACCESS_ORDER, accessOf, catalog } from "@stoat/core"
import { FakeJobs } from "@stoat/core/testing"
import { buildRegistry } from "../src/index.js"
import { dataOf, errorOf, inProcess } from "./helpers.js"

type Harness = Awaited<ReturnType<typeof inProcess>>
const LEVELS = ACCESS_ORDER
const tools = [...buildRegistry().values()]
/** Guest-touching tools: those whose catalog entry names a required level. */
const guestTools = tools.filter((entry) => entry.operation.access !== null)
/** Minimal valid arguments for each guest tool on VM `vm`. */
const guestArgs: Record<string, (vm: string) => Record<string, unknown>> = {
  exec: (vm) => ({ vm, argv: ["true"] }),
  read_file: (vm) => ({ vm, path: "/etc/hostname" }),
  list_dir: (vm) => ({ vm, path: "/etc" }),
  stat: (vm) => ({ vm, path: "/etc" }),
  ps: (vm) => ({ vm }),
  svc_status: (vm) => ({ vm, name: "sshd" }),
  tail_log: (vm) => ({ vm, path: "/etc/hostname" }),
  write_file: (vm) => ({ vm, path: "/tmp/matrix", content: "x" }),
  write_file_as_root: (vm) => ({ vm, path: "/tmp/matrix", content: "x", as_root: true }),
  pkg_install: (vm) => ({ vm, packages: ["curl"] }),
  svc: (vm) => ({ vm, name: "sshd", action: "restart" }),
  useradd: (vm) => ({ vm, name: "alice" }),
  exec_bg: (vm) => ({ vm, argv: ["true"] }),
  job_status: (vm) => ({ vm, job_id: SEEDED_JOB }),
  job_wait: (vm) => ({ vm, job_id: SEEDED_JOB, timeout_seconds: 1 }),
  job_output: (vm) => ({ vm, job_id: SEEDED_JOB }),
  job_kill: (vm) => ({ vm, job_id: SEEDED_JOB }),
  list_jobs: (vm) => ({ vm }),
  copy_to: (vm) => ({ vm, local: "host.txt", remote: "/tmp/host.txt" }),
  copy_from: (vm) => ({ vm, local: "guest.txt", remote: "/tmp/guest.txt" }),
  apply_recipes: (vm) => ({ vm })
}
/** A finished job every VM's registry and guest know, so the job tools have something to act on. */
const SEEDED_JOB = "j-0000000a"

const seedGuestTools = (h: Harness, vm: string) => {
  const dir = `/run/stoat/jobs/${SEEDED_JOB}`
  writeFileSync(
    join(h.root, vm, "jobs.toml"),
    `schema = 1\n[jobs.${SEEDED_JOB}]\nargv = ["true"]\nuser = "root"\ndir = "${dir}"\nstarted = "2026-01-01T00:00:00Z"\n`
  )
  h.guest.fs(vm).write(`${dir}/out`, "")
  h.guest.fs(vm).write(`${dir}/exit`, "0\n")
  h.guest.fs(vm).write("/tmp/guest.txt", "from the guest")
  mkdirSync(join(h.root, "shared", vm), { recursive: true })
  writeFileSync(join(h.root, "shared", vm, "host.txt"), "from the host")
}
/** What an allowed call answers on the (fake) tiny guest, which has no service or package manager and no useradd. */
const TINY_LACKS = new Set(["svc_status", "svc", "pkg_install", "useradd"])
/** Matrix rows: each guest tool at its level, plus write_file with as_root (which needs exec). */
const matrixRows = guestTools.flatMap((entry) => {
  const row = {
    tool: entry.definition.name,
    args: entry.definition.name,
    needed: accessOf(entry.operation, {}) as string
  }
  return entry.definition.name === "write_file"
    ? [row, { tool: "write_file", args: "write_file_as_root", needed: "exec" }]
    : [row]
})

describe("agent_access: the access matrix (seed 000 'VM access levels')", () => {
  let h: Harness
  beforeAll(async () => {
    h = await inProcess()
    new FakeJobs().install(h.guest)
    for (const level of LEVELS) {
      dataOf(
        await h.client.callTool({
          name: "create",
          arguments: { name: `vm-${level}`, image: "tiny", agent_access: level }
        })
      )
      dataOf(await h.client.callTool({ name: "start", arguments: { vm: `vm-${level}` } }))
      h.guest.fs(`vm-${level}`).write("/etc/hostname", `vm-${level}\n`)
      seedGuestTools(h, `vm-${level}`)
    }
  })
  afterAll(async () => h?.close())

  it("knows how to call every guest tool of the catalog", () => {
    expect(guestTools.length).toBeGreaterThan(0)
    for (const entry of guestTools)
      expect(guestArgs[entry.definition.name], `no matrix arguments for ${entry.definition.name}`).toBeDefined()
  })

  for (const { tool, args, needed } of matrixRows) {
    for (const level of LEVELS) {
      const allowed = LEVELS.indexOf(level) >= LEVELS.indexOf(needed as never)
      it(`${args} on a VM with agent_access = ${level}: ${allowed ? "runs" : "access_denied"}`, async () => {
        const result = await h.client.callTool({ name: tool, arguments: guestArgs[args]!(`vm-${level}`) })
        if (allowed && TINY_LACKS.has(tool)) expect(errorOf(result).code).toBe("capability_unavailable")
        else if (allowed) dataOf(result)
        else
          expect(errorOf(result)).toEqual({
            code: "access_denied",
            message: `vm "vm-${level}" has agent_access = ${level}; needs ${needed}`,
            subject: `vm-${level}`
          })
      })
    }
  }

  it("level none still allows every host-side tool on the VM (status, lifecycle, snapshots, logs, forwarding)", async () => {
    const vm = "vm-none"
    const calls: Array<[string, Record<string, unknown>]> = [
      ["vm_status", { vm }],
      ["logs", { vm }],
      ["forward", { vm }],
      ["capabilities", { vm }],
      ["wait", { vm, timeout_seconds: 5 }],
      ["stop", { vm }],
      ["list_snapshots", { vm }],
      ["snapshot", { vm, tag: "t1" }],
      ["restore", { vm, tag: "t1", confirm: vm }],
      ["delete_snapshot", { vm, tag: "t1", confirm: vm }],
      ["update", { vm, cpus: 2 }],
      ["clone", { source: vm, name: "vm-none-copy" }],
      ["start", { vm }]
    ]
    for (const [name, args] of calls) {
      const result = await h.client.callTool({ name, arguments: args })
      expect(result.isError, `${name}: ${JSON.stringify(result.content)}`).toBeFalsy()
    }
    // Every tool without a level is host-side: none of them ever answers access_denied.
    for (const entry of tools.filter((t) => t.operation.access === null))
      expect(entry.definition.description).not.toMatch(/Needs agent_access/)
  })

  it("reads agent_access from vm.toml on every call", async () => {
    const file = join(h.root, "vm-exec", "vm.toml")
    const original = readFileSync(file, "utf8")
    dataOf(await h.client.callTool({ name: "exec", arguments: { vm: "vm-exec", argv: ["true"] } }))
    writeFileSync(file, original.replace(/agent_access = "exec"/, 'agent_access = "observe"'))
    expect(errorOf(await h.client.callTool({ name: "exec", arguments: { vm: "vm-exec", argv: ["true"] } })).code).toBe(
      "access_denied"
    )
    writeFileSync(file, original)
    dataOf(await h.client.callTool({ name: "exec", arguments: { vm: "vm-exec", argv: ["true"] } }))
  })

  it("refuses a guest tool on a VM that does not exist with not_found, not a guess", async () => {
    expect(errorOf(await h.client.callTool({ name: "exec", arguments: { vm: "ghost", argv: ["true"] } })).code).toBe(
      "not_found"
    )
  })
})

describe("update over MCP may lower agent_access and never raise it", () => {
  let h: Harness
  beforeAll(async () => {
    h = await inProcess()
  })
  afterAll(async () => h?.close())

  for (const from of LEVELS) {
    for (const to of LEVELS) {
      const raise = LEVELS.indexOf(to) > LEVELS.indexOf(from)
      it(`${from} → ${to}: ${raise ? "refused" : "allowed"}`, async () => {
        const vm = `u-${from}-${to}`
        dataOf(await h.client.callTool({ name: "create", arguments: { name: vm, image: "tiny", agent_access: from } }))
        const result = await h.client.callTool({ name: "update", arguments: { vm, agent_access: to } })
        const status = dataOf(await h.client.callTool({ name: "vm_status", arguments: { vm } }))
        if (raise) {
          expect(errorOf(result).code).toBe("access_denied")
          expect(status.vm?.agent_access ?? status.agent_access).toBe(from)
        } else {
          dataOf(result)
          expect(status.vm?.agent_access ?? status.agent_access).toBe(to)
        }
      })
    }
  }

  it("covers every catalog entry in the registry or deliberately leaves it out", () => {
    const names = new Set(tools.map((t) => t.definition.name))
    for (const op of catalog) expect(names.has(op.tool)).toBe(op.expose.mcp)
  })
})
