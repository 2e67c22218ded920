import { availableParallelism } from "node:os"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { isLoopbackHost } from "@stoat/core/http"
import { DEFAULT_HOST, DEFAULT_PORT, DEFAULT_PROFILE, loadProfile, resolveProfile } from "../../mcp/profiles.js"
import type { ToolWorkerData } from "../../mcp/tool-worker.js"
import { ToolkitCommand } from "../../runtime/base.js"
import { errorMessage } from "../../runtime/errors.js"
import { Opt } from "../../runtime/options.js"
import { waitForStop } from "../../runtime/stop.js"

/** Calls that may wait for a busy pool before new ones are refused. */
const MAX_QUEUED_CALLS = 64
/** V8 heap of one tool call's worker; inputs are capped far below it. */
const WORKER_HEAP_MB = 512

export default class McpServe extends ToolkitCommand {
  static override toolKind = "network" as const
  static override summary = "Serve a profile's commands as MCP tools"
  static override description =
    "Serves the commands of a profile as MCP tools over stateless Streamable HTTP at /mcp, until stopped. Binds 127.0.0.1:5100 unless the flags or the profile say otherwise. There is no authentication: binding a non-loopback address needs --allow-remote."
  static override flags = {
    profile: Opt.string({ description: "Profile to serve (default: the saved or built-in 'default')" }),
    host: Opt.string({ description: "Address to bind (overrides the profile's)" }),
    port: Opt.integer({
      description: "Port to bind (overrides the profile's; 0 picks a free one)",
      min: 0,
      max: 65_535
    }),
    "allow-remote": Opt.boolean({
      description: "Allow binding an address other than loopback (the server has no authentication)"
    }),
    // Hidden: lets tests exercise the timeout without waiting 300 s, and a full pool on any machine.
    "tool-timeout-ms": Opt.integer({
      description: "Per-call timeout in milliseconds",
      default: 300_000,
      min: 1,
      hidden: true
    }),
    "tool-workers": Opt.integer({
      description: "Tool calls run at the same time (default: one per core, at least 2)",
      min: 1,
      max: 256,
      hidden: true
    })
  }

  async run(): Promise<void> {
    const { flags } = await this.options(McpServe)
    const { profile } = await loadProfile(this.io.configDb, flags.profile ?? DEFAULT_PROFILE)
    const resolved = resolveProfile(this.config, profile.include)
    for (const entry of resolved.unresolved)
      this.io.err(`Warning: skipping unresolved entry '${entry}' in MCP profile '${profile.name}'\n`)
    if (resolved.ids.length === 0)
      this.fail(`no entry of MCP profile '${profile.name}' resolves to a command; the server was not started`)
    const host = flags.host ?? profile.host ?? DEFAULT_HOST
    const port = flags.port ?? profile.port ?? DEFAULT_PORT
    // The SDK and the tools load only here, so the other mcp commands stay quick.
    const { startServer } = await import("../../mcp/server.js")
    const { buildTool } = await import("../../mcp/tools.js")
    const { ToolPool } = await import("../../mcp/pool.js")
    if (!isLoopbackHost(host)) {
      if (!flags["allow-remote"])
        this.fail(
          `refusing to bind to non-loopback address ${host}: the MCP server has no authentication; pass --allow-remote to do it anyway`
        )
      this.io.err(`Warning: binding to non-loopback address ${host}; the MCP server has no authentication.\n`)
    }
    const tools = await Promise.all(resolved.ids.map((id) => buildTool(this.config, id)))
    // One worker per core, at least two, so one long call never holds up the others; the main
    // thread only parses requests, answers tools/list and hands out calls.
    const pool = new ToolPool({
      script: pathToFileURL(join(this.config.root, "dist/mcp/tool-worker.js")),
      workerData: { root: this.config.root, commands: resolved.ids } satisfies ToolWorkerData,
      size: flags["tool-workers"] ?? Math.max(2, availableParallelism()),
      maxQueued: MAX_QUEUED_CALLS,
      heapLimitMb: WORKER_HEAP_MB
    })
    let server: Awaited<ReturnType<typeof startServer>>
    try {
      await pool.prewarm()
    } catch (error) {
      await pool.close()
      this.fail(errorMessage(error))
    }
    try {
      server = await startServer({
        tools,
        pool,
        host,
        port,
        timeoutMs: flags["tool-timeout-ms"],
        log: (line) => this.io.err(`${line}\n`)
      })
    } catch (error) {
      await pool.close()
      const e = error as NodeJS.ErrnoException
      this.fail(`cannot listen on ${host}:${port}: ${e.code === "EADDRINUSE" ? "address already in use" : e.message}`)
    }
    this.line(`Serving MCP profile '${profile.name}' on ${server.url}`)
    this.line(`Tools: ${tools.map((t) => t.name).join(", ")}`)
    await waitForStop()
    await server.close()
    await pool.close()
  }
}
