import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { isIP } from "node:net"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult
} from "@modelcontextprotocol/sdk/types.js"
import { checkRequest, isLoopbackHost } from "@stoat/core/http"
import { TOOLKIT_VERSION } from "../version.js"
import { PoolBusy, WorkerFailed, type ToolPool } from "./pool.js"
import { resultText, seconds } from "./result.js"
import { toArgv, type ToolEntry } from "./tools.js"

/** Exit codes in the per-call log line for calls that ran no command to its end. */
const EXIT_UNKNOWN_TOOL = 127
const EXIT_TIMEOUT = 124
const EXIT_CANCELLED = 130
/** sysexits' EX_TEMPFAIL: every worker busy and the queue full; worth retrying. */
const EXIT_BUSY = 75
const MAX_BODY_BYTES = 4 * 1024 * 1024
/** How much more of a refused body is read and dropped so the 413 answer arrives; a client sending more is cut off. */
const MAX_DISCARDED_BYTES = 4 * MAX_BODY_BYTES
/** Longest tool name the log shows (SEP-986's limit for a valid one). */
const MAX_LOGGED_NAME = 128

export interface ServeOptions {
  readonly tools: ReadonlyArray<ToolEntry>
  /** Runs every tool call's command, off this thread. */
  readonly pool: ToolPool
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

const text = (body: string, isError: boolean): CallToolResult => ({
  content: [{ type: "text", text: body }],
  ...(isError ? { isError: true } : {})
})

/** Reads and drops the rest of a refused body, so the client gets to read the answer; past a bound it is cut off. */
const discardRest = (req: IncomingMessage): void => {
  let dropped = 0
  req.on("data", (chunk: Buffer) => {
    dropped += chunk.length
    if (dropped > MAX_DISCARDED_BYTES) req.destroy()
  })
  req.resume()
}

/** The request body, or "too large" once it passes MAX_BODY_BYTES (declared or sent). */
const readBody = (req: IncomingMessage): Promise<Buffer | "too large"> =>
  new Promise((resolve, reject) => {
    if (Number(req.headers["content-length"]) > MAX_BODY_BYTES) {
      discardRest(req)
      return resolve("too large")
    }
    const chunks: Buffer[] = []
    let size = 0
    const onData = (chunk: Buffer): void => {
      size += chunk.length
      if (size <= MAX_BODY_BYTES) return void chunks.push(chunk)
      req.off("data", onData)
      req.off("end", onEnd)
      discardRest(req)
      resolve("too large")
    }
    const onEnd = (): void => resolve(Buffer.concat(chunks))
    req.on("data", onData)
    req.on("end", onEnd)
    req.on("error", reject)
  })

const jsonError = (
  res: ServerResponse,
  status: number,
  code: number,
  message: string,
  headers: Record<string, string> = {},
  id: string | number | null = null
): void => {
  res
    .writeHead(status, { "content-type": "application/json", ...headers })
    .end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id }))
}

/** A JSON-RPC response written without the SDK (see refuseMalformedCall). */
type JsonRpcReply = { readonly jsonrpc: "2.0"; readonly id: string | number } & (
  | { readonly result: CallToolResult }
  | { readonly error: { readonly code: number; readonly message: string } }
)

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

interface InvalidMessage {
  readonly code: number
  readonly message: string
  readonly id: string | number | null
}

/**
 * What is wrong with a POSTed JSON value as one JSON-RPC 2.0 message, checked before the SDK
 * sees it: the SDK answers -32700 (parse error) for any well-formed value that is not a
 * message, and 202 for an empty batch. MCP has had no batches since 2025-06-18.
 */
