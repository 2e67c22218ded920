import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { isIP } from "node:net"
import type { Config } from "@oclif/core"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { captureIO } from "../runtime/io.js"
import { runCommand } from "../runtime/run.js"
import { TOOLKIT_VERSION } from "../version.js"
import { resultText, seconds } from "./result.js"
import { toArgv, type ToolEntry } from "./tools.js"

/** Exit codes in the per-call log line for calls that ran no command to its end. */
const EXIT_UNKNOWN_TOOL = 127
const EXIT_TIMEOUT = 124
const EXIT_CANCELLED = 130
const MAX_BODY_BYTES = 4 * 1024 * 1024

export interface ServeOptions {
  readonly config: Config
  readonly tools: ReadonlyArray<ToolEntry>
  readonly host: string
  readonly port: number
  readonly timeoutMs: number
  /** Receives one `tool <name> exit <code> <ms>ms` line per call. */
  readonly log: (line: string) => void
}

export interface RunningServer {
  readonly url: string
  readonly close: () => Promise<void>
}

/** 127.0.0.0/8, ::1 (also IPv4-mapped) and the name localhost. */
export const isLoopback = (host: string): boolean => {
  const h = host.toLowerCase().replace(/^\[(.*)\]$/, "$1")
  if (h === "localhost") return true
  if (isIP(h) === 4) return h.startsWith("127.")
  if (isIP(h) === 6) return h === "::1" || h === "0:0:0:0:0:0:0:1" || /^::ffff:127\./.test(h)
  return false
}

const ALLOWED_HOSTNAMES = new Set(["localhost", "127.0.0.1", "[::1]"])

/** The hostname of a Host header, without the port; IPv6 stays bracketed. */
const hostnameOf = (host: string): string => {
  const h = host.trim().toLowerCase()
  if (h.startsWith("[")) return h.slice(0, h.indexOf("]") + 1)
  const colon = h.lastIndexOf(":")
  return colon === -1 ? h : h.slice(0, colon)
}

const bracket = (host: string): string => (isIP(host) === 6 ? `[${host}]` : host)

/**
 * Calls in flight by JSON-RPC request id, so a `notifications/cancelled` (which arrives in a
 * separate stateless POST) can stop the call it names. Stateless HTTP has no session to tell
 * clients apart, so every call in flight with that id is cancelled.
 */
class InFlight {
  private readonly calls = new Map<string, Set<AbortController>>()
  add(id: string | number, controller: AbortController): () => void {
    const key = String(id)
    const set = this.calls.get(key) ?? new Set()
    set.add(controller)
    this.calls.set(key, set)
    return () => {
      set.delete(controller)
      if (set.size === 0 && this.calls.get(key) === set) this.calls.delete(key)
    }
  }
  cancel(id: unknown): void {
    if (typeof id !== "string" && typeof id !== "number") return
    for (const controller of this.calls.get(String(id)) ?? []) controller.abort(new CancelledByClient())
  }
}

class CancelledByClient extends Error {
  override readonly name = "CancelledByClient"
}
class CallTimedOut extends Error {
  override readonly name = "CallTimedOut"
}

const text = (body: string, isError: boolean): CallToolResult => ({ content: [{ type: "text", text: body }], ...(isError ? { isError: true } : {}) })

const readBody = (req: IncomingMessage): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    req.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size > MAX_BODY_BYTES) {
        reject(new Error("request body too large"))
        req.destroy()
      } else chunks.push(chunk)
    })
    req.on("end", () => resolve(Buffer.concat(chunks)))
    req.on("error", reject)
  })

const jsonError = (res: ServerResponse, status: number, code: number, message: string, headers: Record<string, string> = {}): void => {
  res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }))
}

/**
 * The profile's tools over stateless Streamable HTTP at /mcp: every POST gets a fresh
 * low-level SDK Server and transport; each tool call runs its command in this process with
 * its own command instance and captured output.
 */
