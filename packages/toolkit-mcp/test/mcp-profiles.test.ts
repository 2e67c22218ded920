import { request } from "node:http"
import Database from "better-sqlite3"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { connect, freePort, serve, tempHome, textOf, toolkit, type Home } from "./helpers.js"

/** `mcp save|delete|list` and how `mcp serve` picks a profile, entries, host and port. */

let home: Home
beforeEach(() => {
  home = tempHome()
})
afterEach(() => home.cleanup())

const BUILT_IN = "default (built-in)\n  include: interpreters\n  host: (default)\n  port: (default)\n"

/** Writes a profile row the way an older toolkit (or a renamed command) would have left it. */
const insertProfile = async (name: string, include: string[], port?: number): Promise<void> => {
  // Create the table through the real command first, then add the row directly.
  await toolkit(home, ["mcp", "save", "scratch", "--include", "strings"])
  const db = new Database(home.db)
  db.prepare(
    "INSERT OR REPLACE INTO mcp_profiles (name, include, host, port, updated_at) VALUES (?, ?, NULL, ?, '')"
  ).run(name, JSON.stringify(include), port ?? null)
  db.prepare("DELETE FROM mcp_profiles WHERE name = 'scratch'").run()
  db.close()
}

describe("mcp list", () => {
  it("shows the built-in default when nothing is saved", async () => {
    const run = await toolkit(home, ["mcp", "list"])
    expect(run).toMatchObject({ code: 0, stdout: BUILT_IN })
  })
})

describe("mcp save", () => {
  it("saves a profile of topics and action paths and counts its tools", async () => {
    const saved = await toolkit(home, [
      "mcp",
      "save",
      "text-tools",
      "--include",
      "strings",
      "--include",
      "interpreters/brainfuck",
      "--port",
      "5200"
    ])
    expect(saved).toMatchObject({ code: 0, stdout: "Saved MCP profile 'text-tools' (6 tools)\n" })
    const list = await toolkit(home, ["mcp", "list"])
    expect(list.stdout).toBe(
      `${BUILT_IN}\ntext-tools\n  include: strings, interpreters/brainfuck\n  host: (default)\n  port: 5200\n`
    )
  })

  it("lists saved profiles in name order around the built-in default", async () => {
    await toolkit(home, ["mcp", "save", "zeta", "--include", "strings/report"])
    await toolkit(home, ["mcp", "save", "alpha", "--include", "interpreters/ook", "--host", "::1"])
    expect((await toolkit(home, ["mcp", "list"])).stdout).toBe(
      `alpha\n  include: interpreters/ook\n  host: ::1\n  port: (default)\n\n${BUILT_IN}\nzeta\n  include: strings/report\n  host: (default)\n  port: (default)\n`
    )
  })

  it("overwrites an existing profile without merging", async () => {
    await toolkit(home, ["mcp", "save", "text-tools", "--include", "strings", "--host", "127.0.0.2", "--port", "5200"])
    const again = await toolkit(home, ["mcp", "save", "text-tools", "--include", "strings/reverse"])
    expect(again.stdout).toBe("Saved MCP profile 'text-tools' (1 tool)\n")
    const list = await toolkit(home, ["mcp", "list"])
    expect(list.stdout).toContain("text-tools\n  include: strings/reverse\n  host: (default)\n  port: (default)\n")
  })

  it("requires names to match ^[a-z0-9-]+$", async () => {
    for (const bad of ["Text", "text_tools", "a.b", "-x y"]) {
      const run = await toolkit(home, ["mcp", "save", bad, "--include", "strings"])
      expect(run.code).toBe(1)
      expect(run.stdout).toMatch(/^Error: /)
    }
    expect((await toolkit(home, ["mcp", "save", "ok-1", "--include", "strings"])).code).toBe(0)
    expect((await toolkit(home, ["mcp", "list"])).stdout).not.toMatch(/Text|text_tools/)
  })

  it("rejects entries that do not exist, and saves nothing", async () => {
    const run = await toolkit(home, ["mcp", "save", "p", "--include", "strings", "--include", "strings/nope"])
    expect(run).toMatchObject({
      code: 1,
      stdout: "Error: unknown entry 'strings/nope': there is no such topic or command\n"
    })
    const topic = await toolkit(home, ["mcp", "save", "p", "--include", "nope"])
    expect(topic.code).toBe(1)
    expect((await toolkit(home, ["mcp", "list"])).stdout).toBe(BUILT_IN)
  })

  it("rejects every never-exposed command and topic", async () => {
    for (const entry of [
      "mcp",
      "mcp/serve",
      "config",
      "web/serve-html",
      "web",
      "demoscene",
      "demoscene/plasma",
      "oauth/token",
      "oauth/profile/add",
      "oauth/profile/update"
    ]) {
      const run = await toolkit(home, ["mcp", "save", "p", "--include", entry])
      expect(run, entry).toMatchObject({
        code: 1,
        stdout: `Error: entry '${entry}' cannot be exposed as an MCP tool\n`
      })
    }
    // A topic that mixes both kinds exposes only the exposable commands.
    expect((await toolkit(home, ["mcp", "save", "p", "--include", "oauth"])).stdout).toBe(
      "Saved MCP profile 'p' (2 tools)\n"
    )
  })
})

