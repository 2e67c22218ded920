import { spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { BIN, dataOf, errorOf, run, stdioClient, tempHome, writeVm } from "./helpers.js"

/** Every tool the server registers, in catalog order (seed 000 names; version and screenshot are ours). */
const TOOLS = [
  "list_vms",
  "vm_status",
  "list_guests",
  "guest_info",
  "doctor",
  "version",
  "create",
  "start",
  "stop",
  "wait",
  "destroy",
  "update",
  "clone",
  "forward",
  "logs",
  "screenshot",
  "list_snapshots",
  "snapshot",
  "restore",
  "delete_snapshot",
  "checkpoint",
  "list_checkpoints",
  "delete_checkpoint",
  "fork",
  "exec",
  "read_file",
  "list_dir",
  "stat",
  "ps",
  "svc_status",
  "tail_log",
  "write_file",
  "pkg_install",
  "svc",
  "useradd",
  "exec_bg",
  "job_status",
  "job_wait",
  "job_output",
  "job_kill",
  "list_jobs",
  "copy_to",
  "copy_from",
  "list_images",
  "prune",
  "capabilities",
  "list_recipes",
  "recipe_schema",
  "check_recipes",
  "plan_recipes",
  "apply_recipes",
  "project_status",
  "project_up",
  "project_down",
  "project_apply",
  "project_wait",
  "search_recipes",
  "add_recipe",
  "update_recipe",
  "remove_recipe"
]
/** Inputs no agent may send (seed 000 / original §5), plus our CLI-only overrides. */
const HOST_ONLY = [
  "share",
  "base",
  "iso",
  "console_password",
  "image_path",
  "byo",
  "force",
  "unconfined",
  "global",
  "preview",
  "names"
]

describe("stoat mcp over stdio (the built binary, a real SDK client)", () => {
  const home = tempHome()
  let client: Client
  beforeAll(async () => {
    writeVm(home, "obs", "observe")
    client = await stdioClient(home)
  })
  afterAll(async () => client?.close())

  it("identifies itself as stoat and lists every tool once, in catalog order", async () => {
    expect(client.getServerVersion()?.name).toBe("stoat")
    const { tools } = await client.listTools()
    expect(tools.map((tool) => tool.name)).toEqual(TOOLS)
    // Deliberately absent (original §5).
    for (const absent of [
      "recipe_new",
      "ssh_command",
      "global_logs",
      "pull",
      "project_rm",
      "project_init",
      "project_vms"
    ])
      expect(tools.map((t) => t.name)).not.toContain(absent)
  })

  it("is the same server as `stoat mcp serve` and `stoat -q mcp` (the fast path and oclif's)", async () => {
    for (const command of [
      ["mcp", "serve"],
      ["-q", "mcp"],
      ["mcp", "serve", "--quiet"]
    ]) {
      const other = await stdioClient(home, [], command)
      expect((await other.listTools()).tools.map((tool) => tool.name)).toEqual(TOOLS)
      await other.close()
    }
  })

  it("serves a subset with --toolsets and --read-only, and refuses an unknown toolset", async () => {
    const names = async (args: ReadonlyArray<string>) => {
      const subset = await stdioClient(home, args)
      try {
        return (await subset.listTools()).tools.map((tool) => tool.name)
      } finally {
        await subset.close()
      }
    }
    const jobs = ["exec_bg", "job_status", "job_wait", "job_output", "job_kill", "list_jobs"]
    expect(await names(["--toolsets", "jobs"])).toEqual(jobs)
    const vmAndJobs = await names(["--toolsets", "vm, jobs"])
    expect(vmAndJobs).toEqual(
      TOOLS.filter((name) =>
        [
          "list_vms",
          "vm_status",
          "create",
          "start",
          "stop",
          "wait",
          "destroy",
          "update",
          "clone",
          "forward",
          "logs",
          "screenshot",
          ...jobs
        ].includes(name)
      )
    )
    const { tools } = await client.listTools()
    expect(await names(["--read-only"])).toEqual(
      tools.filter((tool) => tool.annotations?.readOnlyHint === true).map((tool) => tool.name)
    )
    expect(await names(["--toolsets", "guest", "--read-only"])).toEqual([
      "read_file",
      "list_dir",
      "stat",
      "ps",
      "svc_status",
      "tail_log"
    ])
    const refused = await run(["mcp", "--toolsets", "vm,gpu"], { STOAT_HOME: home })
    expect(refused.code).toBe(2)
    expect(refused.stderr).toMatch(
      /--toolsets takes a comma-separated list of vm, snapshots, guest, jobs, host, recipes, project; unknown: gpu/
    )
  })

  it("gives every tool a closed input schema without host-only fields, an output schema and all four annotations", async () => {
    const { tools } = await client.listTools()
    for (const tool of tools) {
      expect(tool.inputSchema, tool.name).toMatchObject({ type: "object", additionalProperties: false })
      for (const field of HOST_ONLY)
        expect(Object.keys(tool.inputSchema.properties ?? {}), tool.name).not.toContain(field)
      expect(tool.outputSchema?.type, tool.name).toBe("object")
      const a = tool.annotations!
      for (const hint of ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"] as const)
        expect(typeof a[hint], `${tool.name}.${hint}`).toBe("boolean")
    }
  })

  it("lists fixed value sets as enums and states defaults and caps", async () => {
    const { tools } = await client.listTools()
    const prop = (tool: string, field: string) =>
      (tools.find((t) => t.name === tool)!.inputSchema.properties as Record<string, any>)[field]
    expect(prop("wait", "until").enum).toEqual(["reachable", "applied", "stopped"])
    expect(prop("create", "mode").enum).toEqual(["live", "disk"])
    expect(prop("create", "agent_access").enum).toEqual(["none", "observe", "manage", "exec"])
    expect(prop("update", "agent_access").enum).toEqual(["none", "observe", "manage", "exec"])
    expect(prop("logs", "which").enum).toEqual(["console", "apply"])
    expect(prop("wait", "timeout_seconds")).toMatchObject({ maximum: 600 })
    expect(prop("wait", "timeout_seconds").description).toMatch(/default 300, max 600/)
    expect(tools.find((t) => t.name === "create")!.description).toMatch(/ram_mb 4096, cpus 4, disk 8G/)
    expect(prop("exec", "timeout_seconds").description).toMatch(/default 60, max 600/)
  })

  it("costs an agent at most 40 KB of tools/list, every argument described for a person (P12)", async () => {
    const { tools } = await client.listTools()
    expect(Buffer.byteLength(JSON.stringify({ tools }))).toBeLessThanOrEqual(40 * 1024)
    for (const tool of tools) {
      for (const [field, schema] of Object.entries(tool.inputSchema.properties ?? {}) as Array<
        [string, { description?: string }]
      >) {
        // Effect's generated descriptions ("a number between 0 and 9007199254740991", "an array
        // of at most 4096 item(s)") all start with an article: a human one says what the field is.
        expect(schema.description, `${tool.name}.${field}`).toMatch(/^(?!an? )\S/)
      }
    }
  })

  it("answers read tools with structuredContent that matches the output schema and a JSON text block", async () => {
    // The SDK client validates structuredContent against each tool's outputSchema itself.
    for (const [name, args] of [
      ["list_vms", {}],
      ["list_guests", {}],
      ["guest_info", { name: "debian" }],
      ["version", {}],
      ["list_images", {}],
      ["capabilities", {}],
      ["vm_status", { vm: "obs" }]
    ] as const) {
      const result = await client.callTool({ name, arguments: args })
      expect(result.isError, `${name}: ${JSON.stringify(result.content)}`).toBeFalsy()
      dataOf(result)
    }
    const guests = dataOf<{ guests: Array<Record<string, unknown>> }>(
      await client.callTool({ name: "list_guests", arguments: {} })
    )
    expect(guests.guests.length).toBeGreaterThan(0)
    for (const guest of guests.guests) expect(guest).not.toHaveProperty("log_path")
    expect(
      dataOf(await client.callTool({ name: "list_vms", arguments: {} })).vms.map((vm: { name: string }) => vm.name)
    ).toEqual(["obs"])
  })

  it("fails with the seed-000 envelope: isError, message, ErrorInfo in _meta and as a second block", async () => {
    const missing = errorOf(await client.callTool({ name: "vm_status", arguments: { vm: "nope" } }))
    expect(missing).toMatchObject({ code: "not_found", subject: "nope" })
    expect(missing.message).toBe('no VM "nope"; see list_vms')
    const unknown = errorOf(await client.callTool({ name: "vm_status", arguments: { vm: "obs", extra: 1 } }))
    expect(unknown).toMatchObject({ code: "usage", message: "invalid input for vm_status: extra: unknown argument" })
    const hostOnly = errorOf(
      await client.callTool({ name: "create", arguments: { name: "x", image: "tiny", share: "/etc" } })
    )
    expect(hostOnly).toMatchObject({ code: "usage", message: "invalid input for create: share: unknown argument" })
    expect(errorOf(await client.callTool({ name: "no_such_tool", arguments: {} })).code).toBe("usage")
  })

  it("add_recipe takes curated index names only: a Git URL as the name, or a source, is refused before anything runs", async () => {
    const url = errorOf(
      await client.callTool({ name: "add_recipe", arguments: { name: "https://example.org/evil.git" } })
    )
    expect(url.code).toBe("usage")
    expect(url.message).toContain("Git URLs are refused")
    const source = errorOf(
      await client.callTool({ name: "add_recipe", arguments: { source: "https://example.org/evil.git" } })
    )
    expect(source).toMatchObject({ code: "usage", message: "invalid input for add_recipe: source: unknown argument" })
    expect(errorOf(await client.callTool({ name: "remove_recipe", arguments: { name: "x", force: true } })).code).toBe(
      "usage"
    )
    const { tools } = await client.listTools()
    expect(Object.keys(tools.find((tool) => tool.name === "add_recipe")!.inputSchema.properties ?? {}).sort()).toEqual([
      "name",
      "ref"
    ])
  })

  it("refuses a guest tool below the VM's agent_access with the seed's wording", async () => {
    const denied = errorOf(await client.callTool({ name: "exec", arguments: { vm: "obs", argv: ["true"] } }))
    expect(denied).toEqual({
      code: "access_denied",
      message: 'vm "obs" has agent_access = observe; needs exec',
      subject: "obs"
    })
  })

  it("audits each call to stoat.log: entrypoint mcp, tool, VM, duration, outcome, never argument values", async () => {
    await client.callTool({ name: "exec", arguments: { vm: "obs", argv: ["echo", "s3cret-argument"] } })
    const log = readFileSync(join(home, "logs", "stoat.log"), "utf8")
    expect(log).toMatch(/op=guest\.exec tool=exec entrypoint=mcp request=\S+ vm=obs ms=\d+ outcome=error:access_denied/)
    expect(log).toMatch(/tool=vm_status entrypoint=mcp request=\S+ vm=nope ms=\d+ outcome=error:not_found/)
    expect(log).not.toContain("s3cret-argument")
  })

  it("audits refusals that happen before any operation runs: unknown tools (plain names only) and host-only fields", async () => {
    await client.callTool({ name: "no_such_tool", arguments: {} })
    await client.callTool({ name: "evil\ntool=forged", arguments: {} })
    await client.callTool({ name: "create", arguments: { name: "x1", image: "tiny", iso: "/etc/passwd" } })
    const log = readFileSync(join(home, "logs", "stoat.log"), "utf8")
    expect(log).toMatch(/op=- tool=no_such_tool entrypoint=mcp request=\S+ ms=0 outcome=error:usage/)
    expect(log).toMatch(/op=- tool=<invalid> entrypoint=mcp request=\S+ ms=0 outcome=error:usage/)
    expect(log).not.toContain("tool=forged")
    expect(log).toMatch(/op=vm\.create tool=create entrypoint=mcp request=\S+ ms=0 outcome=error:usage/)
    expect(log).not.toContain("/etc/passwd")
  })
})

describe("fuzzed arguments to the read tools of the real process (fast-check)", () => {
  it("answers every call with a success or an isError result carrying a wire code, and keeps serving", async () => {
    // Read tools only: a fuzzed start or create on the live stack could boot a real VM.
    const client = await stdioClient(tempHome(), ["--tool-burst", "100000", "--burst", "100000"])
    try {
      const { tools } = await client.listTools()
      for (const tool of tools.filter((t) => t.annotations?.readOnlyHint)) {
        const names = Object.keys(tool.inputSchema.properties ?? {})
        const args = fc.sample(
          fc.dictionary(
            names.length > 0
              ? fc.oneof(fc.constantFrom(...names), fc.string({ maxLength: 6 }))
              : fc.string({ maxLength: 6 }),
            fc.jsonValue({ maxDepth: 2 }),
            { maxKeys: 3 }
          ),
          { numRuns: 15, seed: 7 }
        )
        for (const input of args) {
          const result = await client.callTool({ name: tool.name, arguments: input })
          if (result.isError) expect(errorOf(result).code, `${tool.name} ${JSON.stringify(input)}`).not.toBe("internal")
        }
      }
      dataOf(await client.callTool({ name: "version", arguments: {} }))
    } finally {
      await client.close()
    }
  })
})

describe("rate-limit flags of stoat mcp", () => {
  it("--tool-burst/--tool-rate: the 31st call to one tool is refused while other tools still answer", async () => {
    const client = await stdioClient(tempHome(), ["--tool-burst", "30", "--tool-rate", "0"])
    try {
      for (let i = 0; i < 30; i++) dataOf(await client.callTool({ name: "version", arguments: {} }))
      const refused = errorOf(await client.callTool({ name: "version", arguments: {} }))
      expect(refused).toMatchObject({ code: "rate_limited", subject: "version" })
      expect(refused.message).toMatch(/^rate limit reached for version; /)
      dataOf(await client.callTool({ name: "list_vms", arguments: {} }))
    } finally {
      await client.close()
    }
  })

  it("--burst/--rate: the shared bucket refuses across tools, naming the server", async () => {
    const client = await stdioClient(tempHome(), ["--burst", "3", "--rate", "0"])
    try {
      for (const name of ["version", "list_vms", "list_images"]) dataOf(await client.callTool({ name, arguments: {} }))
      expect(errorOf(await client.callTool({ name: "doctor", arguments: {} }))).toMatchObject({
        code: "rate_limited",
        subject: "server"
      })
    } finally {
      await client.close()
    }
  })

  it("refuses a malformed limit at start", async () => {
    const result = await run(["mcp", "--tool-rate", "fast"], { STOAT_HOME: tempHome() })
    expect(result.code).toBe(2)
    expect(result.stderr).toMatch(/--tool-rate must be a number/)
  })
})

describe("delete safety and call-budget flags of stoat mcp", () => {
  it("a client without elicitation must pass confirm; --no-confirm restores the original's unconfirmed deletions", async () => {
    const home = tempHome()
    writeVm(home, "d1", "manage")
    writeVm(home, "d2", "manage", 2223)
    const strict = await stdioClient(home)
    try {
      const refused = errorOf(await strict.callTool({ name: "destroy", arguments: { vm: "d1" } }))
      expect(refused).toMatchObject({ code: "confirmation_required", subject: "d1" })
      expect(refused.message).toContain('confirm="d1"')
      dataOf(await strict.callTool({ name: "destroy", arguments: { vm: "d1", confirm: "d1" } }))
    } finally {
      await strict.close()
    }
    const loose = await stdioClient(home, ["--no-confirm"])
    try {
      dataOf(await loose.callTool({ name: "destroy", arguments: { vm: "d2" } }))
    } finally {
      await loose.close()
    }
  })

  it("refuses a malformed --call-budget, and --max-sessions without --http", async () => {
    const home = tempHome()
    const budget = await run(["mcp", "--call-budget", "0"], { STOAT_HOME: home })
    expect(budget.code).toBe(2)
    expect(budget.stderr).toMatch(/call-budget must be a whole number of seconds from 1 to 600/)
    const sessions = await run(["mcp", "--max-sessions", "4"], { STOAT_HOME: home })
    expect(sessions.code).toBe(2)
    expect(sessions.stderr).toMatch(/--max-sessions needs --http/)
  })
})

describe("stopping stoat mcp", () => {
  it("exits 0 on SIGTERM while a client still holds stdin open", async () => {
    const child = spawn(process.execPath, [BIN, "mcp"], {
      env: { ...process.env, STOAT_HOME: tempHome() },
      stdio: ["pipe", "pipe", "pipe"]
    })
    child.stderr.resume()
    const exited = new Promise<number | null>((resolve) => child.on("exit", resolve))
    const answered = new Promise<void>((resolve) => child.stdout.once("data", () => resolve()))
    child.stdin.write(
      `${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } })}\n`
    )
    await answered
    child.kill("SIGTERM")
    expect(await exited).toBe(0)
  })
})

describe("stdout carries only the protocol, and bad lines do not kill the server", () => {
  it("skips malformed JSON-RPC lines and keeps answering; every stdout line is JSON-RPC", async () => {
    const home = tempHome()
    const child = spawn(process.execPath, [BIN, "mcp"], {
      env: { ...process.env, STOAT_HOME: home },
      stdio: ["pipe", "pipe", "pipe"]
    })
    let stdout = ""
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.resume()
    const exited = new Promise<number | null>((resolve) => child.on("exit", resolve))
    const send = (line: string) => child.stdin.write(`${line}\n`)
    send(
      JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } }
      })
    )
    send(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }))
    const fixed = [
      "garbage{",
      "{}",
      "[1,2",
      '{"jsonrpc":"2.0","id":7}',
      '{"jsonrpc":"2.0","id":8,"method":"tools/call"}',
      '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":5}}',
      "\u0000\u0001",
      "null",
      '"str"'
    ]
    // Random lines and random JSON values (fast-check), none of them a request with id 2.
    const random = fc.sample(
      fc.oneof(
        fc.string(),
        fc.json(),
        fc.jsonValue().map((v) => JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tools/call", params: v }))
      ),
      { numRuns: 150, seed: 42 }
    )
    for (const bad of [...fixed, ...random]) send(bad.replace(/[\r\n]/g, " "))
    send(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "version", arguments: {} } }))
    child.stdin.end()
    expect(await exited).toBe(0)
    const lines = stdout.split("\n").filter((line) => line !== "")
    const messages = lines.map(
      (line) => JSON.parse(line) as { jsonrpc: string; id?: number; result?: { structuredContent?: unknown } }
    )
    for (const message of messages) expect(message.jsonrpc).toBe("2.0")
    expect(messages.find((message) => message.id === 2)?.result?.structuredContent).toMatchObject({ contract: 3 })
  })
})
