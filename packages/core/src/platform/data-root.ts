import { homedir } from "node:os"
import { join, resolve } from "node:path"
import { mkdir, stat, access, constants } from "node:fs/promises"
import { Config, Context, Effect, Layer, Option } from "effect"
import { InvalidSpec } from "../errors.js"

/** Directory names under the data root that are never VMs. */
export const RESERVED_DIRS = new Set(["isos", "recipes", "shared", "logs", "index", "guests", "mcp", "v2"])
export const isReservedDir = (name: string): boolean =>
  RESERVED_DIRS.has(name) ||
  name.startsWith(".") ||
  name.startsWith(".stoat-index-stage-") ||
  name.startsWith(".stoat-index-old-")

export interface DataRootPaths {
  readonly root: string
  readonly isos: string
  readonly recipes: string
  readonly guests: string
  readonly shared: string
  readonly logs: string
  readonly mcp: string
  readonly configToml: string
  readonly rootLock: string
  readonly keysLock: string
  readonly clientKey: string
  readonly hostKey: string
  readonly vmDir: (name: string) => string
  readonly sharedDir: (name: string) => string
}

export const layoutOf = (root: string): DataRootPaths => ({
  root,
  isos: join(root, "isos"),
  recipes: join(root, "recipes"),
  guests: join(root, "guests"),
  shared: join(root, "shared"),
  logs: join(root, "logs"),
  mcp: join(root, "mcp"),
  configToml: join(root, "config.toml"),
  rootLock: join(root, ".lock"),
  keysLock: join(root, ".keys.lock"),
  clientKey: join(root, "id_stoat"),
  hostKey: join(root, "guest_host_ed25519_key"),
  vmDir: (name) => join(root, name),
  sharedDir: (name) => join(root, "shared", name)
})

/**
 * Where Stoat keeps its files (`$STOAT_HOME`, default `~/.stoat`). Reading never creates
 * anything; `ensure` creates the root and its standard folders when a command needs to write.
 */
export class DataRoot extends Context.Tag("stoat/DataRoot")<
  DataRoot,
  DataRootPaths & { readonly ensure: Effect.Effect<void, InvalidSpec> }
>() {}

const unusable = (root: string, why: string) =>
  new InvalidSpec({
    message: `data root ${root} is not usable: ${why} (set STOAT_HOME to a writable directory)`,
    subject: root
  })

const ensureAt = (paths: DataRootPaths): Effect.Effect<void, InvalidSpec> =>
  Effect.tryPromise({
    try: async () => {
      const existing = await stat(paths.root).catch(() => undefined)
      if (existing && !existing.isDirectory()) throw new Error("it is not a directory")
      for (const dir of [paths.root, paths.isos, paths.recipes, paths.shared, paths.logs])
        await mkdir(dir, { recursive: true })
      await access(paths.root, constants.W_OK)
    },
    catch: (cause) =>
      unusable(paths.root, cause instanceof Error ? cause.message.replace(/^[A-Z]+: /, "") : String(cause))
  })

export const dataRootAt = (root: string): Layer.Layer<DataRoot> => {
  const paths = layoutOf(resolve(root))
  return Layer.succeed(DataRoot, { ...paths, ensure: ensureAt(paths) })
}

const rootFrom = (home: string | undefined): string =>
  home !== undefined && home !== "" ? resolve(home) : join(homedir(), ".stoat")

/** For code outside Effect (a CLI command's plain path helper): `$STOAT_HOME` or `~/.stoat`. */
export const resolveDataRoot = (env: NodeJS.ProcessEnv = process.env): string => rootFrom(env["STOAT_HOME"])

/** `STOAT_HOME` through `Config` (so a `ConfigProvider` can supply it); empty or unset means `~/.stoat`. */
export const DataRootConfig: Config.Config<string> = Config.map(Config.option(Config.string("STOAT_HOME")), (home) =>
  rootFrom(Option.getOrUndefined(home))
)

/** The data root named by `$STOAT_HOME`. Fails typed when it names a file rather than a folder. */
export const DataRootLive: Layer.Layer<DataRoot, InvalidSpec> = Layer.unwrapEffect(
  Effect.gen(function* () {
    const root = yield* Effect.orDie(DataRootConfig)
    const existing = yield* Effect.promise(() => stat(root).catch(() => undefined))
    if (existing && !existing.isDirectory()) return yield* unusable(root, "it is not a directory")
    return dataRootAt(root)
  })
)
