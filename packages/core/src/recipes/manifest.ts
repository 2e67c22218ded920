/**
 * recipe.toml: parsing and every validation rule of the format (schemas 2 and 3). A bad file is
 * an `invalid_spec` naming the file and the key; parsing writes nothing.
 */
import { posix } from "node:path"
import { Either, ParseResult, Schema } from "effect"
import { parse } from "smol-toml"
import { InvalidSpec } from "../errors.js"
import { RECIPE_NAME } from "../platform/names.js"
import { parseDurationMs } from "../platform/duration.js"

export const PARAM_NAME = /^[a-z][a-z0-9_]*$/
/** Where `default_from` may fill a param from: the VM's ssh account or its name. */
export const DEFAULT_SOURCES = ["ssh_user", "vm_name"] as const

const StringList = Schema.Array(Schema.String)
const Duration = Schema.String.pipe(
  Schema.pattern(/^[1-9][0-9]*(ms|s|m)$/, { message: () => 'a duration like "30s", "2m" or "500ms"' })
)
const Scalar = Schema.Union(Schema.String, Schema.Number, Schema.Boolean)

const ParamTable = Schema.Struct({
  type: Schema.Literal("string", "int", "bool", "enum", "secret"),
  default: Schema.optional(Scalar),
  required: Schema.optional(Schema.Boolean),
  values: Schema.optional(StringList),
  help: Schema.optional(Schema.String),
  default_from: Schema.optional(Schema.Literal(...DEFAULT_SOURCES))
})

const Common = {
  name: Schema.String.pipe(Schema.pattern(RECIPE_NAME, { message: () => "lower-case letters, digits and '-'" })),
  description: Schema.optional(Schema.String),
  version: Schema.optional(Schema.String),
  os: Schema.optional(StringList),
  requires: Schema.optional(StringList),
  stage: Schema.optional(Schema.Literal("provision", "install")),
  script: Schema.String,
  scripts: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
  auto: Schema.optional(Schema.Boolean),
  run: Schema.optional(Schema.Literal("once", "always", "manual")),
  reboot: Schema.optional(Schema.Boolean),
  runtime: Schema.optional(Schema.Literal("sh", "python3")),
  depends: Schema.optional(Schema.Array(Schema.String.pipe(Schema.pattern(RECIPE_NAME)))),
  health: Schema.optional(
    Schema.Struct({ check: Schema.String.pipe(Schema.minLength(1)), timeout: Schema.optional(Duration) })
  )
}
const Schema2 = Schema.Struct({ schema: Schema.optional(Schema.Literal(2)), ...Common })
const Schema3 = Schema.Struct({
  schema: Schema.Literal(3),
  ...Common,
  params: Schema.optional(Schema.Record({ key: Schema.String, value: ParamTable })),
  outputs: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String }))
})

export type ParamType = "string" | "int" | "bool" | "enum" | "secret"

export interface RecipeParamDef {
  readonly name: string
  readonly type: ParamType
  readonly required: boolean
  /** The default as the script sees it (int decimal, bool true/false); "" when none. */
  readonly default: string
  readonly hasDefault: boolean
  readonly values: ReadonlyArray<string>
  readonly help: string
  readonly default_from?: (typeof DEFAULT_SOURCES)[number]
}

/** One recipe as Stoat uses it: the manifest with every default filled in. */
export interface RecipeManifest {
  readonly schema: 2 | 3
  readonly name: string
  readonly description: string
  readonly version: string
  readonly os: ReadonlyArray<string>
  readonly requires: ReadonlyArray<string>
  readonly stage: "provision" | "install"
  /** Paths relative to the recipe folder. */
  readonly script: string
  readonly scripts: Readonly<Record<string, string>>
  readonly auto: boolean
  readonly run: "once" | "always" | "manual"
  readonly reboot: boolean
  readonly runtime: "sh" | "python3"
  readonly depends: ReadonlyArray<string>
  readonly params: ReadonlyArray<RecipeParamDef>
  readonly outputs: ReadonlyArray<{ readonly name: string; readonly help: string }>
  readonly health: { readonly check: string; readonly timeout: string } | null
}

const issueText = (error: ParseResult.ParseError): string => {
  const first = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
  if (!first) return "invalid"
  const key = first.path.map(String).join(".")
  const message = first.message.replace(/^Expected /, "expected ")
  return key === "" ? message : `${key}: ${message}`
}

/** A script path must be relative and stay inside the recipe folder. */
const scriptPathProblem = (path: string): string | undefined => {
  if (path === "") return "must name a file"
  if (path.includes("\0")) return "must not contain NUL"
  if (posix.isAbsolute(path)) return "must be relative to the recipe folder"
  const normal = posix.normalize(path)
  if (normal === ".." || normal.startsWith("../") || normal === ".") return "must stay inside the recipe folder"
  return undefined
}

const asText = (value: string | number | boolean): string => String(value)

