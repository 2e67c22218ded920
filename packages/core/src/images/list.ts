import { stat } from "node:fs/promises"
import { basename, dirname, isAbsolute, join, resolve } from "node:path"
import { Effect } from "effect"
import type { Image } from "@stoat/wire"
import { BUNDLED_GUESTS, type GuestDef } from "../guest-definitions/definitions.js"
import { KNOWN_IMAGES, inferByo, type KnownImage } from "./known.js"

/** The image references a VM's config carries; `VmConfig` fits, so do salvaged partial records. */
export interface VmImageRefs {
  readonly os?: string
  /** Catalog id or image path (ours). */
  readonly image?: string
  /** Boot ISO, relative to the data root (`isos/x.iso`) or absolute. */
  readonly iso?: string
  /** Cloud base image, absolute. */
  readonly base?: string
}

const sizeOf = async (path: string): Promise<number | undefined> => {
  const info = await stat(path).catch(() => undefined)
  return info?.isFile() ? info.size : undefined
}

/** The bare file name under isos/ that a known image is (or would be) stored as. */
export const knownImageFile = (entry: KnownImage): string =>
  entry.source.kind === "url" ? entry.source.file : entry.source.dir

/** Bytes of the tiny guest build: its regular files, once the builder's manifest is in place. */
/**
 * The known images with download state (exact bytes for a file on disk, or for a locally built
 * image its finished build's from `localBuilds`; the declared approximation otherwise), then every
 * file in isos/ that a VM uses and no known image claims, as BYO.
 * Reads only the local disk.
 */
export const imagesOnHost = (
  isosDir: string,
  vmConfigs: ReadonlyArray<VmImageRefs>,
  guests: ReadonlyArray<Pick<GuestDef, "name" | "filename_hints">> = BUNDLED_GUESTS,
  localBuilds: ReadonlyMap<string, number> = new Map()
): Effect.Effect<ReadonlyArray<Image>> =>
  Effect.promise(async () => {
    const isos = resolve(isosDir)
    const claimed = new Set<string>()
    const images: Image[] = []
    for (const entry of KNOWN_IMAGES) {
      const file = knownImageFile(entry)
      const bytes = entry.source.kind === "local" ? localBuilds.get(entry.id) : await sizeOf(join(isos, file))
      claimed.add(file)
      images.push({
        id: entry.id,
        os: entry.os,
        variant: entry.variant,
        backend: entry.backend,
        file,
        downloaded: bytes !== undefined,
        bytes: bytes ?? entry.approxBytes,
        bytes_exact: bytes !== undefined,
        byo: false
      })
    }

    // A VM's iso/base is relative to the data root (the folder above isos/) or absolute.
    const root = dirname(isos)
    const byo = new Map<string, string>()
    for (const config of vmConfigs) {
      for (const ref of [config.iso, config.base, config.image]) {
        if (!ref || !/[/\\]/.test(ref)) continue
        const path = isAbsolute(ref) ? resolve(ref) : resolve(root, ref)
        const file = basename(path)
        if (dirname(path) !== isos || claimed.has(file) || file.endsWith(".part") || byo.has(file)) continue
        byo.set(file, config.os ?? "")
      }
    }
    for (const [file, vmOs] of [...byo].sort(([a], [b]) => a.localeCompare(b))) {
      const bytes = await sizeOf(join(isos, file))
      if (bytes === undefined) continue
      const inferred = inferByo(file, guests)
      images.push({
        id: "",
        os: inferred.os || vmOs,
        variant: "",
        backend: inferred.backend,
        file,
        downloaded: true,
        bytes,
        bytes_exact: true,
        byo: true
      })
    }
    return images
  })
