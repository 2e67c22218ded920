import { Effect } from "effect"
import { ConfigStore } from "../../store/index.js"
import { withStore } from "../../runtime/store.js"
import { ToolkitCommand } from "../../runtime/base.js"
import {
  commandsAt,
  configurableFlags,
  excludedBy,
  flagsOf,
  levelKey,
  levelLabel,
  NOT_CONFIGURABLE_TOPICS,
  optionsAtLevel,
  parseValue,
  showTokens,
  topicEntries,
  type FlagDef,
  type Level
} from "../../runtime/defaults.js"
import { errorMessage } from "../../runtime/errors.js"
import { optionMeta } from "../../runtime/options.js"
import { commandIds, displayId, loadCommand } from "../../runtime/tree.js"

interface Request {
  readonly level: Level
  readonly set: Array<{ name: string; tokens: string[] }>
  readonly unset: string[]
}

export default class ConfigCommand extends ToolkitCommand {
  static override summary = "Show or set per-user defaults for command options"
  static override description =
    `Sets defaults for any optional option at a topic, group or action level, e.g. 'config strings report --words-per-minute 180' or 'config demoscene --frames 100'. A deeper level wins over a shallower one, and the command line wins over both. Without options it shows the effective values at that level; --unset <name> (repeatable) removes one. Values are checked with the option's own parser before anything is written. Stored in config.db under $XDG_CONFIG_HOME/toolkit (else ~/.config/toolkit).`
  static override usage = "config [TOPIC] [GROUP...] [ACTION] [--OPTION VALUE...] [--unset NAME...]"
  static override strict = false

  async run(): Promise<number> {
    const request = await this.request()
    if (request.level.topic === "") {
      if (request.set.length > 0 || request.unset.length > 0)
        this.fail("options need a level: toolkit config <topic> [group...] [action] --option value")
      return this.showAll()
    }
    const { level } = request
    const label = levelLabel(level)
    if (level.topic === "config") this.fail("the config topic itself cannot be configured")
    if (commandsAt(this.config, level).length === 0) this.fail(`unknown config level '${label}'`)
    if (NOT_CONFIGURABLE_TOPICS.has(level.topic)) this.fail(`the ${level.topic} topic has no configurable options`)
    const options = await optionsAtLevel(this.config, level)
    if (request.set.length === 0 && request.unset.length === 0) return this.show(level, options)

    // Check everything first; write nothing if anything is wrong.
    const problems: string[] = []
    for (const { name, tokens } of request.set) {
      const defs = options.get(name)
      if (!defs) {
        problems.push(await this.whyNotConfigurable(level, name))
        continue
      }
      for (const def of defs) {
        try {
          await parseValue(name, def, tokens)
        } catch (error) {
          problems.push(`invalid value for ${label} --${name}: ${errorMessage(error)}`)
          break
        }
      }
    }
    for (const name of request.unset)
      if (request.set.some((s) => s.name === name)) problems.push(`--${name} is both set and unset`)
    if (problems.length === 0) problems.push(...(await this.exclusiveDefaults(request)))
    if (problems.length > 0) {
      for (const problem of problems) this.line(`Error: ${problem}`)
      return 1
    }
    const removed = await withStore(
      this.io.configDb,
      Effect.flatMap(ConfigStore, (store) =>
        store.apply(
          level.topic,
          request.set.map(({ name, tokens }) => ({ action: levelKey(level), option: name, tokens })),
          request.unset.map((name) => ({ action: levelKey(level), option: name }))
        )
      )
    )
    for (const { name, tokens } of request.set) this.line(`Set ${label} --${name} = ${showTokens(tokens)}`)
    request.unset.forEach((name, i) =>
      this.line(removed[i] ? `Unset ${label} --${name}` : `${label} --${name} was not set`)
    )
    return 0
  }

