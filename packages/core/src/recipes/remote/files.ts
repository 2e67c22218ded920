/**
 * The three files of remote recipes: `stoat.lock` (pins), `index.toml` (the curated index) and
 * the `[recipes]` table of a project's `stoat.toml` (declarations). A bad file is an
 * `invalid_spec` naming the file and the key; parsing writes nothing, and stoat.toml is edited
 * line by line so its other tables and comments survive.
 */
import { join } from "node:path"
import { Effect, Option } from "effect"
import { parse } from "smol-toml"
import { InvalidSpec } from "../../errors.js"
import * as fs from "../../platform/fs.js"
import { RECIPE_NAME } from "../../platform/names.js"

export const LOCK_SCHEMA = 1
export const INDEX_SCHEMA = 1
export const LOCK_HEADER = "# stoat.lock: written by stoat; do not edit"
const COMMIT = /^[0-9a-f]{40}$/
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/

/** A git ref as the index and stoat.toml may name it: a tag, a branch or a commit, no ranges. */
export const refProblem = (ref: string): string | undefined => {
  if (ref.length > 200) return "is longer than 200 characters"
  if (!/^[A-Za-z0-9][A-Za-z0-9._/-]*$/.test(ref))
    return "must start with a letter or digit and use letters, digits, '.', '_', '/' and '-'"
  if (ref.includes("..")) return "must not contain '..'"
  for (const part of ref.split("/")) {
    if (part === "" || part.startsWith(".") || part.endsWith(".") || part.endsWith(".lock"))
      return "has an empty, dot-edged or .lock component"
  }
  return undefined
}

/** A Git source: a URL or a path, never something git would read as an option or that holds control characters. */
export const sourceProblem = (source: string): string | undefined => {
  if (source === "") return "is empty"
  if (source.length > 1000) return "is longer than 1000 characters"
  if (source.startsWith("-")) return "must not start with '-'"
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(source)) return "contains control characters"
  if (/^ext::/i.test(source)) return "uses the ext:: transport, which runs commands"
  return undefined
}

const invalid = (file: string, why: string, key?: string) =>
  new InvalidSpec({
    message: `${file}: ${key === undefined ? "" : `${key}: `}${why}`,
    subject: key === undefined ? file : `${file}:${key}`
  })

const parseToml = (file: string, text: string): Effect.Effect<Record<string, unknown>, InvalidSpec> =>
  Effect.try({
    try: () => parse(text) as Record<string, unknown>,
    catch: (error) => invalid(file, (error as Error).message.split("\n")[0] ?? "invalid TOML")
  })

const isTable = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value) && !(value instanceof Date)

const schemaOf = (file: string, raw: Record<string, unknown>, supported: number, label: string) =>
  Effect.gen(function* () {
    const schema = raw["schema"]
    if (typeof schema !== "number" || !Number.isInteger(schema) || schema < 1)
      return yield* invalid(file, `must be a positive integer, got ${JSON.stringify(schema)}`, "schema")
    if (schema > supported)
      return yield* new InvalidSpec({
        message: `${label}: schema ${schema} is newer than this stoat (${supported})`,
        subject: `${file}:schema`
      })
  })

const stringField = (file: string, table: Record<string, unknown>, key: string, path: string, required: boolean) =>
  Effect.gen(function* () {
    const value = table[key]
    if (value === undefined && !required) return ""
    if (typeof value !== "string")
      return yield* invalid(
        file,
        value === undefined ? "is required" : `must be a string, got ${JSON.stringify(value)}`,
        `${path}.${key}`
      )
    return value
  })

// ---------------------------------------------------------------------------------------- stoat.lock

export interface LockEntry {
  readonly source: string
  readonly ref: string
  readonly commit: string
  readonly added: string
}

export type LockEntries = ReadonlyMap<string, LockEntry>