const invalidMessage = (body: unknown): InvalidMessage | undefined => {
  if (Array.isArray(body))
    return { code: ErrorCode.InvalidRequest, message: "Invalid Request: batches are not supported", id: null }
  if (!isObject(body))
    return { code: ErrorCode.InvalidRequest, message: "Invalid Request: a message is a JSON object", id: null }
  const id = typeof body["id"] === "string" || typeof body["id"] === "number" ? body["id"] : null
  const invalid = (message: string, code: number = ErrorCode.InvalidRequest): InvalidMessage => ({ code, message, id })
  if (body["jsonrpc"] !== "2.0") return invalid('Invalid Request: "jsonrpc" must be "2.0"')
  if ("id" in body && id === null && "method" in body)
    return invalid('Invalid Request: "id" must be a string or a number')
  if (!("method" in body))
    return "result" in body || "error" in body ? undefined : invalid('Invalid Request: "method" is missing')
  if (typeof body["method"] !== "string") return invalid('Invalid Request: "method" must be a string')
  if ("params" in body && !isObject(body["params"]))
    return invalid('Invalid params: "params" must be an object', ErrorCode.InvalidParams)
  return undefined
}

/**
 * A tool name as the log line shows it: anything but letters, digits, punctuation and symbols
 * (line breaks, escape sequences, spaces, invisible format characters) is escaped, and so is
 * the escape character itself, so a name can neither forge nor hide log lines.
 */
const logName = (name: unknown): string => {
  const text = typeof name === "string" ? name : name === undefined ? "(none)" : (JSON.stringify(name) ?? String(name))
  const shown = text.length > MAX_LOGGED_NAME ? `${text.slice(0, MAX_LOGGED_NAME)}…` : text
  return shown.replace(/[^\p{L}\p{N}\p{P}\p{S}]|\\/gu, (ch) =>
    ch === "\\" ? "\\\\" : `\\u{${ch.codePointAt(0)!.toString(16)}}`
  )
}

/**
 * The profile's tools over stateless Streamable HTTP at /mcp: every POST gets a fresh
 * low-level SDK Server and transport; each tool call runs its command on a pool worker with
 * its own command instance and captured output, so this thread stays free for requests.
 */
