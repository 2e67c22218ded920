import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import {
  CallToolRequestSchema,
  CompleteRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema
} from "@modelcontextprotocol/sdk/types.js"
import { Exit, type ManagedRuntime } from "effect"
import { getVm, listVms, runOperation, STOAT_VERSION, toErrorInfo } from "@stoat/core"
import { RateLimiter, DEFAULT_RATE_LIMITS, type RateLimits } from "./policy/rate-limit.js"
import { redact } from "./policy/redact.js"
import { mcpWords } from "./hints.js"
import { agentRunner, type RunAsAgent } from "./policy/access.js"
import { PROMPTS } from "./prompts/index.js"
import { CATALOG_URI, catalogDocument, guide, GUIDE_URI, VM_TEMPLATE, vmNameOf } from "./resources/index.js"
import { CancellableTaskStore, DEFAULT_TASK_TTL_MS, TASK_POLL_INTERVAL_MS } from "./tasks.js"
import { DEFAULT_CALL_BUDGET_SECONDS } from "./tools/budget.js"
import { callTool, type CallChannel } from "./tools/call.js"
import { buildRegistry, type RegistryOptions, type ToolEntry } from "./tools/registry.js"

/** What every connection of one server process shares: the tools, the rate limits, the runtime. */
export interface StoatMcp {
  readonly tools: ReadonlyMap<string, ToolEntry>
  readonly limiter: RateLimiter
  readonly runtime: ManagedRuntime.ManagedRuntime<any, any>
  /** Runs core work on `runtime` as the agent's call. */
  readonly run: RunAsAgent
  readonly heartbeatMs?: number
  /** Tool calls in flight, so a closing transport can let them answer first. */
  readonly pending: Set<Promise<unknown>>
  /** Tool calls run as MCP tasks (spec 2025-11-25), shared by every connection of the process. */
  readonly tasks: CancellableTaskStore
  /** False (--no-confirm): deletions run without a confirmation. */
  readonly confirmDeletions: boolean
  /** Seconds a call without a progress token (and not a task) answers within. */
  readonly callBudgetSeconds: number
}

export interface StoatMcpOptions {
  readonly runtime: ManagedRuntime.ManagedRuntime<any, any>
  readonly limits?: Partial<RateLimits>
  readonly heartbeatMs?: number
  /** The limiter's clock (ms), for tests. */
  readonly now?: () => number
  /** False restores the original server: deletions run unconfirmed when the client cannot elicit (default true). */
  readonly confirmDeletions?: boolean
  /** Seconds a call without a progress token answers within (default 50). */
  readonly callBudgetSeconds?: number
  /** Which tools to serve (`--toolsets`, `--read-only`); default all. */
  readonly tools?: RegistryOptions
}

export const makeStoatMcp = (options: StoatMcpOptions): StoatMcp => {
  const callBudgetSeconds = options.callBudgetSeconds ?? DEFAULT_CALL_BUDGET_SECONDS
  return {
    tools: buildRegistry(undefined, options.tools, callBudgetSeconds),
    limiter: new RateLimiter({ ...DEFAULT_RATE_LIMITS, ...options.limits }, options.now),
    runtime: options.runtime,
    run: agentRunner(options.runtime),
    pending: new Set(),
    tasks: new CancellableTaskStore(),
    confirmDeletions: options.confirmDeletions ?? true,
    callBudgetSeconds,
    ...(options.heartbeatMs !== undefined ? { heartbeatMs: options.heartbeatMs } : {})
  }
}

const INSTRUCTIONS =
  "Stoat manages local QEMU VMs. Read stoat://guide first. After create or start, call wait before any guest tool. Branch on error.code from _meta, never on message text."

/** A JSON-RPC error that reaches the client with its message as written (see `unprefixedErrors`). */
class ProtocolError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown
  ) {
    super(message)
  }
}

/** A request the SDK's schema refused (a ZodError's issues), in one line: "params.arguments: expected record". */
const requestIssues = (error: unknown): string | undefined => {
  const issues = (error as { issues?: unknown }).issues
  if (!Array.isArray(issues)) return undefined
  return issues
    .map(
      (issue: { path?: ReadonlyArray<PropertyKey>; message?: string }) =>
        `${(issue.path ?? []).map(String).join(".")}: ${issue.message ?? "invalid"}`
    )
    .join("; ")
}

