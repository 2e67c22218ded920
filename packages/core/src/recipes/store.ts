/**
 * The Recipes service: recipe roots in shadow order, loading and validating recipe folders, the
 * bundled recipes installed into the data root with a manifest of hashes (so hand-edited files
 * survive upgrades), `recipe refresh` and `recipe new`.
 */
import { createHash } from "node:crypto"
import { realpath } from "node:fs/promises"
import { join, relative, sep } from "node:path"
import { Context, Effect, Either, Layer, Option } from "effect"
import type { Guest } from "@stoat/wire"
import { DataRoot } from "../platform/data-root.js"
import { adviseLookup, InvalidSpec, NameTaken, NotFound } from "../errors.js"
import * as fs from "../platform/fs.js"
import type { FsError } from "../platform/fs.js"
import { closest, RECIPE_NAME } from "../platform/names.js"
import { BUNDLED_RECIPES } from "./bundled.js"
import { readLock } from "./remote/files.js"
import { ProjectScope } from "../projects/service.js"
import { parseRecipeToml, type RecipeManifest } from "./manifest.js"

export type RecipeScope = "bundled" | "local" | "global" | "project"

/**
 * One folder of recipe folders. Roots are searched in order and the first that holds a name
 * wins (project cache > global remote > local > bundled); `scopeOf` tells the scope of a name
 * found there (the data root's folder holds bundled, local and global recipes side by side).
 */
export interface RecipeSource {
  readonly path: string
  /** The scope `recipe list` shows for the root itself. */
  readonly scope: RecipeScope
  readonly scopeOf: (name: string) => RecipeScope
  /** Remote recipes: the pin in stoat.lock a name found here was checked out from. */
  readonly pinOf?: (
    name: string
  ) => { readonly source: string; readonly ref: string; readonly commit: string } | undefined
}

export interface LoadedRecipe {
  readonly manifest: RecipeManifest
  readonly dir: string
  readonly scope: RecipeScope
  /** Remote recipes: where it came from and the pinned ref/commit; empty for bundled and local. */
  readonly source: string
  readonly ref: string
  readonly commit: string
}

export interface RefreshedFile {
  readonly path: string
  readonly status: "refreshed" | "backed_up" | "current" | "orphan"
}

export class Recipes extends Context.Tag("stoat/Recipes")<
  Recipes,
  {
    /** The roots in shadow order, for `recipe list`. */
    readonly roots: Effect.Effect<ReadonlyArray<{ readonly path: string; readonly scope: RecipeScope }>, FsError>
    /** Every recipe a root declares (the first root wins a name), sorted by name. */
    readonly list: Effect.Effect<ReadonlyArray<LoadedRecipe>, InvalidSpec | FsError>
    /** One recipe; not_found names the closest declared one. */
    readonly get: (name: string) => Effect.Effect<LoadedRecipe, NotFound | InvalidSpec | FsError>
    /** The script body this guest runs (`[scripts]` by guest name, then alias, else `script`). */
    readonly script: (
      recipe: LoadedRecipe,
      guest: Pick<Guest, "name" | "aliases">
    ) => Effect.Effect<{ readonly path: string; readonly body: string }, InvalidSpec | FsError>
    readonly refresh: (
      names: ReadonlyArray<string>
    ) => Effect.Effect<ReadonlyArray<RefreshedFile>, NotFound | InvalidSpec | FsError>
    /** Scaffolds `<root>/recipes/<name>/` from a sample; returns the folder. */
    readonly scaffold: (
      name: string,
      os: ReadonlyArray<string>
    ) => Effect.Effect<string, NameTaken | InvalidSpec | FsError>
  }
>() {}

const MANIFEST = ".manifest"
const sha256 = (text: string | Uint8Array) => createHash("sha256").update(text).digest("hex")

/** `.manifest`: one `<sha256>  <recipe>/<file>` line per bundled file as Stoat last wrote it. */
const readManifest = (path: string) =>
  Effect.map(fs.readFileStringIfExists(path), (text) => {
    const entries = new Map<string, string>()
    for (const line of Option.getOrElse(text, () => "").split("\n")) {
      const match = /^([0-9a-f]{64}) {2}(.+)$/.exec(line)
      if (match) entries.set(match[2]!, match[1]!)
    }
    return entries
  })

