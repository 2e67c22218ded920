import { writeFileSync } from "node:fs"
import { request } from "node:http"
import { join } from "node:path"
import fc from "fast-check"
import { catalog } from "@stoat/core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { dataOf, errorOf, httpClient, run, startHttp, tempHome, writeVm, type HttpServerProcess } from "./helpers.js"

/** One raw HTTP request, so headers a client library would fix (Host, Origin) can be set freely. */
const raw = (
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string; path?: string }
) =>
  new Promise<{ status: number; body: string; headers: Record<string, unknown> }>((resolve, reject) => {
    const target = new URL(url)
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        path: options.path ?? target.pathname,
        method: options.method ?? "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          ...options.headers
        }
      },
      (res) => {
        let body = ""
        res.on("data", (chunk: Buffer) => (body += chunk.toString()))
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }))
      }
    )
    req.on("error", reject)
    req.end(options.body ?? "")
  })

const INIT = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } }
})

describe("stoat mcp --http: loopback only, refused at start otherwise", () => {
  for (const address of ["0.0.0.0:7777", "192.168.1.10:7777", "[::]:7777", "example.com:80", "7777", "127.0.0.1"]) {
    it(`refuses ${address} with a clear message (exit 2)`, async () => {
      const home = tempHome()
      const result = await run(["mcp", "--http", address], { STOAT_HOME: home })
      expect(result.code).toBe(2)
      expect(result.stderr).toMatch(
        /stoat: mcp: .*(must be loopback \(127\.0\.0\.1, ::1 or localhost\)|is not an address)/
      )
      expect(result.stdout).toBe("")
    })
  }

  it("refuses a token file without --http, and an empty token file", async () => {
    const home = tempHome()
    writeFileSync(join(home, "empty"), "\n")
    expect((await run(["mcp", "--token-file", join(home, "empty")], { STOAT_HOME: home })).stderr).toMatch(
      /--token-file needs --http/
    )
    expect(
      (await run(["mcp", "--http", "127.0.0.1:0", "--token-file", join(home, "empty")], { STOAT_HOME: home })).stderr
    ).toMatch(/is empty/)
  })
})

describe("stoat mcp --http 127.0.0.1:<port> with real SDK clients", () => {
  const home = tempHome()
  let server: HttpServerProcess
  beforeAll(async () => {
    writeVm(home, "obs", "observe")
    server = await startHttp(home, ["--http", "127.0.0.1:0"])
  })
  afterAll(async () => server?.stop())

  it("serves several clients at once, on any path", async () => {
    const other = server.url.replace(/\/mcp$/, "/anything/else")
    const [a, b] = await Promise.all([httpClient(server.url), httpClient(other)])
    try {
      const [listA, listB] = await Promise.all([a.listTools(), b.listTools()])
      // One tool per catalog entry the MCP server exposes.
      expect(listA.tools.length).toBe(catalog.filter((op) => op.expose.mcp).length)
      expect(listB.tools.map((t) => t.name)).toEqual(listA.tools.map((t) => t.name))
      const [vmsA, vmsB] = await Promise.all([
        a.callTool({ name: "list_vms", arguments: {} }),
        b.callTool({ name: "list_vms", arguments: {} })
      ])
      expect(dataOf(vmsA)).toEqual(dataOf(vmsB))
      expect(errorOf(await b.callTool({ name: "exec", arguments: { vm: "obs", argv: ["id"] } }))).toMatchObject({
        code: "access_denied"
      })
    } finally {
      await Promise.all([a.close(), b.close()])
    }
  })

  it("answers a foreign Host with 403 (DNS rebinding), a foreign Origin with 403, and local names normally", async () => {
    expect((await raw(server.url, { headers: { host: "evil.example.com" }, body: INIT })).status).toBe(403)
    expect(
      (await raw(server.url, { headers: { host: "evil.example.com", origin: "http://evil.example.com" }, body: INIT }))
        .status
    ).toBe(403)
    expect((await raw(server.url, { headers: { origin: "http://evil.example.com" }, body: INIT })).status).toBe(403)
    expect((await raw(server.url, { headers: { origin: "null" }, body: INIT })).status).toBe(403)
    const port = new URL(server.url).port
    for (const host of ["localhost", `localhost:${port}`, "127.0.0.1", `[::1]:${port}`]) {
      expect((await raw(server.url, { headers: { host, origin: `http://${host}` }, body: INIT })).status, host).toBe(
        200
      )
    }
  })

  it("answers malformed requests with JSON-RPC errors and keeps serving (fast-check bodies)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string(),
          fc.json(),
          fc.constantFrom("{", "[]", "null", '{"jsonrpc":"2.0","id":1,"method":"tools/call"}')
        ),
        async (body) => {
          const answer = await raw(server.url, { body })
          expect(answer.status).toBeGreaterThanOrEqual(200)
          expect(answer.status).toBeLessThan(500)
        }
      ),
      { numRuns: 60 }
    )
    expect((await raw(server.url, { method: "GET" })).status).toBe(400)
    const client = await httpClient(server.url)
    try {
      dataOf(await client.callTool({ name: "version", arguments: {} }))
    } finally {
      await client.close()
    }
  })
})

describe("stoat mcp --http --max-sessions", () => {
  it("keeps that many sessions: a new one closes the least recently used idle session", async () => {
    const server = await startHttp(tempHome(), ["--http", "127.0.0.1:0", "--max-sessions", "1"])
    try {
      const first = await httpClient(server.url)
      const second = await httpClient(server.url)
      dataOf(await second.callTool({ name: "version", arguments: {} }))
      await expect(first.callTool({ name: "version", arguments: {} })).rejects.toThrow(/Session not found|404/)
      await Promise.all([first.close().catch(() => undefined), second.close()])
    } finally {
      await server.stop()
    }
  })
})

describe("stoat mcp --http --token-file: a bearer token or 401", () => {
  const home = tempHome()
  let server: HttpServerProcess
  beforeAll(async () => {
    writeFileSync(join(home, "token"), "s3cret-token\n")
    server = await startHttp(home, ["--http", "127.0.0.1:0", "--token-file", join(home, "token")])
  })
  afterAll(async () => server?.stop())

  it("answers 401 without the token or with a wrong one, and serves with it", async () => {
    const missing = await raw(server.url, { body: INIT })
    expect(missing.status).toBe(401)
    expect(missing.headers["www-authenticate"]).toBe("Bearer")
    expect((await raw(server.url, { body: INIT, headers: { authorization: "Bearer wrong" } })).status).toBe(401)
    // Host and Origin are checked first: a rebinding page gets 403 even with the token.
    expect(
      (
        await raw(server.url, {
          body: INIT,
          headers: { authorization: "Bearer s3cret-token", host: "evil.example.com" }
        })
      ).status
    ).toBe(403)
    const client = await httpClient(server.url, { authorization: "Bearer s3cret-token" })
    try {
      dataOf(await client.callTool({ name: "list_vms", arguments: {} }))
    } finally {
      await client.close()
    }
    expect(server.stderr()).not.toContain("s3cret-token")
  })
})