describe("the default profile", () => {
  it("can be overridden by saving 'default' and restored by deleting it", async () => {
    const saved = await toolkit(home, ["mcp", "save", "default", "--include", "strings"])
    expect(saved.stdout).toBe("Saved MCP profile 'default' (5 tools)\n")
    expect((await toolkit(home, ["mcp", "list"])).stdout).toBe(
      "default\n  include: strings\n  host: (default)\n  port: (default)\n"
    )
    const server = await serve(home, ["--port", "0"])
    try {
      expect(server.lines[0]).toMatch(/^Serving MCP profile 'default' on http:\/\/127\.0\.0\.1:\d+\/mcp$/)
      expect(server.lines[1]).toBe(
        "Tools: strings_reverse, strings_levenshtein-distance, strings_abjadify, strings_flesch-reading-ease, strings_report"
      )
    } finally {
      await server.stop()
    }
    const deleted = await toolkit(home, ["mcp", "delete", "default"])
    expect(deleted).toMatchObject({
      code: 0,
      stdout: "Deleted MCP profile 'default'\nBuilt-in default profile restored.\n"
    })
    expect((await toolkit(home, ["mcp", "list"])).stdout).toBe(BUILT_IN)
  })

  it("serves interpreters when nothing is saved", async () => {
    const server = await serve(home, ["--port", "0"])
    try {
      expect(server.lines[1]).toBe("Tools: interpreters_brainfuck, interpreters_ook, interpreters_bf-to-ook")
    } finally {
      await server.stop()
    }
  })
})

describe("mcp delete", () => {
  it("deletes a saved profile and fails for one that does not exist", async () => {
    await toolkit(home, ["mcp", "save", "text-tools", "--include", "strings"])
    expect(await toolkit(home, ["mcp", "delete", "text-tools"])).toMatchObject({
      code: 0,
      stdout: "Deleted MCP profile 'text-tools'\n"
    })
    expect(await toolkit(home, ["mcp", "delete", "text-tools"])).toMatchObject({
      code: 1,
      stdout: "Error: MCP profile 'text-tools' does not exist\n"
    })
    // The built-in default is not a saved profile.
    expect((await toolkit(home, ["mcp", "delete", "default"])).code).toBe(1)
  })
})

describe("stale entries", () => {
  it("are marked in list, skipped with a warning by serve, and the rest is served", async () => {
    await insertProfile("text-tools", ["strings/reverse", "strings/nope", "web/serve-html"])
    expect((await toolkit(home, ["mcp", "list"])).stdout).toContain(
      "text-tools\n  include: strings/reverse, strings/nope (unresolved), web/serve-html (unresolved)\n"
    )
    const server = await serve(home, ["--profile", "text-tools", "--port", "0"])
    try {
      expect(server.stderr()).toContain(
        "Warning: skipping unresolved entry 'strings/nope' in MCP profile 'text-tools'\n"
      )
      expect(server.stderr()).toContain(
        "Warning: skipping unresolved entry 'web/serve-html' in MCP profile 'text-tools'\n"
      )
      expect(server.lines[1]).toBe("Tools: strings_reverse")
      const client = await connect(server.url)
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["strings_reverse"])
      await client.close()
    } finally {
      await server.stop()
    }
  })

  it("stop the server from starting when no entry resolves", async () => {
    await insertProfile("gone", ["strings/nope", "old-topic"])
    const run = await toolkit(home, ["mcp", "serve", "--profile", "gone", "--port", "0"])
    expect(run.code).toBe(1)
    expect(run.stderr).toBe(
      "Warning: skipping unresolved entry 'strings/nope' in MCP profile 'gone'\nWarning: skipping unresolved entry 'old-topic' in MCP profile 'gone'\n"
    )
    expect(run.stdout).toBe("Error: no entry of MCP profile 'gone' resolves to a command; the server was not started\n")
  })
})