const paramProblem = (name: string, table: typeof ParamTable.Type): string | undefined => {
  if (!PARAM_NAME.test(name))
    return `params.${name}: param names use lower-case letters, digits and '_', starting with a letter`
  const where = `params.${name}`
  if (table.type === "secret" && table.default !== undefined) return `${where}.default: a secret has no default`
  if (table.type === "secret" && table.default_from !== undefined)
    return `${where}.default_from: a secret has no default`
  if (table.type === "enum" && (table.values === undefined || table.values.length === 0))
    return `${where}.values: an enum needs values`
  if (table.type !== "enum" && table.values !== undefined) return `${where}.values: only an enum has values`
  if (
    table.type !== "secret" &&
    table.default === undefined &&
    table.default_from === undefined &&
    table.required !== true
  ) {
    return `${where}: needs a default or required = true`
  }
  const value = table.default
  if (value !== undefined) {
    if (
      table.type === "int" &&
      !(typeof value === "number" && Number.isInteger(value)) &&
      !(typeof value === "string" && /^-?\d+$/.test(value))
    ) {
      return `${where}.default: expected an integer`
    }
    if (table.type === "bool" && typeof value !== "boolean" && value !== "true" && value !== "false")
      return `${where}.default: expected true or false`
    if (table.type === "enum" && !(table.values ?? []).includes(asText(value)))
      return `${where}.default: ${JSON.stringify(asText(value))} is not one of ${(table.values ?? []).join(", ")}`
  }
  return undefined
}

/**
 * Parses and validates recipe.toml text. `file` names the file in errors; `dirName` is the
 * recipe folder's name, which the manifest's `name` must equal.
 */
export const parseRecipeToml = (
  file: string,
  dirName: string,
  text: string
): Either.Either<RecipeManifest, InvalidSpec> => {
  const fail = (why: string, key?: string) =>
    Either.left(new InvalidSpec({ message: `${file}: ${why}`, subject: key === undefined ? file : `${file}:${key}` }))
  let raw: Record<string, unknown>
  try {
    raw = parse(text) as Record<string, unknown>
  } catch (error) {
    return fail((error as Error).message.split("\n")[0] ?? "invalid TOML")
  }
  const version = raw["schema"] ?? 2
  if (version !== 2 && version !== 3)
    return fail(`schema: ${JSON.stringify(version)} is not supported (2 or 3)`, "schema")
  const options = { onExcessProperty: "error", errors: "first" } as const
  // Schema 2 is schema 3 without params and outputs, so one shape serves both.
  const decoded: Either.Either<Omit<typeof Schema3.Type, "schema">, ParseResult.ParseError> = version === 3
    ? Schema.decodeUnknownEither(Schema3, options)(raw)
    : Schema.decodeUnknownEither(Schema2, options)(raw)
  if (Either.isLeft(decoded)) {
    const why = issueText(decoded.left)
    return fail(why, why.split(":")[0])
  }
  const file3 = decoded.right
  if (file3.name !== dirName)
    return fail(`name: ${JSON.stringify(file3.name)} must equal the folder name ${JSON.stringify(dirName)}`, "name")
  const scriptProblem = scriptPathProblem(file3.script)
  if (scriptProblem) return fail(`script: ${scriptProblem}`, "script")
  for (const [os, path] of Object.entries(file3.scripts ?? {})) {
    const problem = scriptPathProblem(path)
    if (problem) return fail(`scripts.${os}: ${problem}`, `scripts.${os}`)
  }
  if ((file3.depends ?? []).includes(file3.name)) return fail("depends: a recipe cannot depend on itself", "depends")
  const params: RecipeParamDef[] = []
  for (const [name, table] of Object.entries(file3.params ?? {})) {
    const problem = paramProblem(name, table)
    if (problem) return fail(problem, `params.${name}`)
    const value = table.default
    params.push({
      name,
      type: table.type,
      required: table.required ?? false,
      default: value === undefined ? "" : asText(value),
      hasDefault: value !== undefined,
      values: table.values ?? [],
      help: table.help ?? "",
      ...(table.default_from !== undefined ? { default_from: table.default_from } : {})
    })
  }
  const outputs = Object.entries(file3.outputs ?? {}).map(([name, help]) => ({ name, help }))
  for (const output of outputs)
    if (!PARAM_NAME.test(output.name))
      return fail(
        `outputs.${output.name}: output names use lower-case letters, digits and '_'`,
        `outputs.${output.name}`
      )
  return Either.right({
    schema: version,
    name: file3.name,
    description: file3.description ?? "",
    version: file3.version ?? "",
    os: file3.os ?? [],
    requires: file3.requires ?? [],
    stage: file3.stage ?? "provision",
    script: posix.normalize(file3.script),
    scripts: Object.fromEntries(Object.entries(file3.scripts ?? {}).map(([os, path]) => [os, posix.normalize(path)])),
    auto: file3.auto ?? false,
    run: file3.run ?? "once",
    reboot: file3.reboot ?? false,
    runtime: file3.runtime ?? "sh",
    depends: file3.depends ?? [],
    params: params.sort((a, b) => a.name.localeCompare(b.name)),
    outputs: outputs.sort((a, b) => a.name.localeCompare(b.name)),
    health: file3.health ? { check: file3.health.check, timeout: file3.health.timeout ?? "30s" } : null
  })
}

/** Milliseconds in a recipe duration ("30s", "2m", "500ms"); the schema admits no other. */
export const durationMs = (text: string): number => parseDurationMs(text) ?? 30_000
