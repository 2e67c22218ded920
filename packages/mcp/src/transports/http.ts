import { randomUUID } from "node:crypto"
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js"
import { checkRequest, parseLoopbackAddress } from "@stoat/core"
import { createServer, type StoatMcp } from "../server.js"

const MAX_BODY_BYTES = 4 * 1024 * 1024
/** Sessions kept at once unless `--max-sessions` says otherwise. */
export const DEFAULT_MAX_SESSIONS = 64

export interface HttpOptions {
  /** host:port, loopback only. Port 0 picks a free port. */
  readonly address: string
  /** Bearer token every request must carry. */
  readonly token?: string
  readonly log?: (line: string) => void
  /** Sessions kept at once (default 64); a new one beyond this closes the least recently used idle one. */
  readonly maxSessions?: number
  /** A session without a request for this long is closed (default 30 minutes); a call in flight keeps it open. */
  readonly sessionIdleMs?: number
}

interface Session {
  readonly transport: StreamableHTTPServerTransport
  lastSeen: number
  /** Requests being answered (a long `wait` or a held SSE stream): the session is not idle. */
  inFlight: number
  /** POSTs being answered (calls): a session with one is never evicted to make room. */
  calls: number
}

export interface RunningHttpServer {
  readonly url: string
  readonly port: number
  readonly close: () => Promise<void>
}

/** Thrown before listening when the address is not loopback or not an address at all. */
export class AddressRefused extends Error {
  override readonly name = "AddressRefused"
}

const jsonRpcError = (
  res: ServerResponse,
  status: number,
  code: number,
  message: string,
  headers: Record<string, string> = {}
): void => {
  if (res.headersSent) {
    res.end()
    return
  }
  res
    .writeHead(status, { "content-type": "application/json", ...headers })
    .end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }))
}

const readJson = (req: IncomingMessage): Promise<{ body: unknown } | { error: string; status: number; code: number }> =>
  new Promise((resolve) => {
    const chunks: Buffer[] = []
    let size = 0
    req.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size > MAX_BODY_BYTES) {
        resolve({ error: "request body too large", status: 413, code: -32600 })
        req.destroy()
      } else chunks.push(chunk)
    })
    req.on("end", () => {
      try {
        resolve({ body: JSON.parse(Buffer.concat(chunks).toString("utf8")) })
      } catch {
        resolve({ error: "Parse error: the body is not JSON", status: 400, code: -32700 })
      }
    })
    req.on("error", () => resolve({ error: "request aborted", status: 400, code: -32600 }))
  })

/**
 * Streamable HTTP on a loopback address, answering on every path. Each client gets its own
 * session (and SDK Server) so progress, cancellation and elicitation reach the right client;
 * all sessions share one rate limiter and runtime. Every request passes the loopback guard
 * (Host and Origin: 403; token: 401) before the SDK sees it.
 */
export const serveHttp = async (mcp: StoatMcp, options: HttpOptions): Promise<RunningHttpServer> => {
  const address = parseLoopbackAddress(options.address)
  if ("error" in address) throw new AddressRefused(address.error)
  const sessions = new Map<string, Session>()
  const guard = options.token !== undefined ? { token: options.token } : {}
  const maxSessions = options.maxSessions ?? DEFAULT_MAX_SESSIONS
  const idleMs = options.sessionIdleMs ?? 30 * 60_000
  const expire = (id: string, session: Session) => {
    sessions.delete(id)
    void session.transport.close().catch(() => undefined)
  }
  // Clients that vanish without a DELETE would otherwise keep their SDK Server forever.
  const sweeper = setInterval(
    () => {
      const now = Date.now()
      for (const [id, session] of sessions)
        if (session.inFlight === 0 && now - session.lastSeen >= idleMs) expire(id, session)
    },
    Math.max(10, Math.min(idleMs / 2, 60_000))
  )
  sweeper.unref()

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const verdict = checkRequest(
      { host: req.headers.host, origin: req.headers.origin, authorization: req.headers.authorization },
      guard
    )
    if (!verdict.ok) {
      jsonRpcError(res, verdict.status, -32000, verdict.message, verdict.headers)
      return
    }
    const sessionHeader = req.headers["mcp-session-id"]
    const sessionId = Array.isArray(sessionHeader) ? sessionHeader[0] : sessionHeader
    let body: unknown
    if (req.method === "POST") {
      const parsed = await readJson(req)
      if ("error" in parsed) {
        jsonRpcError(res, parsed.status, parsed.code, parsed.error)
        return
      }
      body = parsed.body
    }
    if (sessionId !== undefined) {
      const session = sessions.get(sessionId)
      if (!session) {
        jsonRpcError(res, 404, -32001, "Session not found: initialize again")
        return
      }
      // Map order is recency order: the least recently used entry is the first to close when full.
      sessions.delete(sessionId)
      sessions.set(sessionId, session)
      const call = req.method === "POST"
      session.inFlight++
      if (call) session.calls++
      res.once("close", () => {
        session.inFlight--
        if (call) session.calls--
        session.lastSeen = Date.now()
      })
      await session.transport.handleRequest(req, res, body)
      return
    }
    const initializing =
      req.method === "POST" && (Array.isArray(body) ? body.some(isInitializeRequest) : isInitializeRequest(body))
    if (!initializing) {
      jsonRpcError(res, 400, -32000, "Bad Request: send initialize first, then the Mcp-Session-Id header it returns")
      return
    }
    // Room for the new session: close the least recently used sessions with no call in flight.
    for (const [id, session] of sessions) {
      if (sessions.size < maxSessions) break
      if (session.calls === 0) expire(id, session)
    }
    if (sessions.size >= maxSessions) {
      jsonRpcError(
        res,
        503,
        -32000,
        `Server busy: all ${maxSessions} sessions have a call in flight; retry later, or start the server with a higher --max-sessions`,
        {
          "retry-after": "5"
        }
      )
      return
    }
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.set(id, { transport, lastSeen: Date.now(), inFlight: 0, calls: 0 })
      }
    })
    transport.onclose = () => {
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId)
    }
    const server = createServer(mcp)
    server.onerror = (error) => options.log?.(`stoat mcp: ${error.message}`)
    await server.connect(transport)
    await transport.handleRequest(req, res, body)
  }

  const http = createHttpServer((req, res) => {
    handle(req, res).catch((error: unknown) =>
      jsonRpcError(res, 500, -32603, `Internal error: ${error instanceof Error ? error.message : String(error)}`)
    )
  })
  // Calls may run for minutes (wait and exec allow 600 s).
  http.requestTimeout = 0
  http.headersTimeout = 60_000
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject)
    http.listen(address.port, address.host, () => {
      http.off("error", reject)
      resolve()
    })
  })
  const bound = http.address()
  const port = typeof bound === "object" && bound !== null ? bound.port : address.port
  const shown = address.host.includes(":") ? `[${address.host}]` : address.host
  return {
    url: `http://${shown}:${port}/mcp`,
    port,
    close: async () => {
      clearInterval(sweeper)
      for (const { transport } of sessions.values()) await transport.close().catch(() => undefined)
      await new Promise<void>((resolve) => {
        http.close(() => resolve())
        http.closeAllConnections()
      })
    }
  }
}