export const parseLock = (file: string, text: string): Effect.Effect<Map<string, LockEntry>, InvalidSpec> =>
  Effect.gen(function* () {
    const raw = yield* parseToml(file, text)
    yield* schemaOf(file, raw, LOCK_SCHEMA, "stoat.lock")
    for (const key of Object.keys(raw))
      if (key !== "schema" && key !== "recipes") return yield* invalid(file, "is not a stoat.lock key", key)
    const recipes = raw["recipes"] ?? {}
    if (!isTable(recipes)) return yield* invalid(file, "must be a table", "recipes")
    const entries = new Map<string, LockEntry>()
    for (const [name, value] of Object.entries(recipes)) {
      const path = `recipes.${name}`
      if (!RECIPE_NAME.test(name))
        return yield* invalid(file, "recipe names use lower-case letters, digits and '-'", path)
      if (!isTable(value)) return yield* invalid(file, "must be a table", path)
      for (const key of Object.keys(value))
        if (!["source", "ref", "commit", "added"].includes(key))
          return yield* invalid(file, "is not a lock entry key", `${path}.${key}`)
      const source = yield* stringField(file, value, "source", path, true)
      const sourceIssue = sourceProblem(source)
      if (sourceIssue) return yield* invalid(file, sourceIssue, `${path}.source`)
      const ref = yield* stringField(file, value, "ref", path, true)
      const commit = yield* stringField(file, value, "commit", path, true)
      if (!COMMIT.test(commit)) return yield* invalid(file, "must be a full 40-hex commit", `${path}.commit`)
      const added =
        value["added"] instanceof Date
          ? (value["added"] as Date).toISOString()
          : yield* stringField(file, value, "added", path, true)
      if (!RFC3339.test(added)) return yield* invalid(file, "must be an RFC 3339 time", `${path}.added`)
      entries.set(name, { source, ref, commit, added })
    }
    return entries
  })

export const renderLock = (entries: LockEntries): string => {
  const blocks = [...entries]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(
      ([name, e]) =>
        `[recipes.${name}]\nsource = ${JSON.stringify(e.source)}\nref = ${JSON.stringify(e.ref)}\ncommit = ${JSON.stringify(e.commit)}\nadded = ${JSON.stringify(e.added)}\n`
    )
  return `${LOCK_HEADER}\nschema = ${LOCK_SCHEMA}\n${blocks.map((block) => `\n${block}`).join("")}`
}

/** The pins of one lock file; a missing file pins nothing. */
export const readLock = (file: string): Effect.Effect<Map<string, LockEntry>, InvalidSpec | fs.FsError> =>
  Effect.flatMap(fs.readFileStringIfExists(file), (text) =>
    Option.isNone(text) ? Effect.succeed(new Map<string, LockEntry>()) : parseLock(file, text.value)
  )

export const writeLock = (file: string, entries: LockEntries) => fs.writeFileAtomic(file, renderLock(entries))

// ---------------------------------------------------------------------------------------- index.toml

export interface IndexRecipe {
  readonly name: string
  readonly source: string
  readonly description: string
  readonly os: ReadonlyArray<string>
}

/** Keys this stoat does not know inside an entry are ignored, so an index can grow without breaking older clients. */
export const parseIndex = (file: string, text: string): Effect.Effect<ReadonlyArray<IndexRecipe>, InvalidSpec> =>
  Effect.gen(function* () {
    const raw = yield* parseToml(file, text)
    yield* schemaOf(file, raw, INDEX_SCHEMA, "index.toml")
    const recipes = raw["recipes"] ?? {}
    if (!isTable(recipes)) return yield* invalid(file, "must be a table", "recipes")
    const entries: IndexRecipe[] = []
    for (const [name, value] of Object.entries(recipes)) {
      const path = `recipes.${name}`
      if (!RECIPE_NAME.test(name))
        return yield* invalid(file, "recipe names use lower-case letters, digits and '-'", path)
      if (!isTable(value)) return yield* invalid(file, "must be a table", path)
      const source = yield* stringField(file, value, "source", path, true)
      const sourceIssue = sourceProblem(source)
      if (sourceIssue) return yield* invalid(file, sourceIssue, `${path}.source`)
      const description = yield* stringField(file, value, "description", path, false)
      const os = value["os"] ?? []
      if (!Array.isArray(os) || os.some((item) => typeof item !== "string"))
        return yield* invalid(file, "must be a list of strings", `${path}.os`)
      entries.push({ name, source, description, os: os as string[] })
    }
    return entries.sort((a, b) => a.name.localeCompare(b.name))
  })

// ---------------------------------------------------------------------------------------- stoat.toml [recipes]

/** One `[recipes]` declaration: an index name with a ref, or a Git source with a ref ("" = the default branch). */
export interface Declaration {
  readonly name: string
  readonly source?: string
  readonly ref: string
}

export const projectFile = (projectDir: string) => join(projectDir, "stoat.toml")

