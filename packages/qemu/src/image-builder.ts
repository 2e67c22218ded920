import { stat } from "node:fs/promises"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import {
  CannotReach,
  CapabilityUnavailable,
  DataRoot,
  ImageBuilder,
  Internal,
  InvalidSpec,
  NotFound,
  type LocalImage
} from "@stoat/core"
import { buildDebianMini, DEBIAN_MINI_ID, DebianMiniBuildError, readDebianMini } from "./debian-mini/build.js"
import { buildTinyGuest, readTinyGuest } from "./tiny/build.js"

/** The summed size of a build's files (those missing count nothing). */
const bytesOf = async (paths: ReadonlyArray<string>): Promise<number> =>
  (
    await Promise.all(
      paths.map((path) =>
        stat(path).then(
          (info) => info.size,
          () => 0
        )
      )
    )
  ).reduce((sum, size) => sum + size, 0)

export interface QemuImageBuilderOptions {
  /**
   * Where the tiny guest is built and cached: `<dir>/debs` (downloaded packages) and `<dir>/image`.
   * Default `<data root>/.cache/tiny`.
   */
  readonly tinyCacheDir?: string
  /**
   * Where debian-12-mini is built and cached: `<dir>/debs` (mmdebstrap's packages) and `<dir>/image`
   * (one folder per build). Default `<data root>/.cache/debian-12-mini`.
   */
  readonly debianMiniCacheDir?: string
}

/** Where the tiny guest is cached by default; the accelerator probe boots its kernel too. */
export const defaultTinyCacheDir = (root: string) => join(root, ".cache", "tiny")

/** A failed debian-12-mini build as the typed error its cause calls for. */
const debianMiniError = (cause: unknown) => {
  const message = cause instanceof Error ? cause.message : String(cause)
  if (!(cause instanceof DebianMiniBuildError))
    return new Internal({ message: `cannot build ${DEBIAN_MINI_ID}: ${message}`, subject: DEBIAN_MINI_ID })
  switch (cause.kind) {
    case "missing_tool":
    case "needs_root":
      return new CapabilityUnavailable({ message, subject: DEBIAN_MINI_ID, reason: cause.kind })
    case "mirror_unreachable":
      return new CannotReach({ message, subject: DEBIAN_MINI_ID })
    case "gone":
      return new NotFound({ message, subject: DEBIAN_MINI_ID })
    case "invalid_path":
      return new InvalidSpec({ message, subject: "STOAT_DEBIAN_MINI_CACHE" })
    case "failed":
      return new Internal({ message, subject: DEBIAN_MINI_ID })
  }
}

/** The local image builders this host has: the tiny guest and debian-12-mini. */
export const makeQemuImageBuilder = (options: QemuImageBuilderOptions = {}) =>
  Layer.effect(
    ImageBuilder,
    Effect.map(DataRoot, (root) => {
      const tinyDir = options.tinyCacheDir ?? defaultTinyCacheDir(root.root)
      const debianMiniDir = options.debianMiniCacheDir ?? join(root.root, ".cache", DEBIAN_MINI_ID)
      /** The current debian-12-mini build (made first if needed), or the one a VM's root disk came from. */
      const debianMini = (
        onStage?: (line: string) => void,
        rootDisk?: string
      ): Effect.Effect<LocalImage, Internal | NotFound | CapabilityUnavailable | CannotReach | InvalidSpec> =>
        Effect.map(
          Effect.tryPromise({
            try: async () => {
              if (rootDisk === undefined)
                return buildDebianMini({
                  cacheDir: debianMiniDir,
                  outDir: join(debianMiniDir, "image"),
                  ...(onStage ? { onStage } : {})
                })
              const pinned = await readDebianMini(join(debianMiniDir, "image"), rootDisk)
              if (pinned) return pinned
              throw new DebianMiniBuildError(
                "gone",
                `the ${DEBIAN_MINI_ID} build that ${rootDisk} belongs to is incomplete or was removed; delete the VM and create it again`
              )
            },
            catch: debianMiniError
          }),
          (image) => ({
            kernel: image.kernel,
            initrd: image.initrd,
            append: image.kernelArgs,
            rootDisk: image.rootDisk
          })
        )
      const tiny = (onStage?: (line: string) => void): Effect.Effect<LocalImage, Internal> =>
        Effect.map(
          Effect.tryPromise({
            try: () =>
              buildTinyGuest({
                cacheDir: join(tinyDir, "debs"),
                outDir: join(tinyDir, "image"),
                ...(onStage ? { onStage } : {})
              }),
            catch: (cause) =>
              new Internal({
                message: `cannot build the tiny guest: ${cause instanceof Error ? cause.message : String(cause)}`,
                subject: "tiny"
              })
          }),
          (image) => ({ kernel: image.kernel, initrd: image.initrd, append: image.kernelArgs })
        )
      return ImageBuilder.of({
        build: (id, buildOptions) =>
          id === DEBIAN_MINI_ID
            ? debianMini(buildOptions?.onStage, buildOptions?.rootDisk)
            : id === "tiny"
              ? tiny(buildOptions?.onStage)
              : Effect.fail(
                  new NotFound({
                    message: `no locally built image "${id}" (only "tiny" and "${DEBIAN_MINI_ID}")`,
                    subject: id
                  })
                ),
        built: (id) =>
          Effect.promise(async () => {
            if (id === "tiny") {
              const image = await readTinyGuest(join(tinyDir, "image"))
              return image === undefined ? undefined : bytesOf([image.kernel, image.initrd])
            }
            const image = id === DEBIAN_MINI_ID ? await readDebianMini(join(debianMiniDir, "image")) : undefined
            return image === undefined ? undefined : bytesOf([image.kernel, image.initrd, image.rootDisk])
          })
      })
    })
  )

/** The cache folders STOAT_TINY_CACHE and STOAT_DEBIAN_MINI_CACHE name, when set (so test runs share one). */
export const cacheDirsFromEnv = (): QemuImageBuilderOptions => {
  const tinyCacheDir = process.env["STOAT_TINY_CACHE"]
  const debianMiniCacheDir = process.env["STOAT_DEBIAN_MINI_CACHE"]
  return { ...(tinyCacheDir ? { tinyCacheDir } : {}), ...(debianMiniCacheDir ? { debianMiniCacheDir } : {}) }
}

export const QemuImageBuilderLive = Layer.unwrapEffect(Effect.sync(() => makeQemuImageBuilder(cacheDirsFromEnv())))
