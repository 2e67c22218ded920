/**
 * Remote recipes (reference §7): the curated index (a cached clone refreshed after 24 h), and
 * recipes from Git sources pinned to 40-hex commits in `stoat.lock`, checked out as Git
 * working trees in `<root>/recipes/` (global scope) or `./.stoat/recipes/` (project scope, with
 * the declarations in stoat.toml's `[recipes]`).
 */
import { randomBytes } from "node:crypto"
import { readdir, readlink, rename } from "node:fs/promises"
import { dirname, join, relative, resolve, sep } from "node:path"
import { Clock, Config, Context, Effect, Layer, Option } from "effect"
import { DataRoot } from "../../platform/data-root.js"
import {
  advise,
  adviseLookup,
  DownloadFailed,
  GitRequired,
  InUse,
  InvalidSpec,
  LockOutOfDate,
  NameTaken,
  NotFound,
  Timeout,
  Usage
} from "../../errors.js"
import { Locks } from "../../platform/locks.js"
import { closest, RECIPE_NAME } from "../../platform/names.js"
import * as fs from "../../platform/fs.js"
import { VmStore } from "../../vm/store.js"
import { BUNDLED_RECIPES } from "../bundled.js"
import { loadRecipeDir } from "../store.js"
import {
  type Declaration,
  editDeclarations,
  type IndexRecipe,
  type LockEntry,
  parseIndex,
  projectFile,
  readDeclarations,
  readLock,
  refProblem,
  sourceProblem,
  writeLock
} from "./files.js"
import { Git, type GitFailed } from "./git.js"
import { ProjectScope } from "../../projects/service.js"

export type RemoteScope = "global" | "project"

export interface PinnedRecipe {
  readonly name: string
  readonly source: string
  readonly ref: string
  readonly commit: string
  readonly scope: RemoteScope
}

export interface AddRequest {
  /** An index name, optionally `name@ref`. */
  readonly name?: string
  /** A Git URL or path instead of an index name (CLI only). */
  readonly source?: string
  readonly ref?: string
  readonly global: boolean
  readonly force: boolean
  /** Resolve and validate only; write nothing (the CLI's preview before confirming a URL). */
  readonly preview?: boolean
}

type RemoteError =
  | NotFound
  | DownloadFailed
  | InvalidSpec
  | NameTaken
  | InUse
  | LockOutOfDate
  | GitRequired
  | Timeout
  | Usage
  | fs.FsError

/** git's words for a source that answered and has no such repository. */
const MISSING_SOURCE = /repository not found|does not exist|not a git repository|returned error: 40[34]/i
/** git's words for a network it could not use: names, connections, TLS, proxies. */
const NETWORK_FAILURE =
  /could not resolve|unable to access|failed to connect|connection (?:refused|timed out|reset)|network is unreachable|timed out|early eof|ssl|tls|proxy/i

/**
 * A clone that failed: not_found when the source answered that it has no such repository,
 * download_failed when the network failed (worth a retry, not a different name).
 */
const cloneFailed = (what: string, source: string, failure: GitFailed, hint = ""): NotFound | DownloadFailed => {
  const detail = failure.stderr || "git clone failed"
  return !MISSING_SOURCE.test(detail) && NETWORK_FAILURE.test(detail)
    ? new DownloadFailed({
        message: `cannot fetch ${what}: the network failed (${detail}); try again`,
        subject: source
      })
    : new NotFound({ message: `cannot fetch ${what}: ${detail}${hint}`, subject: source })
}