describe("mcp serve: profile, host and port", () => {
  it("fails for a profile that does not exist", async () => {
    expect(await toolkit(home, ["mcp", "serve", "--profile", "nope"])).toMatchObject({
      code: 1,
      stdout: "Error: MCP profile 'nope' does not exist\n"
    })
  })

  it("binds 127.0.0.1:5100 by default", async () => {
    const server = await serve(home, [])
    try {
      expect(server.lines).toEqual([
        "Serving MCP profile 'default' on http://127.0.0.1:5100/mcp",
        "Tools: interpreters_brainfuck, interpreters_ook, interpreters_bf-to-ook"
      ])
    } finally {
      await server.stop()
    }
  })

  it("uses the profile's host and port, and the flags over both", async () => {
    const [saved, flag] = [await freePort(), await freePort()]
    await toolkit(home, ["mcp", "save", "p", "--include", "strings", "--host", "localhost", "--port", String(saved)])
    let server = await serve(home, ["--profile", "p"])
    try {
      expect(server.lines[0]).toBe(`Serving MCP profile 'p' on http://localhost:${saved}/mcp`)
    } finally {
      await server.stop()
    }
    server = await serve(home, ["--profile", "p", "--host", "127.0.0.1", "--port", String(flag)])
    try {
      expect(server.lines[0]).toBe(`Serving MCP profile 'p' on http://127.0.0.1:${flag}/mcp`)
      const client = await connect(server.url)
      expect(
        textOf(
          await client.callTool({ name: "strings_levenshtein-distance", arguments: { string1: "a", string2: "ab" } })
        )
      ).toBe("Levenshtein distance: 1\n")
      await client.close()
    } finally {
      await server.stop()
    }
  })

  it("refuses a non-loopback bind without --allow-remote", async () => {
    const run = await toolkit(home, ["mcp", "serve", "--host", "0.0.0.0", "--port", "0"])
    expect(run.code).toBe(1)
    expect(run.stdout).toMatch(/^Error: refusing to bind to non-loopback address 0\.0\.0\.0/)
    // The same for a host saved in the profile.
    await toolkit(home, ["mcp", "save", "remote", "--include", "strings", "--host", "0.0.0.0"])
    expect((await toolkit(home, ["mcp", "serve", "--profile", "remote", "--port", "0"])).code).toBe(1)
  })

  it("binds a non-loopback address with --allow-remote, warning, and without Host checks", async () => {
    const server = await serve(home, ["--host", "0.0.0.0", "--port", "0", "--allow-remote"])
    try {
      expect(server.stderr()).toBe(
        "Warning: binding to non-loopback address 0.0.0.0; the MCP server has no authentication.\n"
      )
      expect(server.lines[0]).toMatch(/^Serving MCP profile 'default' on http:\/\/0\.0\.0\.0:\d+\/mcp$/)
      const port = new URL(server.url).port
      const status = await new Promise<number>((resolve, reject) => {
        const req = request(
          `http://127.0.0.1:${port}/mcp`,
          { method: "GET", headers: { host: "evil.example.com" } },
          (res) => {
            res.resume()
            resolve(res.statusCode ?? 0)
          }
        )
        req.on("error", reject)
        req.end()
      })
      expect(status).toBe(405) // reached the endpoint: no loopback-only Host check
    } finally {
      await server.stop()
    }
  })

  it("hides the timeout option, whose default is 300 s", async () => {
    const help = await toolkit(home, ["mcp", "serve", "--help"])
    expect(help.stdout).toContain("--allow-remote")
    expect(help.stdout).not.toContain("tool-timeout-ms")
    const { default: McpServe } = await import("../src/commands/mcp/serve.js")
    expect(McpServe.flags["tool-timeout-ms"].default).toBe(300_000)
    const { seconds } = await import("../src/mcp/result.js")
    expect(`timed out after ${seconds(300_000)} s`).toBe("timed out after 300 s")
  })
})