const renderManifest = (entries: ReadonlyMap<string, string>) =>
  [...entries]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([file, hash]) => `${hash}  ${file}\n`)
    .join("")

const bundledFiles = (names?: ReadonlyArray<string>) =>
  Object.entries(BUNDLED_RECIPES)
    .filter(([name]) => names === undefined || names.length === 0 || names.includes(name))
    .flatMap(([name, files]) => Object.entries(files).map(([file, content]) => ({ key: `${name}/${file}`, content })))

/**
 * Writes missing bundled files and upgrades those still as Stoat wrote them; a file whose hash
 * differs from the manifest was edited by hand and is left alone. Recipes in `skip` (a global
 * remote recipe that shadows a bundled name in the same folder) are not touched, so their
 * checkout stays clean.
 */
export const installBundled = (dir: string, skip: ReadonlySet<string> = new Set()) =>
  Effect.gen(function* () {
    yield* fs.makeDirectory(dir)
    const manifestPath = join(dir, MANIFEST)
    const manifest = yield* readManifest(manifestPath)
    const before = renderManifest(manifest)
    for (const { key, content } of bundledFiles()) {
      if (skip.has(key.split("/")[0]!)) continue
      const path = join(dir, key)
      const onDisk = yield* fs.readFileStringIfExists(path)
      const wanted = sha256(content)
      if (Option.isNone(onDisk)) {
        yield* fs.writeFileAtomic(path, content, key.endsWith(".sh") ? 0o755 : 0o644)
        manifest.set(key, wanted)
        continue
      }
      const current = sha256(onDisk.value)
      if (current === wanted) manifest.set(key, wanted)
      else if (manifest.get(key) === current) {
        yield* fs.writeFileAtomic(path, content, key.endsWith(".sh") ? 0o755 : 0o644)
        manifest.set(key, wanted)
      }
    }
    const after = renderManifest(manifest)
    if (after !== before) yield* fs.writeFileAtomic(manifestPath, after)
    return manifest
  })

/** `recipe refresh`: every bundled file rewritten from the embedded copy; a hand-edited one is kept as `.bak` first. */
export const refreshBundled = (dir: string, names: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    for (const name of names) {
      if (!(name in BUNDLED_RECIPES)) {
        const hint = closest(name, Object.keys(BUNDLED_RECIPES))
        return yield* new NotFound({
          message: `"${name}" is not a bundled recipe${hint ? ` (did you mean "${hint}"?)` : ""}`,
          subject: name
        })
      }
    }
    yield* fs.makeDirectory(dir)
    const manifestPath = join(dir, MANIFEST)
    const manifest = yield* readManifest(manifestPath)
    const files: RefreshedFile[] = []
    const shipped = new Set<string>()
    for (const { key, content } of bundledFiles(names)) {
      shipped.add(key)
      const path = join(dir, key)
      const onDisk = yield* fs.readFileStringIfExists(path)
      const wanted = sha256(content)
      const current = Option.map(onDisk, sha256)
      if (Option.isSome(current) && current.value === wanted) {
        files.push({ path, status: "current" })
      } else {
        const edited = Option.isSome(current) && manifest.get(key) !== current.value
        if (edited && Option.isSome(onDisk)) yield* fs.writeFileAtomic(`${path}.bak`, onDisk.value)
        yield* fs.writeFileAtomic(path, content, key.endsWith(".sh") ? 0o755 : 0o644)
        files.push({ path, status: edited ? "backed_up" : "refreshed" })
      }
      manifest.set(key, wanted)
    }
    // Files the manifest remembers that this build no longer ships: reported, never deleted.
    for (const key of [...manifest.keys()]) {
      const recipe = key.split("/")[0]!
      if (shipped.has(key) || (names.length > 0 && !names.includes(recipe))) continue
      if (!(recipe in BUNDLED_RECIPES) || !(key.slice(recipe.length + 1) in BUNDLED_RECIPES[recipe]!)) {
        files.push({ path: join(dir, key), status: "orphan" })
        manifest.delete(key)
      }
    }
    yield* fs.writeFileAtomic(manifestPath, renderManifest(manifest))
    return files
  })