export class RemoteRecipes extends Context.Tag("stoat/RemoteRecipes")<
  RemoteRecipes,
  {
    /** Index entries whose name or description holds every term. */
    readonly search: (
      terms: ReadonlyArray<string>,
      refresh: boolean
    ) => Effect.Effect<ReadonlyArray<IndexRecipe>, RemoteError>
    readonly add: (request: AddRequest) => Effect.Effect<PinnedRecipe, RemoteError>
    /** Project: declarations resolved to commits (kept when unchanged), undeclared pins dropped; the cache is not touched. */
    readonly lock: (global: boolean) => Effect.Effect<ReadonlyArray<PinnedRecipe>, RemoteError>
    /** Checkouts made to match the lock (missing or stale clean ones placed, extra project ones removed). */
    readonly sync: (global: boolean) => Effect.Effect<ReadonlyArray<PinnedRecipe>, RemoteError>
    /** Stored refs resolved again and the checkouts moved to the new commits. */
    readonly update: (
      names: ReadonlyArray<string>,
      global: boolean
    ) => Effect.Effect<ReadonlyArray<PinnedRecipe>, RemoteError>
    readonly remove: (
      name: string,
      options: { readonly global: boolean; readonly force: boolean }
    ) => Effect.Effect<{ readonly name: string; readonly scope: RemoteScope }, RemoteError>
    /**
     * Apply step 2 for the named recipes of the working directory's project: declaration, lock and
     * checkout must agree; a missing or stale clean checkout is placed from the lock.
     */
    readonly ensureProject: (names: ReadonlyArray<string>) => Effect.Effect<void, RemoteError>
  }
>() {}

export const DEFAULT_INDEX = "https://github.com/NovusEdge/stoat.git"
const INDEX_MAX_AGE_MS = 24 * 60 * 60 * 1000
const INDEX_MARKER = "stoat-index.json"

interface ScopePaths {
  readonly kind: RemoteScope
  readonly lockFile: string
  readonly cacheDir: string
  /** Project scope: the project folder and its declarations. */
  readonly project?: { readonly dir: string; readonly declarations: ReadonlyArray<Declaration> }
}

const nowRfc3339 = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z"))
const stageName = (prefix: string) => `${prefix}${randomBytes(6).toString("hex")}`
const inside = (root: string, path: string) => {
  const rel = relative(root, path)
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !rel.startsWith(sep))
}

/** Every symlink of a checkout must point inside it (the .git folder aside). */
const symlinkEscape = (root: string): Effect.Effect<string | undefined, fs.FsError> =>
  fs.attempt("inspect", root, async () => {
    const walk = async (dir: string): Promise<string | undefined> => {
      for (const entry of await readdir(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name)
        if (dir === root && entry.name === ".git") continue
        if (entry.isSymbolicLink()) {
          if (!inside(root, resolve(dirname(path), await readlink(path)))) return relative(root, path)
        } else if (entry.isDirectory()) {
          const found = await walk(path)
          if (found !== undefined) return found
        }
      }
      return undefined
    }
    return walk(root)
  })

export interface RemoteRecipesOptions {
  /** The index (a Git URL or path, or a plain folder holding index.toml); default `STOAT_INDEX`, else Stoat's own repository. */
  readonly index?: string
}

