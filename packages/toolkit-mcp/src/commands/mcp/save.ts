import { Args } from "@oclif/core"
import { Effect } from "effect"
import { Profiles } from "../../store/index.js"
import { withStore } from "../../runtime/store.js"
import { resolveProfile } from "../../mcp/profiles.js"
import { ToolkitCommand } from "../../runtime/base.js"
import { Opt } from "../../runtime/options.js"

export default class McpSave extends ToolkitCommand {
  static override toolKind = "write" as const
  static override summary = "Save a named MCP profile"
  static override description =
    "Saves which commands a profile serves, and optionally where. Each --include entry is a topic (strings) or an action path (interpreters/brainfuck); it must exist and be exposable. Saving an existing name replaces it entirely. Saving 'default' replaces the built-in default."
  static override args = {
    name: Args.string({
      description: "Profile name (lowercase letters, digits and -)",
      required: true,
      ignoreStdin: true
    })
  }
  static override flags = {
    include: Opt.string({
      description: "A topic or topic/action entry to serve (repeatable, or comma-separated)",
      required: true,
      multiple: true,
      delimiter: ","
    }),
    host: Opt.string({ description: "Address to bind when serving this profile (default 127.0.0.1)" }),
    port: Opt.integer({ description: "Port to bind when serving this profile (default 5100)", min: 1, max: 65_535 })
  }

  async run(): Promise<number> {
    const { args, flags } = await this.options(McpSave)
    const include = flags.include.map((entry) => entry.trim()).filter((entry) => entry !== "")
    const resolved = resolveProfile(this.config, include)
    if (resolved.unresolved.length > 0) {
      for (const entry of resolved.unknown)
        this.line(`Error: unknown entry '${entry}': there is no such topic or command`)
      for (const entry of resolved.neverExposed) this.line(`Error: entry '${entry}' cannot be exposed as an MCP tool`)
      return 1
    }
    await withStore(
      this.io.configDb,
      Effect.flatMap(Profiles, (profiles) =>
        profiles.save({
          name: args.name,
          include,
          ...(flags.host !== undefined ? { host: flags.host } : {}),
          ...(flags.port !== undefined ? { port: flags.port } : {})
        })
      )
    )
    const n = resolved.ids.length
    this.line(`Saved MCP profile '${args.name}' (${n} ${n === 1 ? "tool" : "tools"})`)
    return 0
  }
}
