/**
 * `stoat.toml` (reference §3.3): schemas 1 and 2, decoded into a project whose declarations are
 * fully resolved (names, image paths, real share paths). Every failure is a typed error whose
 * message names the file and the key; decoding never writes anything.
 */
import { existsSync } from "node:fs"
import { realpath } from "node:fs/promises"
import { basename, isAbsolute, join, resolve, sep } from "node:path"
import { Effect, Either, Option, ParseResult, Schema } from "effect"
import { parse } from "smol-toml"
import { InvalidSpec, ShareInvalid, type StoatError } from "../errors.js"
import type { Limits } from "../vm/limits.js"
import { validateVmName } from "../vm/names.js"
import * as fs from "../platform/fs.js"
import { RECIPE_NAME } from "../platform/names.js"
import { DiskSizeInput, LIBVIRT_URI } from "../vm/config.js"
import { AccessLevel } from "../context/access-policy.js"
import { Cpus, RamMb } from "../vm/limits.js"

export const PROJECT_FILE = "stoat.toml"

/** Whether folder `dir` still has its stoat.toml: a VM of a project whose file has gone is flagged, and still usable by name. */
export const hasProjectFile = (dir: string): boolean => existsSync(join(dir, PROJECT_FILE))
/** The newest stoat.toml schema this build reads. */
export const PROJECT_SCHEMA = 2
/** Declaration keys: what `[vms.<key>]` may be called. */
export const DECLARATION_KEY = /^[a-z0-9][a-z0-9-]*$/
/** A stoat.toml is a hand-written file of a few kilobytes; anything this large is a mistake. */
const MAX_FILE_BYTES = 1024 * 1024

const PositiveInt = Schema.Int.pipe(Schema.greaterThanOrEqualTo(1))
const ParamValue = Schema.Union(Schema.String, Schema.Number, Schema.Boolean)

const VmDeclaration = Schema.Struct({
  image: Schema.String.pipe(Schema.minLength(1)),
  name: Schema.optional(Schema.String),
  cpus: Schema.optional(Cpus),
  ram: Schema.optional(RamMb),
  disk: Schema.optional(DiskSizeInput),
  recipes: Schema.optional(Schema.Array(Schema.String.pipe(Schema.pattern(RECIPE_NAME)))),
  shares: Schema.optional(Schema.Array(Schema.String.pipe(Schema.minLength(1)))),
  agent_access: Schema.optional(AccessLevel),
  provider: Schema.optional(Schema.Literal("qemu", "gce", "libvirt")),
  /** For provider libvirt: the host's libvirt URI (default qemu:///system). */
  host: Schema.optional(Schema.String.pipe(Schema.pattern(LIBVIRT_URI))),
  params: Schema.optional(
    Schema.Record({ key: Schema.String, value: Schema.Record({ key: Schema.String, value: ParamValue }) })
  )
})

/** `[recipes]` belongs to the remote-recipe work: read loosely here, never acted on. */
const RecipeDeclaration = Schema.Union(
  Schema.String,
  Schema.Struct(
    { source: Schema.String, ref: Schema.optional(Schema.String) },
    Schema.Record({ key: Schema.String, value: Schema.Unknown })
  )
)

const ProjectToml = Schema.Struct({
  schema: Schema.Int,
  project: Schema.optional(Schema.Struct({ name: Schema.optional(Schema.String) })),
  recipes: Schema.optional(Schema.Record({ key: Schema.String, value: RecipeDeclaration })),
  limits: Schema.optional(
    Schema.Struct({ max_vms: Schema.optional(PositiveInt), max_ram_mb: Schema.optional(PositiveInt) })
  ),
  vms: Schema.optional(Schema.Record({ key: Schema.String, value: VmDeclaration }))
})

/** One `[vms.<key>]`, resolved: its VM name, image (catalog id or absolute path) and real share paths. */
export interface Declaration {
  readonly key: string
  readonly name: string
  /** A catalog id, or the absolute path of an image file (declared relative to stoat.toml). */
  readonly image: string
  readonly imageIsPath: boolean
  /** Unset fields are whatever create chose (the image's defaults): they are never drift. */
  readonly cpus?: number
  readonly ram?: number
  readonly disk?: string
  readonly recipes: ReadonlyArray<string>
  /** Real (symlink-resolved) absolute host folders, each inside the project. */
  readonly shares: ReadonlyArray<string>
  readonly agent_access: AccessLevel
  readonly provider: "qemu" | "gce" | "libvirt"
  /** A libvirt VM's host URI; absent for the local default. */
  readonly host?: string
  readonly params: Readonly<Record<string, Readonly<Record<string, string>>>>
}

export interface Project {
  /** The real path of the folder holding stoat.toml. */
  readonly dir: string
  readonly file: string
  readonly name: string
  readonly schema: number
  readonly limits: Limits
  readonly recipes: Readonly<Record<string, typeof RecipeDeclaration.Type>>
  /** In declaration order. */
  readonly vms: ReadonlyArray<Declaration>
}