export const startServer = async (options: ServeOptions): Promise<RunningServer> => {
  const { config, tools, timeoutMs, log } = options
  const byName = new Map(tools.map((tool) => [tool.name, tool]))
  const definitions = tools.map((tool) => tool.definition)
  const inFlight = new InFlight()
  const loopback = isLoopback(options.host)
  const boundName = bracket(options.host.toLowerCase())

  const logCall = (name: string, code: number, started: number): void => log(`tool ${name} exit ${code} ${Math.round(performance.now() - started)}ms`)

  const callTool = async (name: string, args: Record<string, unknown> | undefined, requestId: string | number, requestSignal: AbortSignal): Promise<CallToolResult> => {
    const started = performance.now()
    const tool = byName.get(name)
    if (!tool) {
      logCall(name, EXIT_UNKNOWN_TOOL, started)
      return text(`Unknown tool '${name}'.`, true)
    }
    const parsed = toArgv(tool, args)
    if ("error" in parsed) {
      logCall(name, 1, started)
      return text(resultText(`${parsed.error}\n`, "", 1), true)
    }
    const controller = new AbortController()
    const forget = inFlight.add(requestId, controller)
    const onRequestAbort = (): void => controller.abort(new CancelledByClient())
    requestSignal.addEventListener("abort", onRequestAbort, { once: true })
    const timer = setTimeout(() => controller.abort(new CallTimedOut()), timeoutMs)
    const captured = captureIO(controller.signal)
    try {
      const stopped = new Promise<"stopped">((resolve) => controller.signal.addEventListener("abort", () => resolve("stopped"), { once: true }))
      const outcome = await Promise.race([runCommand(tool.cls, tool.id, parsed.argv, captured.io, config), stopped])
      if (outcome === "stopped") {
        // The command was told to stop through io.signal (the interpreters end their worker);
        // whatever it still does is not waited for.
        if (controller.signal.reason instanceof CallTimedOut) {
          logCall(name, EXIT_TIMEOUT, started)
          return text(`Tool ${name} timed out after ${seconds(timeoutMs)} s`, true)
        }
        logCall(name, EXIT_CANCELLED, started)
        return text(`Tool ${name} was cancelled.`, true)
      }
      logCall(name, outcome, started)
      return text(resultText(captured.stdout(), captured.stderr(), outcome), outcome !== 0)
    } finally {
      clearTimeout(timer)
      requestSignal.removeEventListener("abort", onRequestAbort)
      forget()
    }
  }

  const mcpServer = (): Server => {
    const server = new Server({ name: "toolkit", version: TOOLKIT_VERSION }, { capabilities: { tools: { listChanged: false } } })
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: definitions as never }))
    server.setRequestHandler(CallToolRequestSchema, (request, extra) =>
      callTool(request.params.name, request.params.arguments as Record<string, unknown> | undefined, extra.requestId, extra.signal)
    )
    return server
  }

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    // DNS-rebinding defence: on loopback only local names may be used to reach us.
    if (loopback) {
      const host = req.headers.host
      const hostname = host === undefined ? "" : hostnameOf(host)
      const origin = req.headers.origin
      let originOk = true
      if (origin !== undefined) {
        try {
          originOk = ALLOWED_HOSTNAMES.has(new URL(origin).hostname.toLowerCase())
        } catch {
          originOk = false
        }
      }
      if (!(ALLOWED_HOSTNAMES.has(hostname) || hostname === boundName) || !originOk) {
        res.writeHead(403, { "content-type": "text/plain; charset=utf-8" }).end("Forbidden\n")
        return
      }
    }
    const path = (req.url ?? "/").split("?")[0]
    if (path !== "/mcp") {
      res.writeHead(404, { "content-type": "text/plain; charset=utf-8" }).end("Not found\n")
      return
    }
    if (req.method !== "POST") {
      // Stateless: no standalone SSE stream (GET) and no session to end (DELETE).
      jsonError(res, 405, -32000, "Method not allowed.", { allow: "POST" })
      return
    }
    let raw: Buffer
    try {
      raw = await readBody(req)
    } catch {
      jsonError(res, 413, -32600, "Request body too large")
      return
    }
    let body: unknown
    try {
      body = JSON.parse(raw.toString("utf8"))
    } catch {
      jsonError(res, 400, -32700, "Parse error")
      return
    }
    for (const message of Array.isArray(body) ? body : [body]) {
      const m = message as { method?: unknown; params?: { requestId?: unknown } }
      if (m?.method === "notifications/cancelled") inFlight.cancel(m.params?.requestId)
    }
    const server = mcpServer()
    const transport = new StreamableHTTPServerTransport({ enableJsonResponse: true })
    res.on("close", () => {
      void transport.close()
      void server.close()
    })
    await server.connect(transport)
    await transport.handleRequest(req, res, body)
  }

  const http = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) jsonError(res, 500, -32603, `Internal error: ${error instanceof Error ? error.message : String(error)}`)
      else res.end()
    })
  })
  // Tool calls may legitimately take minutes (the timeout is 300 s by default).
  http.requestTimeout = 0
  http.headersTimeout = 60_000
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject)
    http.listen(options.port, options.host, () => {
      http.off("error", reject)
      resolve()
    })
  })
  const address = http.address()
  const port = typeof address === "object" && address !== null ? address.port : options.port
  return {
    url: `http://${bracket(options.host)}:${port}/mcp`,
    close: () =>
      new Promise<void>((resolve) => {
        http.close(() => resolve())
        http.closeAllConnections()
      })
  }
}
