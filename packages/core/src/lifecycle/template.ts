import { stat } from "node:fs/promises"
import { basename, isAbsolute, join, resolve } from "node:path"
import { Effect } from "effect"
import { DataRoot } from "../platform/data-root.js"
import { advise, CapabilityUnavailable, ImageNotDownloaded, InvalidSpec, NotFound, type StoatError } from "../errors.js"
import { knownImageFile, inferByo, lookupImage, type KnownImage } from "../images/index.js"
import type { LocalImage } from "../ports/image-builder.js"
import type { VmConfig } from "../vm/config.js"

/** What an image decides about a new VM before the caller's choices are applied. */
export interface VmTemplate {
  readonly image: string
  readonly os: string
  readonly backend: string
  readonly mode: VmConfig["mode"]
  readonly sshuser: string
  readonly ram: number
  readonly cpus: number
  readonly disk: string
  readonly installed: boolean
  /** Cloud base image (overlaid at first start) or a BYO disk image (overlaid at create). */
  readonly base?: string
  /** Install ISO attached until installed. */
  readonly iso?: string
  /** What the new VM's disk.qcow2 starts as: nothing yet (cloud), blank, or an overlay on `base`. */
  readonly diskAtCreate: "none" | "blank" | "overlay"
  readonly cpu_model?: string
  readonly required_cpu?: string
}

const DEFAULTS = { ram: 4096, cpus: 4, disk: "8G" }

const notBuilt = (what: string) =>
  new CapabilityUnavailable({
    message: `${what} is not supported by this build yet; use a cloud image or tiny`,
    reason: "not_implemented"
  })

const fromCatalog = (entry: KnownImage) =>
  Effect.gen(function* () {
    if (entry.local) {
      // A blank data disk, unless the image has a root disk: create then overlays it (see withLocalImage).
      return {
        image: entry.id,
        os: entry.os,
        backend: "direct",
        mode: "disk",
        sshuser: entry.sshUser,
        ram: entry.defaultRamMb ?? DEFAULTS.ram,
        cpus: entry.defaultCpus ?? DEFAULTS.cpus,
        disk: entry.defaultDisk,
        installed: true,
        diskAtCreate: "blank"
      } satisfies VmTemplate
    }
    const root = yield* DataRoot
    const file = knownImageFile(entry)
    const path = join(root.isos, file)
    const present = yield* Effect.promise(() =>
      stat(path).then(
        (info) => info.isFile(),
        () => false
      )
    )
    if (!present)
      return yield* new ImageNotDownloaded({
        message: `image ${entry.id} is not downloaded`,
        subject: entry.id,
        hint: advise("download it", { operation: "image.pull", input: { id: entry.id } })
      })
    return {
      image: entry.id,
      os: entry.os,
      backend: "cloudinit",
      mode: "cloud",
      sshuser: entry.sshUser,
      ram: DEFAULTS.ram,
      cpus: DEFAULTS.cpus,
      disk: entry.defaultDisk,
      installed: true,
      base: path,
      diskAtCreate: "none",
      ...(entry.cpuModel ? { cpu_model: entry.cpuModel } : {}),
      ...(entry.requiredCpu ? { required_cpu: entry.requiredCpu } : {})
    } satisfies VmTemplate
  })

/** A person's own image file (CLI only): the file name picks the guest and how it is provisioned. */
const fromPath = (given: string) =>
  Effect.gen(function* () {
    const path = isAbsolute(given) ? given : resolve(given)
    const isFile = yield* Effect.promise(() =>
      stat(path).then(
        (info) => info.isFile(),
        () => false
      )
    )
    if (!isFile) return yield* new NotFound({ message: `image file ${path} does not exist`, subject: path })
    const inferred = inferByo(basename(path))
    const common = { image: path, os: inferred.os, ram: DEFAULTS.ram, cpus: DEFAULTS.cpus, disk: DEFAULTS.disk }
    switch (inferred.backend) {
      case "cloudinit":
        return {
          ...common,
          backend: "cloudinit",
          mode: "cloud",
          sshuser: "stoat",
          installed: true,
          base: path,
          diskAtCreate: "none"
        } satisfies VmTemplate
      case "ssh":
        return path.toLowerCase().endsWith(".iso")
          ? ({
              ...common,
              backend: "ssh",
              mode: "disk",
              sshuser: "root",
              installed: false,
              iso: path,
              diskAtCreate: "blank"
            } satisfies VmTemplate)
          : ({
              ...common,
              backend: "ssh",
              mode: "disk",
              sshuser: "root",
              installed: true,
              base: path,
              diskAtCreate: "overlay"
            } satisfies VmTemplate)
      case "apkovl":
        return yield* notBuilt("an Alpine ISO (apkovl provisioning)")
    }
  })

/** A locally built image with a root disk makes VMs whose disk is an overlay of it (a copy-on-write clone of the build). */
export const withLocalImage = (template: VmTemplate, image: LocalImage): VmTemplate =>
  image.rootDisk === undefined ? template : { ...template, base: image.rootDisk, diskAtCreate: "overlay" }

/** Resolves a catalog id or (from the CLI) an image file to the template of a new VM. */
export const resolveTemplate = (
  image: string | undefined,
  imagePath: string | undefined
): Effect.Effect<VmTemplate, StoatError, DataRoot> =>
  imagePath !== undefined
    ? fromPath(imagePath)
    : image !== undefined
      ? Effect.flatMap(lookupImage(image), fromCatalog)
      : Effect.fail(
          new InvalidSpec({
            message: "give an image: a catalog id (see stoat images) or, from the CLI, an image file",
            subject: "image"
          })
        )