/** The default project name: the folder's name lower-cased, every other character a '-'. */
export const defaultProjectName = (dir: string): string => {
  const name = basename(dir)
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, "-")
    .replace(/^-+/, "")
  return name === "" ? "project" : name
}

const fail = (file: string, key: string, problem: string) =>
  new InvalidSpec({ message: `${file}: ${key}: ${problem}`, subject: key })

const firstIssue = (file: string, error: ParseResult.ParseError): InvalidSpec => {
  const issue = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
  const key = issue ? issue.path.map(String).join(".") : ""
  const message = (issue?.message ?? "invalid")
    .replace(/^Expected (.*), actual (.*)$/s, "must be $1, got $2")
    .replace(/^is unexpected$/, "unknown key")
  return key === "" ? new InvalidSpec({ message: `${file}: ${message}`, subject: file }) : fail(file, key, message)
}

/**
 * The keys of `[vms]` in the order the file declares them: JS objects put integer-like keys
 * ("1", "2") first, so the text decides, with the parsed order for anything not found in it.
 */
const declarationOrder = (text: string, keys: ReadonlyArray<string>): ReadonlyArray<string> => {
  const position = (key: string) => {
    const escaped = key.replace(/[.*+?^${}()|[\]\\-]/g, "\\$&")
    const found = new RegExp(`^\\s*\\[\\s*vms\\s*\\.\\s*(?:"${escaped}"|'${escaped}'|${escaped})\\s*[\\].]`, "m").exec(
      text
    )
    return found ? found.index : Number.MAX_SAFE_INTEGER
  }
  return keys
    .map((key, index) => ({ key, index, at: position(key) }))
    .sort((a, b) => a.at - b.at || a.index - b.index)
    .map((entry) => entry.key)
}

const isInside = (dir: string, path: string) => path === dir || path.startsWith(dir.endsWith(sep) ? dir : dir + sep)

/** A share resolved to its real path; outside the project (symlinks followed) it is refused. */
const resolveShare = (project: { dir: string; file: string }, key: string, share: string) =>
  Effect.gen(function* () {
    const at = `${key}.shares`
    if (share.includes("\0"))
      return yield* new ShareInvalid({ message: `${project.file}: ${at}: a share path contains NUL`, subject: at })
    const joined = isAbsolute(share) ? share : resolve(project.dir, share)
    const real = yield* Effect.tryPromise({
      try: () => realpath(joined),
      catch: () => new ShareInvalid({ message: `${project.file}: ${at}: "${share}" does not exist`, subject: at })
    })
    if (!isInside(project.dir, real)) {
      return yield* new ShareInvalid({
        message: `${project.file}: ${at}: "${share}" is outside the project (${real}); shares must stay inside ${project.dir}`,
        subject: at
      })
    }
    const info = yield* fs.statIfExists(real)
    if (Option.isNone(info) || !info.value.isDirectory()) {
      return yield* new ShareInvalid({ message: `${project.file}: ${at}: "${share}" is not a folder`, subject: at })
    }
    return real
  })

const stringParams = (params: Record<string, Record<string, string | number | boolean>> | undefined) =>
  Object.fromEntries(
    Object.entries(params ?? {}).map(([recipe, table]) => [
      recipe,
      Object.fromEntries(Object.entries(table).map(([k, v]) => [k, String(v)]))
    ])
  )

/**
 * Decodes stoat.toml text of the project folder `dir` (already a real path). Reads only what
 * share and image paths need; writes nothing.
 */
