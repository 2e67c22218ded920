import { statSync } from "node:fs"
import { Parser, type Config } from "@oclif/core"
import { Effect } from "effect"
import { ConfigStore, type ConfigEntry } from "../store/index.js"
import { withStore } from "./store.js"
import { hasOption, markExplicitValues } from "./argv.js"
import { errorMessage, ToolkitError } from "./errors.js"
import type { CommandIO } from "./io.js"
import { markedFlagNames, optionMeta } from "./options.js"
import { commandIds, isUnder, loadCommand } from "./tree.js"

/**
 * Configured defaults (reference A5): a value set for a topic, group or action level becomes
 * the option's default for every command at or below that level. Precedence, highest first:
 * the command line, the action level, group levels (deepest first), the topic level, the
 * built-in default. The value replaces the flag's `default` in a copy of the flag before the
 * real parse, so it goes through exactly the parser the command line uses.
 */

/** Topics whose options are never configurable: `config` itself, and `mcp`, whose host and
 * port precedence is defined by its profiles. */
export const NOT_CONFIGURABLE_TOPICS = new Set(["config", "mcp"])
const RESERVED = new Set(["help", "version", "unset", "json"])

export type FlagDef = {
  readonly type: string
  readonly name?: string
  readonly required?: boolean
  readonly hidden?: boolean
  readonly multiple?: boolean
  readonly options?: readonly string[]
  readonly default?: unknown
  readonly description?: string
  /** Options that cannot be given together with this one. */
  readonly exclusive?: readonly string[]
}
export type FlagMap = Record<string, FlagDef>

export interface Level {
  readonly topic: string
  /** Path below the topic: [] for the topic level, ["profile"], ["profile", "add"]. */
  readonly path: ReadonlyArray<string>
}

export const levelLabel = (level: Level): string => [level.topic, ...level.path].join(" ")
export const levelKey = (level: Level): string => level.path.join(" ")
const levelNode = (level: Level): string => [level.topic, ...level.path].join(":")

/** The options that exclude `name`, in either direction of `exclusive`. */
export const excludedBy = (flags: FlagMap, name: string): string[] =>
  Object.entries(flags)
    .filter(
      ([other, def]) => other !== name && (def.exclusive?.includes(name) || flags[name]?.exclusive?.includes(other))
    )
    .map(([other]) => other)

export const flagsOf = (cls: { flags?: unknown; baseFlags?: unknown }): FlagMap => ({
  ...(cls.baseFlags as FlagMap | undefined),
  ...(cls.flags as FlagMap | undefined)
})

/** Options of one command that may carry a configured default. */
export const configurableFlags = (flags: FlagMap): Map<string, FlagDef> => {
  const out = new Map<string, FlagDef>()
  for (const [name, def] of Object.entries(flags)) {
    if (def.required || def.hidden || RESERVED.has(name) || optionMeta(def).immutable) continue
    out.set(name, def)
  }
  return out
}

const signature = (def: FlagDef): string =>
  JSON.stringify([optionMeta(def).json, def.type, def.multiple ?? false, def.options ?? null])

/** The ids of the commands at or below a level (none when the level does not exist). */
export const commandsAt = (config: Config, level: Level): string[] =>
  commandIds(config).filter((id) => isUnder(id, levelNode(level)))

/**
 * Options configurable at a level, each with the definitions of every command below that has
 * it. A name whose type differs between those commands is left out at this level.
 */
export const optionsAtLevel = async (config: Config, level: Level): Promise<Map<string, FlagDef[]>> => {
  if (NOT_CONFIGURABLE_TOPICS.has(level.topic)) return new Map()
  const byName = new Map<string, FlagDef[]>()
  for (const id of commandsAt(config, level)) {
    const cls = await loadCommand(config, id)
    for (const [name, def] of configurableFlags(flagsOf(cls))) byName.set(name, [...(byName.get(name) ?? []), def])
  }
  for (const [name, defs] of byName) if (new Set(defs.map(signature)).size > 1) byName.delete(name)
  return byName
}

// `--name=value`, so a stored value that looks like an option is still a value (argv.ts).
const valueTokens = (name: string, def: FlagDef, tokens: ReadonlyArray<string>): string[] =>
  markExplicitValues(
    tokens.map((token) => `--${name}=${token}`),
    markedFlagNames({ [name]: def })
  )