/** The script must be a regular file inside the recipe folder, symlinks resolved. */
const checkScript = (file: string, dir: string, key: string, script: string) =>
  Effect.gen(function* () {
    const path = join(dir, script)
    const bad = (why: string) =>
      new InvalidSpec({ message: `${file}: ${key}: ${script} ${why}`, subject: `${file}:${key}` })
    const info = yield* fs.statIfExists(path)
    if (Option.isNone(info)) return yield* bad("does not exist")
    if (!info.value.isFile()) return yield* bad("is not a regular file")
    const [real, realDir] = yield* Effect.promise(() =>
      Promise.all([realpath(path).catch(() => path), realpath(dir).catch(() => dir)])
    )
    const inside = relative(realDir, real)
    if (inside.startsWith(`..${sep}`) || inside === "..") return yield* bad("leads outside the recipe folder")
    return path
  })

/** Loads one recipe folder: recipe.toml parsed and validated, every script present. */
export const loadRecipeDir = (dir: string, name: string) =>
  Effect.gen(function* () {
    const file = join(dir, "recipe.toml")
    const text = yield* fs.readFileString(file)
    const parsed = parseRecipeToml(file, name, text)
    if (Either.isLeft(parsed)) return yield* parsed.left
    const manifest = parsed.right
    yield* checkScript(file, dir, "script", manifest.script)
    for (const [os, script] of Object.entries(manifest.scripts)) yield* checkScript(file, dir, `scripts.${os}`, script)
    return manifest
  })

const isRecipeFolder = (path: string) => Effect.map(fs.exists(join(path, "recipe.toml")), (found) => found)

export const makeRecipes = (
  sources: Effect.Effect<ReadonlyArray<RecipeSource>, FsError>,
  dataRecipes: string
): Context.Tag.Service<Recipes> => {
  const load = (source: RecipeSource, name: string): Effect.Effect<LoadedRecipe, InvalidSpec | FsError> =>
    Effect.map(loadRecipeDir(join(source.path, name), name), (manifest) => {
      const pin = source.pinOf?.(name)
      return {
        manifest,
        dir: join(source.path, name),
        scope: source.scopeOf(name),
        source: pin?.source ?? "",
        ref: pin?.ref ?? "",
        commit: pin?.commit ?? ""
      }
    })

  const names = (source: RecipeSource) =>
    Effect.gen(function* () {
      const entries = yield* fs.listDirectory(source.path)
      const found: string[] = []
      for (const entry of entries)
        if (RECIPE_NAME.test(entry) && (yield* isRecipeFolder(join(source.path, entry)))) found.push(entry)
      return found
    })

  const list = Effect.gen(function* () {
    const seen = new Map<string, LoadedRecipe>()
    for (const source of yield* sources) {
      for (const name of yield* names(source)) if (!seen.has(name)) seen.set(name, yield* load(source, name))
    }
    return [...seen.values()].sort((a, b) => a.manifest.name.localeCompare(b.manifest.name))
  })

  return {
    roots: Effect.map(sources, (all) => all.map((source) => ({ path: source.path, scope: source.scope }))),
    list,
    get: (name) =>
      Effect.gen(function* () {
        const all = yield* sources
        if (RECIPE_NAME.test(name)) {
          for (const source of all) if (yield* isRecipeFolder(join(source.path, name))) return yield* load(source, name)
        }
        const known: string[] = []
        for (const source of all) known.push(...(yield* names(source)))
        const hint = closest(name, known)
        return yield* new NotFound({
          message: `no recipe root declares recipe "${name}"${hint ? ` (did you mean "${hint}"?)` : ""}`,
          subject: name,
          hint: adviseLookup("recipe.catalog")
        })
      }),
    script: (recipe, guest) => {
      const key = [guest.name, ...guest.aliases].find((os) => recipe.manifest.scripts[os] !== undefined)
      const script = key === undefined ? recipe.manifest.script : recipe.manifest.scripts[key]!
      const path = join(recipe.dir, script)
      return Effect.map(fs.readFileString(path), (body) => ({ path, body }))
    },
    refresh: (wanted) => refreshBundled(dataRecipes, wanted),
    scaffold: (name, os) =>
      Effect.gen(function* () {
        if (!RECIPE_NAME.test(name))
          return yield* new InvalidSpec({
            message: `recipe names use lower-case letters, digits and '-', got ${JSON.stringify(name)}`,
            subject: name
          })
        for (const source of yield* sources) {
          if ((yield* fs.exists(join(source.path, name))) || name in BUNDLED_RECIPES) {
            return yield* new NameTaken({ message: `recipe "${name}" already exists`, subject: name })
          }
        }
        const dir = join(dataRecipes, name)
        const osLine = os.length > 0 ? `os = [${os.map((o) => JSON.stringify(o)).join(", ")}]\n` : ""
        yield* fs.makeDirectory(dir)
        yield* fs.writeFileAtomic(join(dir, "recipe.toml"), sampleManifest(name, osLine))
        yield* fs.writeFileAtomic(join(dir, "install.sh"), SAMPLE_SCRIPT, 0o755)
        return dir
      })
  }
}

