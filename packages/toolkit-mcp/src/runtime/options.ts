import { Flags } from "@oclif/core"
import { markExplicitValues, normalizeBooleans, unmarkValue } from "./argv.js"

/**
 * Option definitions. Every command declares its options with these helpers, which are plain
 * oclif flags plus a small tag saying which JSON type the value has. The CLI parses with the
 * flags; the MCP input schema and `config` validation are derived from the very same objects.
 */
export type JsonType = "string" | "integer" | "number" | "boolean"

export interface OptionMeta {
  readonly json: JsonType
  /** Never configurable through `config` (e.g. secrets). */
  readonly immutable?: boolean
  /** A free-text option whose parser takes off the explicit-value mark (argv.ts). */
  readonly marksExplicitValues?: boolean
}

// An enumerable symbol, so that a spread copy of a flag (config defaults swap the default in a
// copy) keeps the tag.
const META: unique symbol = Symbol.for("stoat.toolkit.option")

const tag = <T extends object>(definition: T, meta: OptionMeta): T => Object.assign(definition, { [META]: meta })

/** The tag of a flag; untagged option flags are strings, oclif booleans are booleans. */
export const optionMeta = (definition: unknown): OptionMeta => {
  const meta = (definition as { [META]?: OptionMeta })[META]
  if (meta) return meta
  return { json: (definition as { type?: string }).type === "boolean" ? "boolean" : "string" }
}

const parseBoolean = async (input: string): Promise<boolean> => {
  const value = input.toLowerCase()
  if (value === "true") return true
  if (value === "false") return false
  throw new Error(`Expected true or false but received: ${input}`)
}

// A boolean takes an explicit value (`--flag true|false`), like System.CommandLine's bool options,
// so that tool-call arguments map to tokens one to one. A bare `--flag` means true (see argv.ts).
const booleanFlag = Flags.custom<boolean>({ parse: parseBoolean, helpValue: "true|false" })

const numberFlag = Flags.custom<number>({
  parse: async (input) => {
    const value = Number(input)
    if (input.trim() === "" || !Number.isFinite(value)) throw new Error(`Expected a number but received: ${input}`)
    return value
  }
})

export const Opt = {
  string: ((options: any) =>
    tag(Flags.string({ ...options, parse: async (input: string) => unmarkValue(input) }), {
      json: "string",
      marksExplicitValues: true
    })) as typeof Flags.string,
  /** A string from a fixed set. */
  oneOf: <const T extends string>(
    values: readonly T[],
    options: { description: string; default?: T; required?: boolean }
  ) => Flags.string({ ...options, options: [...values] }),
  integer: ((options: any) => tag(Flags.integer(options), { json: "integer" })) as typeof Flags.integer,
  number: ((options: any) => tag(numberFlag(options), { json: "number" })) as typeof numberFlag,
  boolean: (options: { description: string; default?: boolean; hidden?: boolean }) =>
    tag(booleanFlag({ ...options, default: options.default ?? false }), { json: "boolean" }),
  /** A secret or otherwise fixed value: never offered as a configurable default. */
  immutable: <T extends object>(definition: T): T => tag(definition, { ...optionMeta(definition), immutable: true })
}

/** Names of the free-text options, whose `--name=value` values are marked (argv.ts). */
export const markedFlagNames = (flags: Record<string, unknown>): Set<string> =>
  new Set(
    Object.entries(flags)
      .filter(([, def]) => optionMeta(def).marksExplicitValues === true)
      .map(([name]) => name)
  )

/** Names of flags that take an explicit true|false value. */
export const booleanFlagNames = (flags: Record<string, unknown>): Set<string> =>
  new Set(
    Object.entries(flags)
      .filter(([, def]) => optionMeta(def).json === "boolean")
      .map(([name]) => name)
  )

/** A command's argv as oclif gets to parse it: bare booleans made explicit, `=` values marked. */
export const parserArgv = (argv: readonly string[], flags: Record<string, unknown>): string[] =>
  markExplicitValues(normalizeBooleans(argv, booleanFlagNames(flags)), markedFlagNames(flags))
