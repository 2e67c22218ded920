import type { Config } from "@oclif/core"
import type { ToolKind } from "../runtime/base.js"
import { flagsOf, type FlagDef, type FlagMap } from "../runtime/defaults.js"
import { EXPLICIT_VALUE_MARK } from "../runtime/argv.js"
import { optionMeta } from "../runtime/options.js"
import { loadCommand, toolName, type CommandClass } from "../runtime/tree.js"

/** One exposed command as an MCP tool. */
export interface ToolEntry {
  readonly name: string
  readonly id: string
  readonly cls: CommandClass
  /** The options the schema offers (visible flags only). */
  readonly flags: FlagMap
  readonly definition: {
    readonly name: string
    readonly description: string
    readonly inputSchema: {
      type: "object"
      properties: Record<string, JsonSchema>
      required?: string[]
      additionalProperties: false
    }
    readonly annotations: {
      readOnlyHint: boolean
      destructiveHint: boolean
      idempotentHint: boolean
      openWorldHint: boolean
    }
  }
}

export type JsonSchema = Record<string, unknown>

const HIDDEN_NAMES = new Set(["help", "version", "json"])

const ANNOTATIONS: Record<ToolKind, ToolEntry["definition"]["annotations"]> = {
  read: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  write: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  delete: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  network: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true }
}

/** JSON Schema of one option, from the oclif flag the command line parses with. */
export const propertySchema = (def: FlagDef): JsonSchema => {
  const meta = optionMeta(def)
  const item: JsonSchema = { type: meta.json }
  if (def.options && def.options.length > 0) item["enum"] = [...def.options]
  const bounds = def as { min?: unknown; max?: unknown }
  if (meta.json === "integer" || meta.json === "number") {
    if (typeof bounds.min === "number") item["minimum"] = bounds.min
    if (typeof bounds.max === "number") item["maximum"] = bounds.max
  }
  const schema: JsonSchema = def.multiple ? { type: "array", items: item } : item
  if (def.description) schema["description"] = def.description
  if (def.default !== undefined && typeof def.default !== "function") schema["default"] = def.default
  return schema
}

export const buildTool = async (config: Config, id: string): Promise<ToolEntry> => {
  const cls = await loadCommand(config, id)
  const all = flagsOf(cls)
  const flags: FlagMap = {}
  for (const [name, def] of Object.entries(all)) if (!def.hidden && !HIDDEN_NAMES.has(name)) flags[name] = def
  const properties: Record<string, JsonSchema> = {}
  const required: string[] = []
  for (const [name, def] of Object.entries(flags)) {
    properties[name] = propertySchema(def)
    if (def.required) required.push(name)
  }
  const kind = (cls as unknown as { toolKind?: ToolKind }).toolKind ?? "read"
  const name = toolName(id)
  return {
    name,
    id,
    cls,
    flags,
    definition: {
      name,
      description: cls.description ?? cls.summary ?? name,
      inputSchema: {
        type: "object",
        properties,
        ...(required.length > 0 ? { required } : {}),
        additionalProperties: false
      },
      annotations: ANNOTATIONS[kind]
    }
  }
}

const article = (type: string): string => (/^[aeiou]/.test(type) ? "an" : "a")

const matches = (value: unknown, json: string): boolean => {
  switch (json) {
    case "string":
      return typeof value === "string"
    case "integer":
      return typeof value === "number" && Number.isInteger(value)
    case "number":
      return typeof value === "number" && Number.isFinite(value)
    case "boolean":
      return typeof value === "boolean"
    default:
      return false
  }
}

const token = (name: string, value: string): string[] =>
  // `--opt=value` keeps a value such as "-", "-5" or "--other-option" from being read as an
  // option, and carries a leading explicit-value mark through unchanged (argv.ts).
  value.startsWith("-") || value.startsWith(EXPLICIT_VALUE_MARK) ? [`--${name}=${value}`] : [`--${name}`, value]

/**
 * Turns tool arguments back into command-line tokens (`{file: "x"}` → `--file x`; booleans as
 * `--flag true|false`). Values are taken literally: no response-file expansion. Arguments that
 * are not an object, or that the schema does not allow, give the error text instead.
 */
export const toArgv = (tool: ToolEntry, args: unknown): { argv: string[] } | { error: string } => {
  const given = args === undefined ? {} : args
  if (typeof given !== "object" || given === null || Array.isArray(given))
    return { error: `Arguments for tool ${tool.name} must be an object.` }
  const argv: string[] = []
  // Own keys, "__proto__" included: JSON.parse makes it an ordinary key, and it names no option.
  for (const [name, value] of Object.entries(given)) {
    const def = Object.hasOwn(tool.flags, name) ? tool.flags[name] : undefined
    if (!def) return { error: `Unknown argument '${name}' for tool ${tool.name}.` }
    const json = optionMeta(def).json
    if (def.multiple) {
      if (!Array.isArray(value) || !value.every((v) => matches(v, json)))
        return { error: `Argument '${name}' for tool ${tool.name} must be an array of ${json} values.` }
      for (const v of value) argv.push(...token(name, String(v)))
      continue
    }
    if (!matches(value, json))
      return { error: `Argument '${name}' for tool ${tool.name} must be ${article(json)} ${json}.` }
    argv.push(...token(name, String(value)))
  }
  return { argv }
}