const sampleManifest = (name: string, osLine: string) => `schema = 3
name = "${name}"
description = "What ${name} sets up"
version = "1"
${osLine}# run = "once"        # once (default) | always | manual
# depends = []          # recipes that must be applied first
script = "install.sh"

[params.greeting]
type = "string"
default = "hello"
help = "reaches the script as STOAT_PARAM_GREETING"

[outputs]
greeting = "what the script wrote to $STOAT_OUTPUT"

[health]
check = "true"
timeout = "30s"
`

const SAMPLE_SCRIPT = `set -e
# The prelude gives stoat_pkg_setup, stoat_pkg_install, stoat_svc_*, stoat_download, stoat_useradd.
echo "$STOAT_PARAM_GREETING from $STOAT_RECIPE on $STOAT_OS"
echo "greeting=$STOAT_PARAM_GREETING" >> "$STOAT_OUTPUT"
`

/**
 * The roots in shadow order: the project's checkouts (`./.stoat/recipes`, when a project
 * directory is provided), then the data root's folder, which holds global remote recipes (pinned
 * in `<root>/stoat.lock`), bundled ones (named in `.manifest`, installed on first use) and local
 * ones side by side.
 */
export const RecipesLive = Layer.effect(
  Recipes,
  Effect.gen(function* () {
    const root = yield* DataRoot
    const project = Option.fromNullable((yield* ProjectScope).dir)
    const projectSource = Option.match(project, {
      onNone: () => Effect.succeed<ReadonlyArray<RecipeSource>>([]),
      onSome: (dir) =>
        Effect.map(
          Effect.zip(readLock(join(dir, "stoat.lock")), fs.exists(join(dir, ".stoat", "recipes"))),
          ([pins, present]): ReadonlyArray<RecipeSource> =>
            pins.size === 0 || !present
              ? []
              : [
                  {
                    path: join(dir, ".stoat", "recipes"),
                    scope: "project",
                    scopeOf: () => "project",
                    pinOf: (name) => pins.get(name)
                  }
                ]
        )
    })
    // Installing bundled files may fail on a read-only data root; reading still works then.
    const bundled = (pinned: ReadonlySet<string>) =>
      installBundled(root.recipes, pinned).pipe(
        Effect.map((manifest) => new Set([...manifest.keys()].map((key) => key.split("/")[0]!))),
        Effect.catchTag("AccessDenied", () => Effect.succeed(new Set<string>()))
      )
    const sources = Effect.gen(function* () {
      const pins = yield* readLock(join(root.root, "stoat.lock"))
      const names = yield* bundled(new Set(pins.keys()))
      const data: RecipeSource = {
        path: root.recipes,
        scope: "local",
        scopeOf: (name) => (pins.has(name) ? "global" : names.has(name) ? "bundled" : "local"),
        pinOf: (name) => pins.get(name)
      }
      return [...(yield* projectSource), data]
    })
    return makeRecipes(sources, root.recipes)
  })
)