/**
 * The SDK's McpError writes "MCP error <code>: " into its message, sends that message, and the
 * client's McpError prefixes it again ("MCP error -32602: MCP error -32602: …"). Every request
 * handler's errors, the SDK's own checks included, go out with the message alone; a request its
 * schema refuses is invalid params naming the field, not an internal error quoting the schema.
 */
const unprefixedErrors = (server: Server): void => {
  type Handler = (request: unknown, extra: unknown) => Promise<unknown>
  const handlers = (server as unknown as { _requestHandlers: Map<string, Handler> })._requestHandlers
  for (const [method, handler] of handlers) {
    // Async, so a check that throws before the handler's promise exists is caught too.
    handlers.set(method, async (request, extra) => {
      try {
        return await handler(request, extra)
      } catch (error) {
        if (error instanceof McpError)
          throw new ProtocolError(error.code, error.message.replace(/^MCP error -?\d+: /, ""), error.data)
        const issues = requestIssues(error)
        if (issues !== undefined)
          throw new ProtocolError(ErrorCode.InvalidParams, `invalid ${method} request: ${issues}`)
        throw error
      }
    })
  }
}

/** One low-level SDK Server over the shared state; each transport connection gets its own. */
export const createServer = (mcp: StoatMcp): Server => {
  const server = new Server(
    { name: "stoat", version: STOAT_VERSION },
    {
      capabilities: {
        tools: { listChanged: false },
        resources: {},
        prompts: {},
        completions: {},
        logging: {},
        tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } }
      },
      instructions: INSTRUCTIONS,
      taskStore: mcp.tasks
    }
  )
  // The client's `initialized` is the moment after the handshake: build what tools/list needs then.
  server.oninitialized = () =>
    setImmediate(() => {
      for (const entry of mcp.tools.values()) void entry.definition
    })
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [...mcp.tools.values()].map((entry) => entry.definition) as never
  }))

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const token = request.params._meta?.progressToken
    const asTask = request.params.task !== undefined && extra.taskStore !== undefined
    if (asTask && mcp.tools.get(request.params.name)?.definition.execution?.taskSupport !== "optional") {
      throw new McpError(
        ErrorCode.MethodNotFound,
        `tool "${request.params.name}" does not run as a task; call it without task, or see tools/list execution.taskSupport`
      )
    }
    // A task's questions would need the tasks/result side channel; without one it behaves as a
    // client without elicitation (the confirm argument still answers in advance).
    const canElicit = !asTask && server.getClientCapabilities()?.elicitation !== undefined
    const task = asTask
      ? await extra.taskStore!.createTask({
          ttl: request.params.task?.ttl ?? DEFAULT_TASK_TTL_MS,
          pollInterval: TASK_POLL_INTERVAL_MS
        })
      : undefined
    const tracked = task ? mcp.tasks.track(task.taskId) : undefined
    const channel: CallChannel = {
      signal: tracked?.signal ?? extra.signal,
      requestId: extra.requestId,
      // Nothing keeps a plain request alive past the client's timeout; progress and tasks do.
      ...(token === undefined && !task ? { budgetSeconds: mcp.callBudgetSeconds } : {}),
      ...(token !== undefined
        ? {
            progress: (progress, total, message) => {
              void extra
                .sendNotification({
                  method: "notifications/progress",
                  params: {
                    progressToken: token,
                    progress,
                    ...(total !== undefined ? { total } : {}),
                    ...(message !== undefined ? { message } : {})
                  }
                })
                .catch(() => undefined)
            }
          }
        : {}),
      ...(canElicit
        ? {
            elicit: async (message, field) => {
              const answer = await server.elicitInput(
                {
                  mode: "form",
                  message,
                  requestedSchema: {
                    type: "object",
                    properties: { [field]: { type: "string", title: "Confirmation" } },
                    required: [field]
                  }
                },
                { relatedRequestId: extra.requestId, signal: extra.signal }
              )
              const value = answer.action === "accept" ? answer.content?.[field] : undefined
              return typeof value === "string" ? value : undefined
            }
          }
        : {})
    }
    const call = callTool(mcp, request.params.name, request.params.arguments, channel)
    mcp.pending.add(call)
    const settled = call.finally(() => mcp.pending.delete(call))
    if (!task) return (await settled) as never
    // The task outlives this request: its result is stored for tasks/result, unless it was
    // cancelled meanwhile (a terminal status the store keeps).
    void settled
      .then((result) =>
        extra.taskStore!.storeTaskResult(task.taskId, result.isError ? "failed" : "completed", result as never)
      )
      .catch(() => undefined)
      .finally(() => tracked?.done())
    return { task } as never
  })

  server.setRequestHandler(ListResourcesRequestSchema, async () => ({
    resources: [
      {
        uri: CATALOG_URI,
        name: "operation-catalog",
        title: "Stoat operation catalog",
        description: "Every operation: tool, CLI command, kind, access level, annotations.",
        mimeType: "application/json"
      },
      {
        uri: GUIDE_URI,
        name: "guide",
        title: "How to use Stoat's tools",
        description: "Wait after start, jobs for long work, access levels, errors.",
        mimeType: "text/markdown"
      }
    ]
  }))

  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: [
      {
        uriTemplate: VM_TEMPLATE,
        name: "vm",
        title: "A VM's status",
        description: "The vm_status result of one VM.",
        mimeType: "application/json"
      }
    ]
  }))

  server.setRequestHandler(ReadResourceRequestSchema, async (request, extra) => {
    const uri = request.params.uri
    if (uri === CATALOG_URI)
      return { contents: [{ uri, mimeType: "application/json", text: JSON.stringify(catalogDocument(), null, 2) }] }
    if (uri === GUIDE_URI) return { contents: [{ uri, mimeType: "text/markdown", text: guide(mcp.callBudgetSeconds) }] }
    const name = vmNameOf(uri)
    if (name === undefined)
      throw new McpError(
        ErrorCode.InvalidParams,
        `no resource ${uri}; resources are ${CATALOG_URI}, ${GUIDE_URI} and stoat://vm/{name}`
      )
    const exit = await mcp.run(runOperation(getVm, { vm: name }, { requestId: String(extra.requestId) }), {
      signal: extra.signal
    })
    if (Exit.isFailure(exit)) {
      const info = toErrorInfo(exit.cause, mcpWords)
      throw new McpError(info.code === "not_found" ? -32002 : ErrorCode.InvalidParams, info.message, { error: info })
    }
    return { contents: [{ uri, mimeType: "application/json", text: JSON.stringify(redact(exit.value)) }] }
  })

  server.setRequestHandler(ListPromptsRequestSchema, async () => ({
    prompts: PROMPTS.map(({ name, title, description, arguments: args }) => ({
      name,
      title,
      description,
      arguments: args.map((arg) => ({ ...arg }))
    }))
  }))

  server.setRequestHandler(GetPromptRequestSchema, async (request) => {
    const prompt = PROMPTS.find((candidate) => candidate.name === request.params.name)
    if (!prompt)
      throw new McpError(
        ErrorCode.InvalidParams,
        `no prompt "${request.params.name}"; prompts are ${PROMPTS.map((p) => p.name).join(", ")}`
      )
    const args = request.params.arguments ?? {}
    for (const arg of prompt.arguments) {
      if (arg.required && !args[arg.name])
        throw new McpError(ErrorCode.InvalidParams, `prompt ${prompt.name} needs the argument ${arg.name}`)
    }
    return {
      description: prompt.description,
      messages: [{ role: "user", content: { type: "text", text: prompt.render(args) } }]
    }
  })

  // VM names complete the stoat://vm/{name} template and the prompts' vm argument.
  server.setRequestHandler(CompleteRequestSchema, async (request, extra) => {
    const { ref, argument } = request.params
    const wantsVm =
      (ref.type === "ref/resource" && ref.uri === VM_TEMPLATE && argument.name === "name") ||
      (ref.type === "ref/prompt" && PROMPTS.some((prompt) => prompt.name === ref.name) && argument.name === "vm")
    if (!wantsVm) return { completion: { values: [], hasMore: false } }
    const exit = await mcp.run(runOperation(listVms, {}, { requestId: String(extra.requestId) }), {
      signal: extra.signal
    })
    const names = Exit.isSuccess(exit)
      ? exit.value.vms.map((vm) => vm.name).filter((name) => name.startsWith(argument.value))
      : []
    return { completion: { values: names.slice(0, 100), total: names.length, hasMore: names.length > 100 } }
  })

  unprefixedErrors(server)
  return server
}
