import type { Command, Config } from "@oclif/core"

/**
 * The toolkit's command tree as MCP profiles and `config` see it: ids like `oauth:profile:add`
 * (topic `oauth`, group `profile`, action `add`).
 */

/** Declaration order: tools are listed in this order, then anything else by id. */
const COMMAND_ORDER = [
  "interpreters:brainfuck",
  "interpreters:ook",
  "interpreters:bf-to-ook",
  "strings:reverse",
  "strings:levenshtein-distance",
  "strings:abjadify",
  "strings:flesch-reading-ease",
  "strings:report",
  "config",
  "web:serve-html",
  "demoscene:plasma",
  "demoscene:fire",
  "demoscene:copper",
  "oauth:token",
  "oauth:profile:add",
  "oauth:profile:update",
  "oauth:profile:delete",
  "oauth:profile:list",
  "mcp:serve",
  "mcp:save",
  "mcp:delete",
  "mcp:list"
]

/**
 * Never served as tools and refused by `mcp save`: servers and terminal programs (they block or
 * need a TTY), commands that prompt or take secrets, `config`, and `mcp` itself.
 */
export const NEVER_EXPOSED = [
  "mcp",
  "config",
  "web:serve-html",
  "demoscene",
  "oauth:token",
  "oauth:profile:add",
  "oauth:profile:update"
]

export const isUnder = (id: string, node: string): boolean => id === node || id.startsWith(`${node}:`)

export const isNeverExposed = (id: string): boolean => NEVER_EXPOSED.some((node) => isUnder(id, node))

/** `interpreters:bf-to-ook` → `interpreters_bf-to-ook`. */
export const toolName = (id: string): string => id.replaceAll(":", "_")

/** `oauth:profile:add` → `oauth profile add`. */
export const displayId = (id: string): string => id.replaceAll(":", " ")

const rank = (id: string): number => {
  const index = COMMAND_ORDER.indexOf(id)
  return index === -1 ? COMMAND_ORDER.length : index
}

export const sortIds = (ids: Iterable<string>): string[] =>
  [...ids].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b))

export const commandIds = (config: Config): string[] => sortIds(config.commandIDs)

export type CommandClass = Command.Class

const loaded = new WeakMap<Config, Map<string, Promise<CommandClass>>>()

/** Loads (once per process) the class of a command. */
export const loadCommand = (config: Config, id: string): Promise<CommandClass> => {
  let cache = loaded.get(config)
  if (!cache) loaded.set(config, (cache = new Map()))
  let pending = cache.get(id)
  if (!pending) {
    const found = config.findCommand(id)
    if (!found) throw new Error(`command ${displayId(id)} not found`)
    pending = found.load()
    cache.set(id, pending)
  }
  return pending
}

export type EntryResolution =
  | { readonly kind: "ok"; readonly ids: ReadonlyArray<string> }
  | { readonly kind: "unknown" }
  | { readonly kind: "never-exposed" }

const ENTRY_PATTERN = /^[a-z0-9-]+(\/[a-z0-9-]+)*$/

/** What a profile entry (`topic` or `topic/action[/sub]`) exposes: every exposable command at or below it. */
export const resolveEntry = (entry: string, ids: ReadonlyArray<string>): EntryResolution => {
  if (!ENTRY_PATTERN.test(entry)) return { kind: "unknown" }
  const node = entry.replaceAll("/", ":")
  const under = ids.filter((id) => isUnder(id, node))
  if (under.length === 0) return { kind: "unknown" }
  const exposable = under.filter((id) => !isNeverExposed(id))
  return exposable.length === 0 ? { kind: "never-exposed" } : { kind: "ok", ids: exposable }
}