/** The `[recipes]` table of a project's stoat.toml; none when there is no stoat.toml. */
export const readDeclarations = (
  projectDir: string
): Effect.Effect<Option.Option<ReadonlyArray<Declaration>>, InvalidSpec | fs.FsError> =>
  Effect.gen(function* () {
    const file = projectFile(projectDir)
    const text = yield* fs.readFileStringIfExists(file)
    if (Option.isNone(text)) return Option.none()
    return Option.some(yield* declarationsOf(file, yield* parseToml(file, text.value)))
  })

const declarationsOf = (file: string, raw: Record<string, unknown>) =>
  Effect.gen(function* () {
    const table = raw["recipes"] ?? {}
    if (!isTable(table)) return yield* invalid(file, "must be a table of recipe declarations", "recipes")
    const declarations: Declaration[] = []
    for (const [name, value] of Object.entries(table)) {
      const path = `recipes.${name}`
      if (!RECIPE_NAME.test(name))
        return yield* invalid(file, "recipe names use lower-case letters, digits and '-'", path)
      if (typeof value === "string") {
        const issue = value === "" ? undefined : refProblem(value)
        if (issue) return yield* invalid(file, `ref ${issue}`, path)
        declarations.push({ name, ref: value })
        continue
      }
      if (!isTable(value))
        return yield* invalid(file, 'must be a ref string or { source = "<git url>", ref = "main" }', path)
      for (const key of Object.keys(value))
        if (key !== "source" && key !== "ref")
          return yield* invalid(file, "is not a declaration key (source, ref)", `${path}.${key}`)
      const source = yield* stringField(file, value, "source", path, true)
      const sourceIssue = sourceProblem(source)
      if (sourceIssue) return yield* invalid(file, sourceIssue, `${path}.source`)
      const ref = yield* stringField(file, value, "ref", path, false)
      const refIssue = ref === "" ? undefined : refProblem(ref)
      if (refIssue) return yield* invalid(file, `ref ${refIssue}`, `${path}.ref`)
      declarations.push({ name, source, ref })
    }
    return declarations
  })

const TABLE_HEADER = /^\s*\[\s*recipes\s*\]\s*(#.*)?$/
const ANY_HEADER = /^\s*\[/
const keyLine = (name: string) => new RegExp(`^\\s*(?:${name}|"${name}"|'${name}')\\s*=`)

const renderDeclaration = (declaration: Declaration) =>
  declaration.source === undefined
    ? `${declaration.name} = ${JSON.stringify(declaration.ref)}`
    : `${declaration.name} = { source = ${JSON.stringify(declaration.source)}, ref = ${JSON.stringify(declaration.ref)} }`

/**
 * stoat.toml with one declaration set (`declaration`) or removed (a name), every other line
 * untouched. The result is parsed again and must say exactly that, else nothing is written.
 */
export const editDeclarations = (
  file: string,
  text: string,
  change: Declaration | { readonly remove: string }
): Effect.Effect<string, InvalidSpec> =>
  Effect.gen(function* () {
    const name = "remove" in change ? change.remove : change.name
    const lines = text.split("\n")
    const header = lines.findIndex((line) => TABLE_HEADER.test(line))
    let end = lines.length
    if (header >= 0)
      for (let i = header + 1; i < lines.length; i++)
        if (ANY_HEADER.test(lines[i]!)) {
          end = i
          break
        }
    const at = header < 0 ? -1 : lines.findIndex((line, i) => i > header && i < end && keyLine(name).test(line))
    if ("remove" in change) {
      if (at >= 0) lines.splice(at, 1)
    } else if (at >= 0) lines[at] = renderDeclaration(change)
    else if (header >= 0) {
      let last = end - 1
      while (last > header && lines[last]!.trim() === "") last--
      lines.splice(last + 1, 0, renderDeclaration(change))
    } else {
      while (lines.length > 0 && lines.at(-1)!.trim() === "") lines.pop()
      lines.push("", "[recipes]", renderDeclaration(change), "")
    }
    const edited = lines.join("\n")
    const after = yield* declarationsOf(file, yield* parseToml(file, edited))
    const found = after.find((declaration) => declaration.name === name)
    const wanted =
      "remove" in change
        ? found === undefined
        : found !== undefined && found.ref === change.ref && found.source === change.source
    if (!wanted)
      return yield* invalid(
        file,
        `recipe "${name}" is declared in a form stoat cannot edit (outside the [recipes] table); edit it by hand`,
        `recipes.${name}`
      )
    return edited
  })
