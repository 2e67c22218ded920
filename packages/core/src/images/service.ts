import { basename, join } from "node:path"
import { Clock, Context, Effect, Layer, Option } from "effect"
import type { Image, ProgressData, PullResult } from "@stoat/wire"
import type { StoatError } from "../errors.js"
import { GuestDefinitions } from "../guest-definitions/definitions.js"
import { DataRoot } from "../platform/data-root.js"
import * as fs from "../platform/fs.js"
import { ImageBuilder } from "../ports/image-builder.js"
import { VmStore, type VmRecord } from "../vm/store.js"
import { findImage, KNOWN_IMAGES, lookupImage } from "./known.js"
import { imagesOnHost, knownImageFile } from "./list.js"
import { pull } from "./download.js"

/** A file of the image folder that nothing needs: a download given up on, or an image no VM uses. */
export interface StaleImageFile {
  readonly class: "partial_download" | "orphaned_image"
  readonly path: string
}

/** A partial download younger than this may still be in progress in another process. */
const PART_GRACE_MS = 2 * 60 * 1000

/**
 * The image store (`<root>/isos`): what is there, fetching or building an image, and which of
 * its files are stale. Local builds (`tiny`) go through the ImageBuilder port.
 */
export class Images extends Context.Tag("stoat/Images")<
  Images,
  {
    /** The catalog images with their download state, then the files VMs use that none claims. */
    readonly list: Effect.Effect<ReadonlyArray<Image>, StoatError>
    /** Downloads a catalog image (checksum verified while streaming), or builds a local one. */
    readonly pull: (
      id: string,
      report: { readonly onStage: (line: string) => void; readonly onProgress: (event: ProgressData) => void }
    ) => Effect.Effect<PullResult, StoatError>
    /** Partial downloads untouched for two minutes; with `unreferenced`, also images no VM names. */
    readonly stale: (options: {
      readonly unreferenced: boolean
    }) => Effect.Effect<ReadonlyArray<StaleImageFile>, StoatError>
  }
>() {}

/** Image files a VM still needs: its catalog file, iso and base (a broken vm.toml is scanned for file names). */
const referencedImages = (records: ReadonlyArray<VmRecord>, files: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const referenced = new Set<string>()
    for (const record of records) {
      if (record.kind === "ok") {
        const { image, iso, base } = record.config
        const entry = image === "" ? undefined : findImage(image)
        if (entry) referenced.add(knownImageFile(entry))
        else if (image !== "") referenced.add(basename(image))
        for (const path of [iso, base]) if (path !== "") referenced.add(basename(path))
        continue
      }
      const text = yield* Effect.orElseSucceed(fs.readFileString(join(record.dir, "vm.toml")), () => "")
      for (const file of files) if (text.includes(file)) referenced.add(file)
    }
    return referenced
  })

const make = Effect.gen(function* () {
  const root = yield* DataRoot
  const store = yield* VmStore
  const guests = yield* GuestDefinitions
  const builder = yield* ImageBuilder

  const imageFiles = Effect.orElseSucceed(fs.listDirectory(root.isos), () => [] as ReadonlyArray<string>)
  // A file that vanished meanwhile (another prune) is simply not stale.
  const fileAge = (path: string, now: number) =>
    Effect.map(
      Effect.orElseSucceed(fs.statIfExists(path), () => Option.none()),
      (info) => (Option.isSome(info) ? { file: info.value.isFile(), age: now - info.value.mtimeMs } : undefined)
    )

  return Images.of({
    list: Effect.gen(function* () {
      const records = yield* store.list
      const known = yield* Effect.orElseSucceed(guests.list, () => [])
      const configs = records.flatMap((record) => (record.kind === "ok" ? [record.config] : []))
      // Built images live in the builder's cache, not isos/: it says which are done.
      const localBuilds = new Map<string, number>()
      for (const entry of KNOWN_IMAGES.filter((image) => image.local)) {
        const bytes = yield* builder.built(entry.id)
        if (bytes !== undefined) localBuilds.set(entry.id, bytes)
      }
      return yield* imagesOnHost(root.isos, configs, known, localBuilds)
    }),

    pull: (id, report) =>
      Effect.gen(function* () {
        yield* root.ensure
        const entry = yield* lookupImage(id)
        if (entry.local) {
          yield* builder.build(entry.id, { onStage: report.onStage })
          return { id: entry.id, downloaded: true, verified: true, checksum_available: false }
        }
        return yield* pull(entry, { isosDir: root.isos, onProgress: report.onProgress })
      }),

    stale: ({ unreferenced }) =>
      Effect.gen(function* () {
        const files = yield* imageFiles
        const now = yield* Clock.currentTimeMillis
        const found: Array<StaleImageFile> = []
        for (const file of files.filter((name) => name.endsWith(".part"))) {
          const info = yield* fileAge(join(root.isos, file), now)
          if (info && info.age >= PART_GRACE_MS) found.push({ class: "partial_download", path: join(root.isos, file) })
        }
        if (!unreferenced) return found
        const referenced = yield* referencedImages(yield* store.list, files)
        for (const file of files) {
          if (file.endsWith(".part") || file.startsWith(".") || referenced.has(file)) continue
          if ((yield* fileAge(join(root.isos, file), now))?.file)
            found.push({ class: "orphaned_image", path: join(root.isos, file) })
        }
        return found
      })
  })
})

export const ImagesLive: Layer.Layer<Images, never, DataRoot | VmStore | GuestDefinitions | ImageBuilder> =
  Layer.effect(Images, make)