export const makeRemoteRecipes = (indexSpec: string) =>
  Effect.gen(function* () {
    const root = yield* DataRoot
    const git = yield* Git
    const locks = yield* Locks
    const vms = yield* VmStore
    const projectDir = Option.fromNullable((yield* ProjectScope).dir)

    const gitIn = (dir: string | undefined, args: ReadonlyArray<string>) =>
      git.run(args, dir === undefined ? {} : { cwd: dir })
    const ok = (dir: string, args: ReadonlyArray<string>) =>
      gitIn(dir, args).pipe(
        Effect.map((out) => Option.some(out.trim())),
        Effect.catchTag("GitFailed", () => Effect.succeed(Option.none<string>()))
      )

    const scopeFor = (global: boolean): Effect.Effect<ScopePaths, InvalidSpec | fs.FsError> =>
      Effect.gen(function* () {
        const globalScope: ScopePaths = {
          kind: "global",
          lockFile: join(root.root, "stoat.lock"),
          cacheDir: root.recipes
        }
        if (global || Option.isNone(projectDir)) return globalScope
        const declarations = yield* readDeclarations(projectDir.value)
        if (Option.isNone(declarations)) return globalScope
        return {
          kind: "project",
          lockFile: join(projectDir.value, "stoat.lock"),
          cacheDir: join(projectDir.value, ".stoat", "recipes"),
          project: { dir: projectDir.value, declarations: declarations.value }
        }
      })

    // ------------------------------------------------------------------ the index

    const indexText = (refresh: boolean) =>
      Effect.gen(function* () {
        const local = yield* fs.statIfExists(indexSpec)
        if (
          Option.isSome(local) &&
          local.value.isDirectory() &&
          !(yield* fs.exists(join(indexSpec, ".git"))) &&
          (yield* fs.exists(join(indexSpec, "index.toml")))
        ) {
          const file = join(indexSpec, "index.toml")
          return { file, text: yield* fs.readFileString(file) }
        }
        const cache = join(root.root, "index")
        const marker = join(cache, ".git", INDEX_MARKER)
        const now = yield* Clock.currentTimeMillis
        const stored = yield* fs.readFileStringIfExists(marker)
        const fresh = Option.match(stored, {
          onNone: () => false,
          onSome: (text) => {
            try {
              const parsed = JSON.parse(text) as { source?: unknown; fetched_ms?: unknown }
              return (
                parsed.source === indexSpec &&
                typeof parsed.fetched_ms === "number" &&
                now - parsed.fetched_ms < INDEX_MAX_AGE_MS &&
                now >= parsed.fetched_ms
              )
            } catch {
              return false
            }
          }
        })
        if (refresh || !fresh) {
          yield* root.ensure
          const stage = join(root.root, stageName(".stoat-index-stage-"))
          yield* Effect.gen(function* () {
            yield* gitIn(undefined, ["clone", "--quiet", "--depth", "1", "--", indexSpec, stage]).pipe(
              Effect.catchTag("GitFailed", (failure) =>
                Effect.fail(cloneFailed(`the recipe index ${indexSpec}`, indexSpec, failure, " (set STOAT_INDEX)"))
              )
            )
            yield* fs.writeFileAtomic(
              join(stage, ".git", INDEX_MARKER),
              JSON.stringify({ source: indexSpec, fetched_ms: now })
            )
            const old = join(root.root, stageName(".stoat-index-old-"))
            if (yield* fs.exists(cache)) yield* fs.attempt("move aside", cache, () => rename(cache, old))
            yield* fs.attempt("install", cache, () => rename(stage, cache))
            yield* fs.remove(old)
          }).pipe(Effect.onError(() => fs.remove(stage).pipe(Effect.ignore)))
        }
        const file = join(cache, "index.toml")
        const text = yield* fs.readFileStringIfExists(file)
        if (Option.isNone(text))
          return yield* new NotFound({
            message: `the recipe index ${indexSpec} has no index.toml at its root`,
            subject: file
          })
        return { file, text: text.value }
      })

    const index = (refresh: boolean) => Effect.flatMap(indexText(refresh), ({ file, text }) => parseIndex(file, text))

    const indexEntry = (name: string) =>
      Effect.gen(function* () {
        const entries = yield* index(false)
        const entry = entries.find((candidate) => candidate.name === name)
        if (entry !== undefined) return entry
        const hint = closest(
          name,
          entries.map((candidate) => candidate.name)
        )
        return yield* new NotFound({
          message: `the recipe index has no recipe "${name}"${hint ? ` (did you mean "${hint}"?)` : ""}`,
          subject: name,
          hint: adviseLookup("recipe.search")
        })
      })

    // ------------------------------------------------------------------ clones and checkouts

    /** The commit a ref names in a fresh clone: a branch, a tag or a commit; "" = the default branch. */
    const resolveIn = (dir: string, source: string, ref: string) =>
      Effect.gen(function* () {
        if (ref === "") {
          const commit = yield* ok(dir, ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])
          const branch = yield* ok(dir, ["symbolic-ref", "--short", "--quiet", "HEAD"])
          if (Option.isSome(commit)) return { commit: commit.value, ref: Option.getOrElse(branch, () => commit.value) }
        } else {
          const candidates = [
            `refs/remotes/origin/${ref}`,
            `refs/tags/${ref}`,
            ...(/^[0-9a-f]{4,40}$/.test(ref) ? [ref] : [])
          ]
          for (const candidate of candidates) {
            const commit = yield* ok(dir, ["rev-parse", "--verify", "--quiet", `${candidate}^{commit}`])
            if (Option.isSome(commit)) return { commit: commit.value, ref }
          }
        }
        return yield* new NotFound({
          message: `${source} has no ${ref === "" ? "default branch" : `branch, tag or commit "${ref}"`}`,
          subject: ref || source
        })
      })

    /** Clones `source` into a new stage folder under `parent` checked out at `ref` (or `commit`); removed again on failure. */
    const stageCheckout = (parent: string, source: string, ref: string, commit?: string) =>
      Effect.gen(function* () {
        yield* fs.makeDirectory(parent)
        const stage = join(parent, stageName(".stage-"))
        return yield* Effect.gen(function* () {
          yield* gitIn(undefined, ["clone", "--quiet", "--no-checkout", "--", source, stage]).pipe(
            Effect.catchTag("GitFailed", (failure) => Effect.fail(cloneFailed(source, source, failure)))
          )
          const resolved = commit === undefined ? yield* resolveIn(stage, source, ref) : { commit, ref }
          if (
            commit !== undefined &&
            Option.isNone(yield* ok(stage, ["rev-parse", "--verify", "--quiet", `${commit}^{commit}`]))
          ) {
            return yield* new NotFound({
              message: `${source} no longer has the pinned commit ${commit}`,
              subject: commit,
              hint: advise("re-pin it", { operation: "recipe.update", input: {} })
            })
          }
          yield* gitIn(stage, ["checkout", "--quiet", "--detach", resolved.commit]).pipe(
            Effect.catchTag(
              "GitFailed",
              (failure) =>
                new InvalidSpec({
                  message: `cannot check out ${resolved.commit} of ${source}: ${failure.stderr}`,
                  subject: source
                })
            )
          )
          return { stage, ...resolved }
        }).pipe(Effect.onError(() => fs.remove(stage).pipe(Effect.ignore)))
      })

    /** A staged recipe must be a valid recipe named `name` whose scripts and symlinks stay inside it. */
    const validate = (stage: string, name: string, source: string) =>
      Effect.gen(function* () {
        yield* loadRecipeDir(stage, name).pipe(
          Effect.mapError((error) =>
            error._tag === "NotFound"
              ? new InvalidSpec({ message: `${source} has no recipe.toml at its root`, subject: source })
              : error
          )
        )
        const escape = yield* symlinkEscape(stage)
        if (escape !== undefined)
          return yield* new InvalidSpec({
            message: `${source}: ${escape} is a symlink leading outside the recipe`,
            subject: `${source}:${escape}`
          })
      })

    /** The manifest's own name, for a recipe added by URL (its lock name). */
    const manifestName = (stage: string, source: string) =>
      Effect.gen(function* () {
        const text = yield* fs.readFileStringIfExists(join(stage, "recipe.toml"))
        const match = Option.map(text, (body) => /^\s*name\s*=\s*"([^"]*)"/m.exec(body)?.[1])
        const name = Option.getOrUndefined(match)
        if (name === undefined || !RECIPE_NAME.test(name))
          return yield* new InvalidSpec({
            message: `${source}: recipe.toml must name the recipe (name = "lower-case-name")`,
            subject: `${source}:name`
          })
        return name
      })

    const resolveOnly = (parent: string, source: string, ref: string) =>
      Effect.flatMap(stageCheckout(parent, source, ref), (staged) => Effect.as(fs.remove(staged.stage), staged))

    const install = (stage: string, dest: string) =>
      Effect.gen(function* () {
        yield* fs.remove(dest)
        yield* fs.attempt("install", dest, () => rename(stage, dest))
      })

    type CheckoutState =
      | { readonly kind: "missing" }
      | { readonly kind: "present"; readonly head: string; readonly dirty: boolean }
    const checkoutState = (dir: string): Effect.Effect<CheckoutState, GitRequired | Timeout | fs.FsError> =>
      Effect.gen(function* () {
        if (!(yield* fs.exists(dir))) return { kind: "missing" }
        const head = yield* ok(dir, ["rev-parse", "--verify", "--quiet", "HEAD"])
        // Not a checkout of its own (no .git, or one that git cannot read): treat as tampered.
        const top = yield* ok(dir, ["rev-parse", "--show-toplevel"])
        if (Option.isNone(head) || Option.isNone(top) || resolve(top.value) !== resolve(dir))
          return { kind: "present", head: "", dirty: true }
        const status = yield* ok(dir, ["status", "--porcelain", "--untracked-files=all"])
        return { kind: "present", head: head.value, dirty: Option.isNone(status) || status.value !== "" }
      })

    const tampered = (name: string, dir: string) =>
      new InvalidSpec({
        message: `the checkout of recipe "${name}" at ${dir} has local changes (tampered); discard them`,
        subject: dir,
        hint: advise(
          "or remove it and add it again",
          { operation: "recipe.remove", input: { name } },
          { operation: "recipe.add", input: { name } }
        )
      })

    /** Makes one checkout match its pin: placed when missing or stale and clean; a dirty one is refused. */
    const ensureCheckout = (scope: ScopePaths, name: string, entry: LockEntry) =>
      Effect.gen(function* () {
        const dir = join(scope.cacheDir, name)
        const state = yield* checkoutState(dir)
        if (state.kind === "present" && state.dirty) return yield* tampered(name, dir)
        if (state.kind === "present" && state.head === entry.commit) return
        const staged = yield* stageCheckout(scope.cacheDir, entry.source, entry.ref, entry.commit)
        yield* validate(staged.stage, name, entry.source).pipe(
          Effect.onError(() => fs.remove(staged.stage).pipe(Effect.ignore))
        )
        yield* install(staged.stage, dir)
      })

    const pinned = (scope: ScopePaths, entries: ReadonlyMap<string, LockEntry>): ReadonlyArray<PinnedRecipe> =>
      [...entries]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([name, entry]) => ({
          name,
          source: entry.source,
          ref: entry.ref,
          commit: entry.commit,
          scope: scope.kind
        }))

    const agrees = (declaration: Declaration, entry: LockEntry | undefined) =>
      entry !== undefined &&
      (declaration.ref === "" || declaration.ref === entry.ref) &&
      (declaration.source === undefined || declaration.source === entry.source)

    const writeProjectFile = (dir: string, change: Declaration | { readonly remove: string }) =>
      Effect.gen(function* () {
        const file = projectFile(dir)
        const text = yield* fs.readFileString(file)
        const edited = yield* editDeclarations(file, text, change)
        return fs.writeFileAtomic(file, edited)
      })

    /** `.stoat/` holds checkouts and secrets: never committed. */
    const ignoreStoatDir = (dir: string) =>
      Effect.gen(function* () {
        const file = join(dir, ".gitignore")
        const text = Option.getOrElse(yield* fs.readFileStringIfExists(file), () => "")
        if (text.split("\n").some((line) => [".stoat", ".stoat/", "/.stoat", "/.stoat/"].includes(line.trim()))) return
        yield* fs.writeFileAtomic(file, `${text}${text === "" || text.endsWith("\n") ? "" : "\n"}.stoat/\n`)
      })

    /** A name already taken by another recipe this scope would shadow or be shadowed by. */
    const collision = (scope: ScopePaths, name: string, lock: ReadonlyMap<string, LockEntry>) =>
      Effect.gen(function* () {
        if (lock.has(name))
          return `recipe "${name}" is already added in ${scope.kind} scope (commit ${lock.get(name)!.commit.slice(0, 7)}); run stoat recipe update, or pass --force to re-pin it`
        if (name in BUNDLED_RECIPES) return `recipe "${name}" is a bundled recipe; pass --force to shadow it`
        const globalPins = yield* readLock(join(root.root, "stoat.lock"))
        if (yield* fs.exists(join(root.recipes, name))) {
          if (scope.kind === "global")
            return `a local recipe "${name}" exists in ${root.recipes}; pass --force to replace it`
          return `recipe "${name}" exists in ${globalPins.has(name) ? "global remote" : "local"} scope; pass --force to shadow it`
        }
        return undefined
      })

    const add = (request: AddRequest) =>
      Effect.gen(function* () {
        let name: string | undefined
        let source: string
        let ref = request.ref ?? ""
        if (request.source !== undefined) {
          const [url, atRef] = splitUrlRef(request.source)
          const issue = sourceProblem(url)
          if (issue) return yield* new InvalidSpec({ message: `source ${issue}`, subject: "source" })
          if (atRef !== undefined) {
            if (request.ref !== undefined)
              return yield* new Usage({ message: "give the ref once: URL@ref or --ref", subject: "ref" })
            ref = atRef
          }
          source = url
        } else {
          const [bare, atRef] = (request.name ?? "").split(/@(.*)/s, 2) as [string, string | undefined]
          if (!RECIPE_NAME.test(bare))
            return yield* new InvalidSpec({
              message: `recipe names use lower-case letters, digits and '-', got ${JSON.stringify(bare)}`,
              subject: bare
            })
          if (atRef !== undefined) {
            if (request.ref !== undefined)
              return yield* new Usage({ message: "give the ref once: name@ref or ref", subject: "ref" })
            ref = atRef
          }
          name = bare
          source = (yield* indexEntry(bare)).source
        }
        const refIssue = ref === "" ? undefined : refProblem(ref)
        if (refIssue)
          return yield* new InvalidSpec({ message: `ref ${JSON.stringify(ref)} ${refIssue}`, subject: "ref" })
        const scope = yield* scopeFor(request.global)
        const lock = yield* readLock(scope.lockFile)
        const refuse = (taken: string | undefined, subject: string) =>
          taken !== undefined && !request.force ? new NameTaken({ message: taken, subject }) : undefined
        if (name !== undefined) {
          const refusal = refuse(yield* collision(scope, name, lock), name)
          if (refusal) return yield* refusal
        }
        const staged = yield* stageCheckout(scope.cacheDir, source, ref)
        return yield* Effect.gen(function* () {
          const lockName = name ?? (yield* manifestName(staged.stage, source))
          if (name === undefined) {
            const refusal = refuse(yield* collision(scope, lockName, lock), lockName)
            if (refusal) return yield* refusal
          }
          yield* validate(staged.stage, lockName, source)
          const result: PinnedRecipe = {
            name: lockName,
            source,
            ref: staged.ref,
            commit: staged.commit,
            scope: scope.kind
          }
          if (request.preview) {
            yield* fs.remove(staged.stage)
            return result
          }
          const entries = new Map(lock)
          entries.set(lockName, { source, ref: staged.ref, commit: staged.commit, added: yield* nowRfc3339 })
          // Everything that can fail on content is checked before the first write.
          const writeToml = scope.project
            ? yield* writeProjectFile(scope.project.dir, {
                name: lockName,
                ref: staged.ref,
                ...(name === undefined ? { source } : {})
              })
            : Effect.void
          // The checkout, the lock and stoat.toml change together: a failed write puts back all three.
          const lockBefore = yield* fs.readFileStringIfExists(scope.lockFile)
          const restoreLock = Option.match(lockBefore, {
            onNone: () => fs.remove(scope.lockFile),
            onSome: (text) => fs.writeFileAtomic(scope.lockFile, text)
          }).pipe(Effect.ignore)
          yield* fs.replaceDirectoryThen(
            staged.stage,
            join(scope.cacheDir, lockName),
            Effect.zipRight(writeLock(scope.lockFile, entries), writeToml).pipe(Effect.tapError(() => restoreLock))
          )
          if (scope.project) yield* ignoreStoatDir(scope.project.dir)
          return result
        }).pipe(Effect.onError(() => fs.remove(staged.stage).pipe(Effect.ignore)))
      })

    const lock = (global: boolean) =>
      Effect.gen(function* () {
        const scope = yield* scopeFor(global)
        const current = yield* readLock(scope.lockFile)
        if (!scope.project) return pinned(scope, current)
        const next = new Map<string, LockEntry>()
        for (const declaration of scope.project.declarations) {
          const existing = current.get(declaration.name)
          if (agrees(declaration, existing)) {
            next.set(declaration.name, existing!)
            continue
          }
          const source = declaration.source ?? (yield* indexEntry(declaration.name)).source
          const resolved = yield* resolveOnly(scope.cacheDir, source, declaration.ref)
          next.set(declaration.name, {
            source,
            ref: resolved.ref,
            commit: resolved.commit,
            added: existing?.added ?? (yield* nowRfc3339)
          })
        }
        yield* writeLock(scope.lockFile, next)
        return pinned(scope, next)
      })

    const sync = (global: boolean) =>
      Effect.gen(function* () {
        const scope = yield* scopeFor(global)
        const entries = yield* readLock(scope.lockFile)
        for (const [name, entry] of entries) yield* ensureCheckout(scope, name, entry)
        if (scope.project) {
          // The project cache holds exactly the pinned recipes.
          for (const entry of yield* fs
            .listDirectory(scope.cacheDir)
            .pipe(Effect.catchTag("NotFound", () => Effect.succeed([] as ReadonlyArray<string>)))) {
            if (!entries.has(entry)) yield* fs.remove(join(scope.cacheDir, entry))
          }
        }
        return pinned(scope, entries)
      })

    const update = (names: ReadonlyArray<string>, global: boolean) =>
      Effect.gen(function* () {
        const scope = yield* scopeFor(global)
        const entries = yield* readLock(scope.lockFile)
        for (const name of names) {
          if (!entries.has(name)) {
            const hint = closest(name, [...entries.keys()])
            return yield* new NotFound({
              message: `recipe "${name}" is not pinned in ${scope.lockFile}${hint ? ` (did you mean "${hint}"?)` : ""}`,
              subject: name,
              hint: adviseLookup("recipe.list")
            })
          }
        }
        const chosen = [...entries].filter(([name]) => names.length === 0 || names.includes(name))
        const next = new Map(entries)
        for (const [name, entry] of chosen) {
          const dir = join(scope.cacheDir, name)
          const state = yield* checkoutState(dir)
          if (state.kind === "present" && state.dirty) return yield* tampered(name, dir)
          const staged = yield* stageCheckout(scope.cacheDir, entry.source, entry.ref)
          if (staged.commit === entry.commit && state.kind === "present" && state.head === entry.commit) {
            // The ref has not moved and the checkout is already there.
            yield* fs.remove(staged.stage)
            continue
          }
          yield* validate(staged.stage, name, entry.source).pipe(
            Effect.onError(() => fs.remove(staged.stage).pipe(Effect.ignore))
          )
          yield* install(staged.stage, dir)
          next.set(name, { ...entry, commit: staged.commit })
        }
        yield* writeLock(scope.lockFile, next)
        return pinned(scope, new Map(chosen.map(([name]) => [name, next.get(name)!])))
      })

    const remove = (name: string, options: { readonly global: boolean; readonly force: boolean }) =>
      Effect.gen(function* () {
        if (!RECIPE_NAME.test(name))
          return yield* new InvalidSpec({
            message: `recipe names use lower-case letters, digits and '-', got ${JSON.stringify(name)}`,
            subject: name
          })
        const scope = yield* scopeFor(options.global)
        const entries = yield* readLock(scope.lockFile)
        const declared = scope.project?.declarations.some((declaration) => declaration.name === name) ?? false
        if (!entries.has(name) && !declared) {
          const hint = closest(name, [...entries.keys()])
          return yield* new NotFound({
            message: `recipe "${name}" is not a ${scope.kind} remote recipe${hint ? ` (did you mean "${hint}"?)` : ""}`,
            subject: name,
            hint: adviseLookup("recipe.list")
          })
        }
        if (!options.force) {
          const users = (yield* vms.list).flatMap((vm) =>
            vm.kind === "ok" && vm.config.recipes.includes(name) ? [vm.name] : []
          )
          if (users.length > 0)
            return yield* new InUse({
              message: `recipe "${name}" is still listed by ${users.join(", ")}; remove it from them with stoat update --recipes, or pass --force`,
              subject: name
            })
        }
        const writeToml =
          scope.project && declared ? yield* writeProjectFile(scope.project.dir, { remove: name }) : Effect.void
        const next = new Map(entries)
        next.delete(name)
        yield* writeToml
        yield* writeLock(scope.lockFile, next)
        if (entries.has(name)) yield* fs.remove(join(scope.cacheDir, name))
        return { name, scope: scope.kind }
      })

    const ensureProject = (names: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        const scope = yield* scopeFor(false)
        if (!scope.project || names.length === 0) return
        yield* serialized(checkProject(scope, scope.project.declarations, names))
      })

    const checkProject = (scope: ScopePaths, declarations: ReadonlyArray<Declaration>, names: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        const entries = yield* readLock(scope.lockFile)
        for (const name of names) {
          const declaration = declarations.find((candidate) => candidate.name === name)
          const entry = entries.get(name)
          if (declaration === undefined && entry === undefined) continue
          if (declaration === undefined || !agrees(declaration, entry)) {
            const why =
              declaration === undefined
                ? "stoat.lock pins it but stoat.toml no longer declares it"
                : entry === undefined
                  ? "stoat.toml declares it but stoat.lock does not pin it"
                  : `stoat.toml asks for ${declaration.source ?? "ref"} ${declaration.ref} but stoat.lock pins ${entry.ref}`
            return yield* new LockOutOfDate({
              message: `recipe "${name}": ${why}`,
              subject: name,
              hint: advise("pin it", { operation: "recipe.lock", input: {} })
            })
          }
          yield* ensureCheckout(scope, name, entry!)
        }
      })

    // Its own lock, not the data root's: apply (under a start that holds the root lock) runs ensureProject.
    const serialized = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      locks.withLock(join(root.root, ".recipes.lock"), "remote recipes", effect)

    return RemoteRecipes.of({
      search: (terms, refresh) =>
        Effect.map(serialized(index(refresh)), (entries) => {
          const words = terms.flatMap((term) => term.toLowerCase().split(/\s+/)).filter((word) => word !== "")
          return entries.filter((entry) =>
            words.every((word) => entry.name.includes(word) || entry.description.toLowerCase().includes(word))
          )
        }),
      add: (request) => serialized(add(request)),
      lock: (global) => serialized(lock(global)),
      sync: (global) => serialized(sync(global)),
      update: (names, global) => serialized(update(names, global)),
      remove: (name, options) => serialized(remove(name, options)),
      ensureProject
    })
  })

