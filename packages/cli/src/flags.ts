import { Errors, Flags } from "@oclif/core"
import { Option, SchemaAST, type Schema } from "effect"
import { parseDurationMs } from "@stoat/core"

/** What an input field's schema says about it: its description, integer bounds, literal choices. */
interface FieldFacts {
  readonly description?: string
  readonly min?: number
  readonly max?: number
  readonly options?: ReadonlyArray<string>
}

const alternatives = (ast: SchemaAST.AST): ReadonlyArray<SchemaAST.AST> =>
  SchemaAST.isUnion(ast) ? ast.types.flatMap(alternatives).filter((type) => !SchemaAST.isUndefinedKeyword(type)) : [ast]

/**
 * The schema's wording as a flag's: no "(CLI only…)" note (every flag is), lower case first
 * unless the first word is an acronym (RAM).
 */
const asFlagText = (description: string): string => {
  const text = description.replace(/\s*\(CLI only[^)]*\)$/, "")
  return /^[A-Z][A-Z]/.test(text) ? text : text.charAt(0).toLowerCase() + text.slice(1)
}

const factsOf = (input: Schema.Schema.Any, field: string): FieldFacts => {
  const signature = SchemaAST.isTypeLiteral(input.ast)
    ? input.ast.propertySignatures.find((candidate) => candidate.name === field)
    : undefined
  if (signature === undefined) throw new Error(`the operation input has no field ${field}`)
  const description = Option.getOrUndefined(SchemaAST.getDescriptionAnnotation(signature))
  const types = alternatives(signature.type)
  if (types.length > 1 || SchemaAST.isLiteral(types[0]!)) {
    return {
      ...(description ? { description } : {}),
      options: types.map((type) => (SchemaAST.isLiteral(type) ? String(type.literal) : "")).filter(Boolean)
    }
  }
  // Bounds sit on the refinements (Schema.between) as their JSON Schema annotation.
  let bounds: { min?: number; max?: number } = {}
  for (let ast: SchemaAST.AST = types[0]!; SchemaAST.isRefinement(ast); ast = ast.from) {
    const json = Option.getOrUndefined(SchemaAST.getJSONSchemaAnnotation(ast)) as
      | { minimum?: number; maximum?: number }
      | undefined
    if (json?.minimum !== undefined) bounds = { ...bounds, min: json.minimum }
    if (json?.maximum !== undefined) bounds = { ...bounds, max: json.maximum }
  }
  return { ...(description ? { description } : {}), ...bounds }
}

/** The input field each schema-built flag sets (see `inputOf`). */
const fieldOfFlag = new WeakMap<object, string>()

const describe = (facts: FieldFacts, field: string, description: string | undefined): string => {
  const text = description ?? (facts.description && asFlagText(facts.description))
  if (!text) throw new Error(`input field ${field} has no description: give the flag one`)
  return text
}

/**
 * oclif flags for fields of an operation's input: the description, integer bounds and choices
 * come from the field's schema, so help says what the operation checks. Pass a
 * description where the CLI's wording differs (or the schema has none).
 */
export const schemaFlags = (input: Schema.Schema.Any) => {
  const remember = <F extends object>(flag: F, field: string): F => {
    fieldOfFlag.set(flag, field)
    return flag
  }
  return {
    // The bounds are shown, not enforced by oclif: the operation's schema checks them, so a bad
    // value gets the same "cpus must be 1..256, got 9999" from the CLI and from MCP.
    integer: (field: string, description?: string) => {
      const facts = factsOf(input, field)
      const text = describe(facts, field, description)
      const range =
        facts.min !== undefined && facts.max !== undefined && !text.includes(String(facts.max))
          ? ` (${facts.min}..${facts.max})`
          : ""
      return remember(Flags.integer({ description: `${text}${range}` }), field)
    },
    string: (field: string, description?: string) => {
      const facts = factsOf(input, field)
      return remember(
        Flags.string({
          description: describe(facts, field, description),
          ...(facts.options ? { options: [...facts.options] } : {})
        }),
        field
      )
    },
    boolean: (field: string, description?: string, options: { allowNo?: boolean } = {}) =>
      remember(Flags.boolean({ description: describe(factsOf(input, field), field, description), ...options }), field)
  }
}

/** The input fields of the schema-built flags that were given, under their field names. */
export const inputOf = (
  definitions: Record<string, object>,
  parsed: Record<string, unknown>
): Record<string, unknown> =>
  Object.fromEntries(
    Object.entries(definitions).flatMap(([name, definition]) => {
      const field = fieldOfFlag.get(definition)
      return field !== undefined && parsed[name] !== undefined ? [[field, parsed[name]]] : []
    })
  )

/**
 * `--recipes a,b` or `--recipes a --recipes b` (the original's csv/repeat). Non-greedy: the
 * word after the value is the command's next argument (`create --recipes foo x1` names VM x1).
 */
export const recipesFlag = (description: string) =>
  Flags.string({ description, multiple: true, multipleNonGreedy: true, delimiter: "," })

/** The recipe names of `--recipes` values; `--recipes ""` is the empty list. */
export const recipeNames = (values: ReadonlyArray<string>): string[] =>
  values.map((value) => value.trim()).filter(Boolean)

/** `--set recipe.param=value` (repeatable) as the update input's params table, or the flag at fault. */
export const paramTable = (
  values: ReadonlyArray<string>
): Record<string, Record<string, string>> | { readonly bad: string } => {
  const table: Record<string, Record<string, string>> = {}
  for (const value of values) {
    const match = /^([a-z0-9][a-z0-9-]*)\.([a-z][a-z0-9_]*)=(.*)$/s.exec(value)
    if (!match) return { bad: value }
    ;(table[match[1]!] ??= {})[match[2]!] = match[3]!
  }
  return table
}

/** The environment variable a `--secret recipe.param` value comes from when no terminal can ask. */
export const secretEnvName = (recipe: string, param: string): string =>
  `STOAT_SECRET_${recipe}_${param}`.toUpperCase().replaceAll("-", "_")

/** A duration in seconds: Go-style as the original took them (90s, 2m, 1m30s), or plain seconds. */
export const parseDuration = (text: string): number | undefined => {
  if (/^\d+$/.test(text)) return Number(text)
  const ms = parseDurationMs(text)
  return ms === undefined ? undefined : ms / 1000
}

/** `--timeout 2m` for the waits (`wait`, `up`): whole seconds, 1 to 600; anything else is a usage error. */
export const waitTimeoutFlag = (description: string) =>
  Flags.custom<number>({
    description,
    parse: async (text) => {
      const seconds = parseDuration(text)
      // A CLIError, as oclif's own flags refuse a value: main answers it as a usage error.
      if (seconds === undefined || seconds <= 0)
        throw new Errors.CLIError(`expected a positive duration like 2m or 90s, got "${text}"`)
      return Math.min(600, Math.max(1, Math.ceil(seconds)))
    }
  })()