export const startServer = async (options: ServeOptions): Promise<RunningServer> => {
  const { tools, pool, timeoutMs, log } = options
  const byName = new Map(tools.map((tool) => [tool.name, tool]))
  const definitions = tools.map((tool) => tool.definition)
  const inFlight = new InFlight()
  // serve refuses a non-loopback host without --allow-remote; with it, clients use other names.
  const allowRemote = !isLoopbackHost(options.host)

  const logCall = (name: unknown, code: number, started: number): void =>
    log(`tool ${logName(name)} exit ${code} ${Math.round(performance.now() - started)}ms`)

  /** One tools/call whose request the SDK's CallToolRequestSchema accepted (or whose only fault is arguments that are not an object). */
  const callTool = async (
    name: string,
    args: unknown,
    requestId: string | number,
    requestSignal: AbortSignal
  ): Promise<CallToolResult> => {
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
    try {
      const outcome = await pool.run({ id: tool.id, argv: parsed.argv }, controller.signal)
      logCall(name, outcome.code, started)
      return text(resultText(outcome.stdout, outcome.stderr, outcome.code), outcome.code !== 0)
    } catch (error) {
      if (error instanceof CallTimedOut) {
        logCall(name, EXIT_TIMEOUT, started)
        return text(`Tool ${name} timed out after ${seconds(timeoutMs)} s`, true)
      }
      if (error instanceof CancelledByClient) {
        logCall(name, EXIT_CANCELLED, started)
        return text(`Tool ${name} was cancelled.`, true)
      }
      if (error instanceof PoolBusy) {
        logCall(name, EXIT_BUSY, started)
        return text(`Tool ${name} was not run: ${error.message}; try again later.`, true)
      }
      logCall(name, 1, started)
      if (error instanceof WorkerFailed) return text(resultText(`Error: ${error.message}\n`, "", 1), true)
      throw error
    } finally {
      clearTimeout(timer)
      requestSignal.removeEventListener("abort", onRequestAbort)
      forget()
    }
  }

  /**
   * The answer to a tools/call request that the SDK's own CallToolRequestSchema refuses, or
   * undefined when it passes. The SDK itself would answer such a request with -32603 and the
   * schema's issue list; here it gets the toolkit's answers: a name that is not a string is
   * -32602, arguments that are not an object are the tool's argument error (a result ending
   * in `exit code: 1`, like any bad argument), anything else is -32602 naming the field.
   */
  const refuseMalformedCall = async (
    message: Record<string, unknown>,
    id: string | number
  ): Promise<JsonRpcReply | undefined> => {
    const checked = CallToolRequestSchema.safeParse(message)
    const params = isObject(message["params"]) ? message["params"] : {}
    const name = params["name"]
    if (checked.success) {
      // The schema's record drops a "__proto__" key, which the toolkit refuses as an unknown
      // argument: such a call is answered from the arguments as sent (refused before it runs).
      const sent = params["arguments"]
      const kept = checked.data.params.arguments ?? {}
      if (isObject(sent) && Object.keys(sent).length !== Object.keys(kept).length)
        return {
          jsonrpc: "2.0",
          id,
          result: await callTool(checked.data.params.name, sent, id, new AbortController().signal)
        }
      return undefined
    }
    const started = performance.now()
    const invalid = (text: string): JsonRpcReply => ({
      jsonrpc: "2.0",
      id,
      error: { code: ErrorCode.InvalidParams, message: new McpError(ErrorCode.InvalidParams, text).message }
    })
    if (typeof name !== "string") {
      logCall(name, EXIT_UNKNOWN_TOOL, started)
      return invalid("tools/call needs the tool's name as a string")
    }
    const issues = checked.error.issues
    if (issues.every((issue) => issue.path[0] === "params" && issue.path[1] === "arguments")) {
      // Not an object, so the call is refused before any command runs; nothing to cancel.
      return { jsonrpc: "2.0", id, result: await callTool(name, params["arguments"], id, new AbortController().signal) }
    }
    logCall(name, 1, started)
    const first = issues.find((issue) => issue.path[1] !== "arguments") ?? issues[0]!
    return invalid(`Invalid params: ${first.path.join(".")}: ${first.message}`)
  }

  const mcpServer = (): Server => {
    const server = new Server(
      { name: "toolkit", version: TOOLKIT_VERSION },
      { capabilities: { tools: { listChanged: false } } }
    )
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: definitions as never }))
    server.setRequestHandler(CallToolRequestSchema, (request, extra) =>
      callTool(request.params.name, request.params.arguments, extra.requestId, extra.signal)
    )
    return server
  }

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    // DNS-rebinding defence, shared with `stoat mcp --http`.
    const verdict = checkRequest({ host: req.headers.host, origin: req.headers.origin }, { allowRemote })
    if (!verdict.ok) {
      res
        .writeHead(verdict.status, { "content-type": "text/plain; charset=utf-8", ...verdict.headers })
        .end(`${verdict.message}\n`)
      return
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
    const raw = await readBody(req)
    if (raw === "too large") {
      jsonError(
        res,
        413,
        ErrorCode.InvalidRequest,
        `Request body too large: at most ${MAX_BODY_BYTES / (1024 * 1024)} MiB`
      )
      return
    }
    let body: unknown
    try {
      body = JSON.parse(raw.toString("utf8"))
    } catch {
      jsonError(res, 400, ErrorCode.ParseError, "Parse error")
      return
    }
    const invalid = invalidMessage(body)
    if (invalid) {
      // A tools/call that never reaches callTool is still a call, and every call is logged.
      if (isObject(body) && body["method"] === "tools/call")
        logCall(isObject(body["params"]) ? body["params"]["name"] : undefined, EXIT_UNKNOWN_TOOL, performance.now())
      jsonError(res, 400, invalid.code, invalid.message, {}, invalid.id)
      return
    }
    const message = body as { method?: unknown; id?: string | number; params?: { requestId?: unknown } }
    if (message.method === "tools/call" && message.id !== undefined) {
      const refused = await refuseMalformedCall(body as Record<string, unknown>, message.id)
      if (refused) {
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(refused))
        return
      }
    }
    if (message.method === "notifications/cancelled") inFlight.cancel(message.params?.requestId)
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
      if (!res.headersSent)
        jsonError(res, 500, -32603, `Internal error: ${error instanceof Error ? error.message : String(error)}`)
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
