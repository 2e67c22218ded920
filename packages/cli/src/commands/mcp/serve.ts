import { Command, Flags } from "@oclif/core"
import { BASE_FLAGS } from "../../base-flags.js"
import { refuseMcp, serveMcp } from "../../mcp-serve.js"

/**
 * `stoat mcp serve`: the Stoat MCP server over stdio, or Streamable HTTP on a loopback address.
 * A plain oclif command: the server bundle has its own effect, and a second copy loaded beside it
 * (through StoatCommand) shares effect's global state with it and slows every call.
 */
export default class McpServe extends Command {
  static override baseFlags = BASE_FLAGS
  static override summary = "Serve the Stoat MCP server (stdio by default)"
  static override description =
    "Serve Stoat's MCP tools over stdio (stdout carries only the protocol), or over Streamable HTTP with --http on a loopback address (127.0.0.1, ::1 or localhost). The working directory decides which stoat.toml project tools read."
  static override examples = [
    "stoat mcp serve",
    "stoat mcp serve --http 127.0.0.1:7777",
    "stoat mcp serve --http 127.0.0.1:7777 --token-file ~/.stoat-token",
    "stoat mcp serve --toolsets vm,guest --read-only"
  ]
  static override flags = {
    http: Flags.string({ description: "Serve Streamable HTTP at this loopback host:port instead of stdio" }),
    "token-file": Flags.string({ description: "With --http: require Authorization: Bearer <first line of this file>" }),
    "tool-burst": Flags.integer({ description: "Calls per tool in a burst (default 30)" }),
    "tool-rate": Flags.string({ description: "Per-tool refill in calls per second (default 0.5)" }),
    burst: Flags.integer({ description: "Calls in the shared burst (default 60)" }),
    rate: Flags.string({ description: "Shared refill in calls per second (default 2)" }),
    confirm: Flags.boolean({
      allowNo: true,
      default: true,
      description:
        "Require confirm=<VM name> (or elicitation) before a deletion; --no-confirm runs deletions unconfirmed, as the original server did"
    }),
    "call-budget": Flags.integer({
      description:
        "Seconds a call without a progress token answers within, before the client's 60 s timeout (default 50)"
    }),
    "max-sessions": Flags.integer({
      description: "With --http: sessions kept at once; the least recently used idle one makes room (default 64)"
    }),
    toolsets: Flags.string({
      description:
        "Serve only these toolsets, comma-separated: vm, snapshots, guest, jobs, host, recipes, project (default all)"
    }),
    "read-only": Flags.boolean({ description: "Serve only the read-only tools" })
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(this.constructor as typeof McpServe)
    const rate = (name: string, text: string | undefined): number | undefined => {
      if (text === undefined) return undefined
      const value = Number(text)
      if (text.trim() === "" || !Number.isFinite(value))
        refuseMcp(`--${name} must be a number, got ${JSON.stringify(text)}`)
      return value
    }
    const limits = {
      toolBurst: flags["tool-burst"],
      toolRate: rate("tool-rate", flags["tool-rate"]),
      burst: flags.burst,
      rate: rate("rate", flags.rate)
    }
    await serveMcp({
      ...(flags.http !== undefined ? { http: flags.http } : {}),
      ...(flags["token-file"] !== undefined ? { tokenFile: flags["token-file"] } : {}),
      limits,
      confirmDeletions: flags.confirm,
      callBudgetSeconds: flags["call-budget"],
      maxSessions: flags["max-sessions"],
      ...(flags.toolsets !== undefined ? { toolsets: flags.toolsets } : {}),
      ...(flags["read-only"] ? { readOnly: true } : {})
    })
  }
}