export const decodeProject = (dir: string, text: string): Effect.Effect<Project, StoatError> =>
  Effect.gen(function* () {
    const file = join(dir, PROJECT_FILE)
    const raw = yield* Effect.try({
      try: () => parse(text) as Record<string, unknown>,
      catch: (error) =>
        new InvalidSpec({ message: `${file}: ${(error as Error).message.split("\n")[0]}`, subject: file })
    })
    const schema = raw["schema"]
    if (schema === undefined) return yield* fail(file, "schema", "is required (schema = 1 or 2)")
    if (typeof schema === "number" && Number.isInteger(schema) && schema > PROJECT_SCHEMA) {
      return yield* fail(file, "schema", `schema ${schema} is newer than this stoat (${PROJECT_SCHEMA})`)
    }
    if (schema !== 1 && schema !== 2)
      return yield* fail(file, "schema", `must be 1 or 2, got ${JSON.stringify(schema)}`)
    const decoded = Schema.decodeUnknownEither(ProjectToml, { onExcessProperty: "error", errors: "first" })(raw)
    if (Either.isLeft(decoded)) return yield* firstIssue(file, decoded.left)
    const toml = decoded.right
    const name = toml.project?.name ?? defaultProjectName(dir)
    if (!DECLARATION_KEY.test(name))
      return yield* fail(file, "project.name", `"${name}" must use lower-case letters, digits and '-'`)
    const declared = toml.vms ?? {}
    const vms: Declaration[] = []
    const names = new Map<string, string>()
    for (const key of declarationOrder(text, Object.keys(declared))) {
      const at = `vms.${key}`
      if (!DECLARATION_KEY.test(key))
        return yield* fail(
          file,
          at,
          `declaration keys use lower-case letters, digits and '-', starting with a letter or digit`
        )
      const vm = declared[key]!
      if (vm.provider !== undefined && schema === 1)
        return yield* fail(file, `${at}.provider`, "provider needs schema = 2")
      if (vm.host !== undefined && vm.provider !== "libvirt")
        return yield* fail(file, `${at}.host`, 'a host is a libvirt URI: it needs provider = "libvirt"')
      const vmName = vm.name ?? `${name}-${key}`
      const invalid = validateVmName(vmName)
      if (invalid) return yield* fail(file, `${at}.name`, invalid.message)
      const clash = names.get(vmName)
      if (clash !== undefined)
        return yield* fail(file, `${at}.name`, `VM name "${vmName}" is also declared by vms.${clash}`)
      names.set(vmName, key)
      // A catalog id is a bare word; anything with a slash, or a file beside stoat.toml, is an image path.
      const asPath = resolve(dir, vm.image)
      const imageIsPath =
        vm.image.includes("/") ||
        (yield* Effect.orElseSucceed(fs.statIfExists(asPath), () => Option.none())).pipe(Option.isSome)
      if (!imageIsPath && !/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(vm.image))
        return yield* fail(file, `${at}.image`, `"${vm.image}" is neither a catalog id nor a path`)
      const shares: string[] = []
      for (const share of vm.shares ?? []) shares.push(yield* resolveShare({ dir, file }, at, share))
      vms.push({
        key,
        name: vmName,
        image: imageIsPath ? asPath : vm.image,
        imageIsPath,
        ...(vm.cpus !== undefined ? { cpus: vm.cpus } : {}),
        ...(vm.ram !== undefined ? { ram: vm.ram } : {}),
        ...(vm.disk !== undefined ? { disk: vm.disk } : {}),
        recipes: vm.recipes ?? [],
        shares,
        agent_access: vm.agent_access ?? "manage",
        provider: vm.provider ?? "qemu",
        ...(vm.host !== undefined ? { host: vm.host } : {}),
        params: stringParams(vm.params)
      })
    }
    const limits = toml.limits ?? {}
    return {
      dir,
      file,
      name,
      schema,
      limits: {
        ...(limits.max_vms !== undefined ? { max_vms: limits.max_vms } : {}),
        ...(limits.max_ram_mb !== undefined ? { max_ram_mb: limits.max_ram_mb } : {})
      },
      recipes: toml.recipes ?? {},
      vms
    } satisfies Project
  })

/**
 * The project of folder `dir`: none when it holds no stoat.toml (no walk-up to parents). A
 * stoat.toml that is not a regular file, or is huge, is refused before it is read.
 */
/**
 * `loadProject` for a folder asked on every call (a frontend's project scope): the file is read
 * and decoded again only when its stat changes, so a call that names a VM costs one stat.
 */
export const projectOf = (dir: string): Effect.Effect<Option.Option<Project>, StoatError> => {
  const file = join(dir, PROJECT_FILE)
  let last: { readonly stamp: string; readonly project: Option.Option<Project> } | undefined
  return Effect.gen(function* () {
    const stamp = Option.match(yield* fs.statIfExists(file), {
      onNone: () => "none",
      onSome: (info) => `${info.ino}:${info.size}:${info.mtimeMs}:${info.ctimeMs}`
    })
    if (last?.stamp === stamp) return last.project
    const project = yield* loadProject(dir)
    last = { stamp, project }
    return project
  })
}

export const loadProject = (dir: string): Effect.Effect<Option.Option<Project>, StoatError> =>
  Effect.gen(function* () {
    const file = join(dir, PROJECT_FILE)
    const info = yield* fs.statIfExists(file)
    if (Option.isNone(info)) return Option.none()
    if (!info.value.isFile())
      return yield* new InvalidSpec({ message: `${file}: is not a regular file`, subject: file })
    if (info.value.size > MAX_FILE_BYTES)
      return yield* new InvalidSpec({
        message: `${file}: larger than ${MAX_FILE_BYTES} bytes; not a stoat.toml`,
        subject: file
      })
    const text = yield* fs.readFileString(file)
    const real = yield* Effect.orElseSucceed(
      Effect.tryPromise(() => realpath(dir)),
      () => resolve(dir)
    )
    return Option.some(yield* decodeProject(real, text))
  })