  /** Splits argv into the level path, values to set and names to unset. */
  private async request(): Promise<Request> {
    const argv = [...this.argv]
    const path: string[] = []
    while (argv.length > 0 && !argv[0]!.startsWith("-")) path.push(argv.shift()!)
    const [topic = "", ...rest] = path
    const level: Level = { topic, path: rest }
    const options =
      topic === "" || NOT_CONFIGURABLE_TOPICS.has(topic) || commandsAt(this.config, level).length === 0
        ? new Map<string, FlagDef[]>()
        : await optionsAtLevel(this.config, level)
    const set: Request["set"] = []
    const unset: string[] = []
    while (argv.length > 0) {
      const token = argv.shift()!
      if (!token.startsWith("--") || token === "--") this.fail(`unexpected argument '${token}'`)
      const eq = token.indexOf("=")
      const name = eq === -1 ? token.slice(2) : token.slice(2, eq)
      const inline = eq === -1 ? undefined : token.slice(eq + 1)
      if (name === "unset") {
        const target = inline ?? argv.shift()
        if (target === undefined || target === "") this.fail("--unset needs an option name")
        unset.push(target.replace(/^--/, ""))
        continue
      }
      const def = options.get(name)?.[0]
      const tokens: string[] = []
      if (inline !== undefined) tokens.push(inline)
      else if (def?.multiple) while (argv.length > 0 && !argv[0]!.startsWith("--")) tokens.push(argv.shift()!)
      else if (def && optionMeta(def).json === "boolean") {
        const next = argv[0]?.toLowerCase()
        tokens.push(next === "true" || next === "false" ? argv.shift()! : "true")
      } else if (argv.length > 0 && !argv[0]!.startsWith("--")) tokens.push(argv.shift()!)
      if (tokens.length === 0) this.fail(`--${name} needs a value`)
      set.push({ name, tokens })
    }
    return { level, set, unset }
  }

  /**
   * Defaults that would leave a command below the level with defaults for two options it takes
   * only one of (strings report --in-file and --string): on the command line one of them then
   * always clashes with the other's default.
   */
  private async exclusiveDefaults(request: Request): Promise<string[]> {
    const { level } = request
    const entries = await topicEntries(this.io, level.topic)
    const setNames = new Set(request.set.map((s) => s.name))
    const problems = new Set<string>()
    for (const id of commandsAt(this.config, level)) {
      const flags = flagsOf(await loadCommand(this.config, id))
      const path = id.split(":").slice(1)
      const chain = new Set(Array.from({ length: path.length + 1 }, (_, depth) => path.slice(0, depth).join(" ")))
      const configured = new Set(
        entries
          .filter((e) => chain.has(e.action) && !(e.action === levelKey(level) && request.unset.includes(e.option)))
          .map((e) => e.option)
      )
      for (const name of setNames) configured.add(name)
      for (const name of setNames)
        for (const other of excludedBy(flags, name))
          if (configured.has(other)) {
            const [a, b] = [name, other].sort()
            problems.add(
              `--${a} and --${b} of ${displayId(id)} cannot both have defaults: the command takes only one of them`
            )
          }
    }
    return [...problems]
  }

  /** The reason an option cannot be set at a level, for the error message. */
  private async whyNotConfigurable(level: Level, name: string): Promise<string> {
    const label = levelLabel(level)
    if (name === "unset") return "the option name 'unset' is reserved"
    for (const id of commandsAt(this.config, level)) {
      const flags = flagsOf(await loadCommand(this.config, id))
      const def = flags[name]
      if (!def) continue
      if (def.required) return `--${name} is required by ${displayId(id)} and cannot have a default`
      if (optionMeta(def).immutable) return `--${name} of ${displayId(id)} cannot be configured`
      if (configurableFlags(flags).has(name))
        return `--${name} has different types below ${label}; set it on a deeper level`
    }
    return `--${name} is not an option of ${label}`
  }

  /** Effective configured values at a level: the deepest setting at or above it wins. */
  private async show(level: Level, options: Map<string, FlagDef[]>): Promise<number> {
    const entries = await topicEntries(this.io, level.topic)
    const lines: string[] = []
    for (const name of [...options.keys()].sort()) {
      for (let depth = level.path.length; depth >= 0; depth--) {
        const at: Level = { topic: level.topic, path: level.path.slice(0, depth) }
        const entry = entries.find((e) => e.action === levelKey(at) && e.option === name)
        if (entry) {
          lines.push(`--${name} = ${showTokens(entry.tokens)} (from: ${levelLabel(at)})`)
          break
        }
      }
    }
    if (lines.length === 0) this.line(`No configured defaults for ${levelLabel(level)}`)
    for (const line of lines) this.line(line)
    return 0
  }

  /** Without a level: every stored default of every topic. */
  private async showAll(): Promise<number> {
    const topics = [...new Set(commandIds(this.config).map((id) => id.split(":")[0]!))].filter(
      (t) => !NOT_CONFIGURABLE_TOPICS.has(t)
    )
    let any = false
    for (const topic of topics) {
      for (const entry of await topicEntries(this.io, topic)) {
        any = true
        this.line(
          `${levelLabel({ topic, path: entry.action === "" ? [] : entry.action.split(" ") })} --${entry.option} = ${showTokens(entry.tokens)}`
        )
      }
    }
    if (!any) this.line("No configured defaults")
    return 0
  }
}
