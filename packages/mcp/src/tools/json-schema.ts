import { JSONSchema, type Schema } from "effect"

/**
 * JSON Schema for tools/list, compact: every tool's schemas cost an agent context on each
 * session, so the wire carries what a caller needs to build arguments and read results, and
 * nothing Effect adds about how a schema was built.
 */
type Node = { [key: string]: unknown }

const isNode = (value: unknown): value is Node => typeof value === "object" && value !== null && !Array.isArray(value)

/** Effect's titles ("maxLength(64)", "int") and ids name the schema's construction, not the field. */
const CONSTRUCTION_KEYS = new Set(["title", "$schema", "$id"])

const refName = (node: Node): string | undefined =>
  typeof node["$ref"] === "string" && node["$ref"].startsWith("#/$defs/")
    ? node["$ref"].slice("#/$defs/".length)
    : undefined

const refersTo = (node: unknown, name: string): boolean =>
  Array.isArray(node)
    ? node.some((item) => refersTo(item, name))
    : isNode(node) && (refName(node) === name || Object.values(node).some((inner) => refersTo(inner, name)))

/**
 * `$ref`s to definitions that do not refer to themselves (Effect names `Int` once per schema)
 * become the definition in place; recursive ones (the Json value) stay under `$defs`.
 */
const inlineDefinitions = (schema: Node): Node => {
  const defs = isNode(schema["$defs"]) ? (schema["$defs"] as Record<string, Node>) : {}
  const inlinable = new Set(Object.keys(defs).filter((name) => !refersTo(defs[name], name)))
  const walk = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(walk)
    if (!isNode(node)) return node
    const name = refName(node)
    const { $ref: _ref, ...rest } = node
    const base = name !== undefined && inlinable.has(name) ? { ...(walk(defs[name]) as Node), ...rest } : node
    const out: Node = {}
    for (const [key, value] of Object.entries(base)) {
      if (CONSTRUCTION_KEYS.has(key) || key === "$defs") continue
      out[key] = walk(value)
    }
    return out
  }
  const body = walk(schema) as Node
  const kept = Object.fromEntries(
    Object.entries(defs)
      .filter(([name]) => !inlinable.has(name))
      .map(([name, def]) => [name, walk(def)])
  )
  return Object.keys(kept).length > 0 ? { $defs: kept, ...body } : body
}

/** A result's full JSON Schema (for the operation-catalog resource): every field, nested ones too. */
export const fullOutputSchema = (schema: Schema.Schema<any, any>): Node =>
  inlineDefinitions(JSONSchema.make(schema) as unknown as Node)

/**
 * String rules (patterns, lengths) are checked by the server, which names the rule in plain words
 * when an argument breaks it; on the wire they cost every session context and tell an agent less
 * than the field's description does.
 */
const SERVER_CHECKED = new Set(["pattern", "maxLength", "propertyNames"])

/**
 * A field's schema: its type, numeric bounds, values and own description, without the
 * descriptions Effect generates for its parts ("an integer", "a string at most 64 character(s)
 * long"). A record (`patternProperties` with the empty pattern) reads as `additionalProperties`.
 */
const plainField = (node: unknown, keepDescription: boolean): unknown => {
  if (Array.isArray(node)) return node.map((item) => plainField(item, false))
  if (!isNode(node)) return node
  // A described reference comes as {allOf: [its schema], description}: one schema is enough.
  const { allOf, ...rest } = node
  const merged = Array.isArray(allOf) && allOf.length === 1 && isNode(allOf[0]) ? { ...allOf[0], ...rest } : node
  const out: Node = {}
  for (const [key, value] of Object.entries(merged)) {
    if ((key === "description" && !keepDescription) || SERVER_CHECKED.has(key)) continue
    if (key === "required" && Array.isArray(value) && value.length === 0) continue
    if (key === "properties" && isNode(value)) {
      if (Object.keys(value).length === 0 && isNode(merged["patternProperties"])) continue
      out[key] = Object.fromEntries(Object.entries(value).map(([name, field]) => [name, plainField(field, true)]))
      continue
    }
    if (key === "patternProperties" && isNode(value) && Object.keys(value).length === 1 && "" in value) {
      out["additionalProperties"] = plainField(value[""], false)
      continue
    }
    out[key] = plainField(value, false)
  }
  return out
}

/** An input schema: the closed object with each field's type, bounds and description. */
export const compactInputSchema = (schema: Schema.Schema<any, any>): Node =>
  plainField(inlineDefinitions(JSONSchema.make(schema) as unknown as Node), false) as Node

/**
 * A result schema as tools/list carries it: a JSON object, as every result is. Field names alone
 * cost ~5 KB of the list, more than its budget (P12) leaves; the descriptions name the fields an
 * agent acts on, each result shows the rest, and the operation-catalog resource has every DTO in
 * full (`fullOutputSchema`).
 */
export const compactOutputSchema = (schema: Schema.Schema<any, any>): Node => ({
  type: (JSONSchema.make(schema) as unknown as Node)["type"]
})