/**
 * Apply step 2 wherever recipe names are about to be loaded (apply, plan, create, update): a
 * no-op when the stack has no remote recipes or there is no project.
 */
export const ensureProjectRecipes = (names: ReadonlyArray<string>) =>
  Effect.flatMap(Effect.serviceOption(RemoteRecipes), (remote) =>
    Option.isSome(remote) ? remote.value.ensureProject(names) : Effect.void
  )

/** `URL@ref`: the ref is what follows the last '@' after the host part (scp-style `git@host:` keeps its '@'). */
export const splitUrlRef = (value: string): [string, string | undefined] => {
  const at = value.lastIndexOf("@")
  const hostEnd = Math.max(
    value.indexOf("://") >= 0 ? value.indexOf("/", value.indexOf("://") + 3) : -1,
    value.indexOf(":")
  )
  if (at <= 0 || at < hostEnd || at === value.length - 1) return [value, undefined]
  return [value.slice(0, at), value.slice(at + 1)]
}

export const remoteRecipesLayer = (options: RemoteRecipesOptions = {}) =>
  Layer.effect(
    RemoteRecipes,
    Effect.gen(function* () {
      const spec =
        options.index ??
        Option.getOrElse(
          yield* Config.option(Config.nonEmptyString("STOAT_INDEX")).pipe(Effect.orDie),
          () => DEFAULT_INDEX
        )
      return yield* makeRemoteRecipes(spec)
    })
  )

export const RemoteRecipesLive = remoteRecipesLayer()