/** Parses a value with the command's own flag, in a sandbox parse; throws the parser's message. */
export const parseValue = async (name: string, def: FlagDef, tokens: ReadonlyArray<string>): Promise<unknown> => {
  try {
    const parsed = await Parser.parse(valueTokens(name, def, tokens), {
      flags: { [name]: def } as never,
      args: {},
      strict: true,
      context: undefined as never
    })
    return (parsed.flags as Record<string, unknown>)[name]
  } catch (error) {
    // The caller names the option already; drop oclif's "Parsing --x" prefix.
    throw new Error(errorMessage(error).replace(/^Parsing --[\w-]+; /, ""))
  }
}

/** Renders stored tokens for display. */
export const showTokens = (tokens: ReadonlyArray<string>): string =>
  tokens.map((t) => (/^[^\s"]+$/.test(t) ? t : JSON.stringify(t))).join(" ")

/**
 * Rows of a topic, read again only when config.db changed. A server runs many commands per
 * second; each one checks the file's identity instead of opening the database.
 */
const cache = new Map<string, { stamp: string; topics: Map<string, ReadonlyArray<ConfigEntry>> }>()

const stampOf = (path: string): string | undefined => {
  try {
    const stat = statSync(path, { bigint: true })
    return `${stat.ino}:${stat.size}:${stat.mtimeNs}:${stat.ctimeNs}`
  } catch {
    return undefined
  }
}

export const topicEntries = async (io: CommandIO, topic: string): Promise<ReadonlyArray<ConfigEntry>> => {
  const stamp = stampOf(io.configDb)
  // A missing database means "no defaults" (and it is not created by reading).
  if (stamp === undefined) return []
  let entry = cache.get(io.configDb)
  if (entry?.stamp !== stamp) cache.set(io.configDb, (entry = { stamp, topics: new Map() }))
  const known = entry.topics.get(topic)
  if (known) return known
  const rows = await withStore(
    io.configDb,
    Effect.flatMap(ConfigStore, (store) => store.entries(topic))
  )
  entry.topics.set(topic, rows)
  return rows
}

/**
 * The command's flags with configured defaults swapped in. Rows of this command's levels that
 * name no configurable option get a warning on stderr and are ignored; a value that no longer
 * parses fails this command only.
 */
export const withConfiguredDefaults = async (
  config: Config,
  io: CommandIO,
  id: string,
  flags: FlagMap,
  argv: readonly string[]
): Promise<FlagMap> => {
  const [topic, ...path] = id.split(":")
  if (topic === undefined || NOT_CONFIGURABLE_TOPICS.has(topic)) return flags
  const entries = await topicEntries(io, topic)
  if (entries.length === 0) return flags
  const chain: Level[] = Array.from({ length: path.length + 1 }, (_, depth) => ({ topic, path: path.slice(0, depth) }))
  const known = new Map<string, { level: Level; entry: ConfigEntry }>()
  for (const level of chain) {
    const rows = entries.filter((entry) => entry.action === levelKey(level))
    if (rows.length === 0) continue
    const allowed = level.path.length === path.length ? configurableFlags(flags) : await optionsAtLevel(config, level)
    for (const entry of rows) {
      if (!allowed.has(entry.option)) {
        io.err(`Warning: ignoring unknown config entry ${levelLabel(level)} --${entry.option}\n`)
        continue
      }
      // Deeper levels come later in the chain and win.
      known.set(entry.option, { level, entry })
    }
  }
  if (known.size === 0) return flags
  const patched: Record<string, FlagDef> = { ...flags }
  for (const [name, def] of configurableFlags(flags)) {
    const found = known.get(name)
    // The command line wins over a default, also over the default of an option it excludes.
    if (!found || hasOption(argv, name) || excludedBy(flags, name).some((other) => hasOption(argv, other))) continue
    let value: unknown
    try {
      value = await parseValue(name, def, found.entry.tokens)
    } catch (error) {
      throw new ToolkitError(
        `Configured default for ${levelLabel(found.level)} --${name} is invalid: ${errorMessage(error)}`
      )
    }
    patched[name] = { ...def, default: value }
  }
  return patched
}
