import { readFileSync } from "node:fs"
import { join } from "node:path"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { serveHttp, type RunningHttpServer } from "../src/http.js"
import { dataOf, errorOf, fakeMcp, testClient, unreachableVm } from "./helpers.js"

/** The real HTTP transport in this process over the in-memory hypervisor: what needs a long call or a question. */
describe("Streamable HTTP sessions: progress, cancellation and elicitation reach the right client", () => {
  const fake = fakeMcp({ heartbeatMs: 50 })
  let http: RunningHttpServer
  beforeAll(async () => {
    http = await serveHttp(fake.mcp, { address: "127.0.0.1:0" })
  })
  afterAll(async () => {
    await http?.close()
    await fake.runtime.dispose()
  })

  const connect = async (
    elicit?: (message: string) => { action: "accept"; content: { confirm: string } } | { action: "decline" }
  ) => {
    const { client, elicited } = testClient(elicit)
    await client.connect(new StreamableHTTPClientTransport(new URL(http.url)))
    return { client, elicited }
  }

  it("streams progress notifications of a long wait to the caller", async () => {
    const { client } = await connect()
    try {
      await unreachableVm(client, fake.guest, "h1")
      const seen: number[] = []
      const result = await client.callTool({ name: "wait", arguments: { vm: "h1", timeout_seconds: 1 } }, undefined, {
        onprogress: (p) => seen.push(p.progress)
      })
      expect(errorOf(result).code).toBe("timeout")
      expect(seen.length).toBeGreaterThan(0)
    } finally {
      await client.close()
    }
  })

  it("cancels a call over HTTP: the operation is interrupted and audited as canceled", async () => {
    const { client } = await connect()
    try {
      await unreachableVm(client, fake.guest, "h2")
      const controller = new AbortController()
      const call = client.callTool({ name: "wait", arguments: { vm: "h2", timeout_seconds: 600 } }, undefined, {
        signal: controller.signal,
        onprogress: () => controller.abort()
      })
      await expect(call).rejects.toThrow()
      const log = join(fake.root, "logs", "stoat.log")
      for (let i = 0; i < 100 && !/vm=h2 .*outcome=error:canceled/.test(readFileSync(log, "utf8")); i++)
        await new Promise((r) => setTimeout(r, 50))
      expect(readFileSync(log, "utf8")).toMatch(/tool=wait entrypoint=mcp .* vm=h2 .*outcome=error:canceled/)
    } finally {
      await client.close()
    }
  })

  it("asks the client that called destroy, not another one", async () => {
    const yes = await connect(() => ({ action: "accept", content: { confirm: "h3" } }))
    const no = await connect(() => ({ action: "decline" }))
    try {
      dataOf(await yes.client.callTool({ name: "create", arguments: { name: "h3", image: "tiny" } }))
      dataOf(await yes.client.callTool({ name: "create", arguments: { name: "h4", image: "tiny" } }))
      expect(errorOf(await no.client.callTool({ name: "destroy", arguments: { vm: "h4" } })).code).toBe(
        "confirmation_required"
      )
      dataOf(await yes.client.callTool({ name: "destroy", arguments: { vm: "h3" } }))
      expect(yes.elicited).toHaveLength(1)
      expect(no.elicited).toHaveLength(1)
      expect(
        dataOf(await no.client.callTool({ name: "list_vms", arguments: {} })).vms.map((v: { name: string }) => v.name)
      ).toEqual(["h1", "h2", "h4"])
    } finally {
      await Promise.all([yes.client.close(), no.client.close()])
    }
  })

  it("keeps at most maxSessions sessions, closing the least recently used", async () => {
    const small = await serveHttp(fake.mcp, { address: "127.0.0.1:0", maxSessions: 2 })
    const clients = []
    try {
      for (let i = 0; i < 3; i++) {
        const { client } = testClient()
        await client.connect(new StreamableHTTPClientTransport(new URL(small.url)))
        clients.push(client)
        if (i === 1) dataOf(await clients[0]!.callTool({ name: "version", arguments: {} }))
      }
      // The second session was the least recently used when the third arrived.
      dataOf(await clients[0]!.callTool({ name: "version", arguments: {} }))
      dataOf(await clients[2]!.callTool({ name: "version", arguments: {} }))
      await expect(clients[1]!.callTool({ name: "version", arguments: {} })).rejects.toThrow(/Session not found|404/)
    } finally {
      for (const client of clients) await client.close().catch(() => undefined)
      await small.close()
    }
  })

  it("never evicts a session with a call in flight: the least recently used idle one makes room, or the new one is refused", async () => {
    const small = await serveHttp(fake.mcp, { address: "127.0.0.1:0", maxSessions: 2 })
    const connectTo = async () => {
      const { client } = testClient()
      await client.connect(new StreamableHTTPClientTransport(new URL(small.url)))
      return client
    }
    /** A wait that runs ~3 s; `running` resolves once the server is working on it. */
    const longWait = (client: Awaited<ReturnType<typeof connectTo>>) => {
      let started!: () => void
      const running = new Promise<void>((resolve) => (started = resolve))
      const call = client.callTool({ name: "wait", arguments: { vm: "h5", timeout_seconds: 3 } }, undefined, {
        onprogress: () => started()
      })
      return { call, running }
    }
    const clients = []
    try {
      const busy = await connectTo()
      clients.push(busy)
      await unreachableVm(busy, fake.guest, "h5")
      // A long call: its session is the least recently used from here on, but in use.
      const long = longWait(busy)
      await long.running
      const idle = await connectTo()
      clients.push(idle)
      dataOf(await idle.callTool({ name: "version", arguments: {} }))
      // A third session: the idle one goes, the busy one stays and its call answers itself.
      const third = await connectTo()
      clients.push(third)
      await expect(idle.callTool({ name: "version", arguments: {} })).rejects.toThrow(/Session not found|404/)
      expect(errorOf(await long.call).code).toBe("timeout")
      dataOf(await third.callTool({ name: "version", arguments: {} }))
      // Every session busy: a new client is refused (503) rather than cutting off a call.
      const calls = [longWait(busy), longWait(third)]
      await Promise.all(calls.map((c) => c.running))
      await expect(connectTo()).rejects.toThrow(/503|busy/)
      for (const c of calls) expect(errorOf(await c.call).code).toBe("timeout")
      clients.push(await connectTo())
    } finally {
      for (const client of clients) await client.close().catch(() => undefined)
      await small.close()
    }
  })

  it("closes a session idle for sessionIdleMs; a held stream or a call in flight is not idle", async () => {
    const idle = await serveHttp(fake.mcp, { address: "127.0.0.1:0", sessionIdleMs: 200 })
    const post = (body: unknown, session?: string) =>
      fetch(idle.url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          ...(session ? { "mcp-session-id": session } : {})
        },
        body: JSON.stringify(body)
      })
    try {
      // A client that stops calling and holds no stream (it vanished without a DELETE).
      const opened = await post({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } }
      })
      const session = opened.headers.get("mcp-session-id")!
      await opened.text()
      expect((await post({ jsonrpc: "2.0", method: "notifications/initialized" }, session)).status).toBe(202)
      await new Promise((resolve) => setTimeout(resolve, 700))
      expect((await post({ jsonrpc: "2.0", id: 2, method: "tools/list" }, session)).status).toBe(404)
      // The SDK client holds its GET stream open: alive, so kept past the idle time.
      const { client } = testClient()
      await client.connect(new StreamableHTTPClientTransport(new URL(idle.url)))
      await new Promise((resolve) => setTimeout(resolve, 700))
      dataOf(await client.callTool({ name: "version", arguments: {} }))
      await client.close()
    } finally {
      await idle.close()
    }
  })
})
