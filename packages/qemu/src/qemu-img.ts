import { stat } from "node:fs/promises"
import { resolve } from "node:path"
import { Effect } from "effect"
import {
  checkTheHost,
  diskFull,
  DiskShrink,
  Internal,
  isDiskFull,
  NotFound,
  ProviderMissing,
  type DiskInfo,
  type LimitReached
} from "@stoat/core"
import type { Snapshot } from "@stoat/wire"
import { runProgram, stderrMessage } from "./run.js"
import { parseSnapshotRows } from "./snapshot-table.js"

export const QEMU_IMG = "qemu-img"

const POWERS: Record<string, number> = { B: 0, K: 1, M: 2, G: 3, T: 4, P: 5, E: 6 }

/**
 * A size in qemu-img's syntax ("10G", "512M", "1.5g", "1048576"; 1024-based) in bytes, rounded
 * up to whole 512-byte sectors. A leading "+" makes it relative (resize only). undefined if malformed.
 */
export const parseSize = (size: string): { readonly bytes: number; readonly relative: boolean } | undefined => {
  const match = /^(\+)?(\d+(?:\.\d+)?)\s*([bkmgtpe])?(?:i?b)?$/i.exec(size.trim())
  if (!match) return undefined
  const bytes = Number(match[2]) * 1024 ** (POWERS[(match[3] ?? "B").toUpperCase()] ?? 0)
  if (!Number.isFinite(bytes) || bytes > Number.MAX_SAFE_INTEGER) return undefined
  return { bytes: Math.ceil(bytes / 512) * 512, relative: match[1] === "+" }
}

/** Runs qemu-img; stdout on success, its own error message otherwise. */
export const qemuImg = (
  args: ReadonlyArray<string>,
  subject?: string
): Effect.Effect<string, Internal | ProviderMissing> =>
  runProgram(QEMU_IMG, args).pipe(
    Effect.mapError((failure) =>
      failure.missing
        ? new ProviderMissing({ message: `${QEMU_IMG} not found on PATH; install QEMU`, hint: checkTheHost })
        : new Internal({ message: failure.message, ...(subject !== undefined ? { subject } : {}) })
    ),
    Effect.flatMap((out) =>
      out.code === 0
        ? Effect.succeed(out.stdout)
        : Effect.fail(
            new Internal({
              message: `qemu-img ${args[0] ?? ""}: ${stderrMessage(out.stderr, `exit ${String(out.code)}`)}`,
              ...(subject !== undefined ? { subject } : {})
            })
          )
    )
  )

/**
 * qemu-img run for a command that writes an image (create, resize): a full file system is
 * `limit_reached` with the free space, since nothing but freeing space helps.
 */
const qemuImgWriting = (
  args: ReadonlyArray<string>,
  path: string
): Effect.Effect<string, Internal | ProviderMissing | LimitReached> =>
  Effect.catchIf(
    qemuImg(args, path),
    (error) => error._tag === "Internal" && isDiskFull(error),
    (error) => Effect.flatMap(diskFull(error.message, path), Effect.fail)
  )

const exists = (path: string) =>
  Effect.promise(() =>
    stat(path).then(
      (info) => info.isFile(),
      () => false
    )
  )

interface InfoJson {
  readonly "virtual-size"?: number
  readonly "actual-size"?: number
  readonly format?: string
  readonly "backing-filename"?: string
  readonly "full-backing-filename"?: string
}

/** What qemu-img says of an image: the port's DiskInfo, with the backing file as QEMU records it (an absolute path). */
export type ImageInfo = Omit<DiskInfo, "backing"> & { readonly backingPath?: string }

/** `qemu-img info --output=json`; `-U` so it also works while QEMU holds the image. */
export const diskInfo = (path: string): Effect.Effect<ImageInfo, Internal | NotFound | ProviderMissing> =>
  Effect.gen(function* () {
    if (!(yield* exists(path)))
      return yield* new NotFound({ message: `disk image ${path} does not exist`, subject: path })
    const text = yield* qemuImg(["info", "--output=json", "-U", path], path)
    const info = yield* Effect.try({
      try: () => JSON.parse(text) as InfoJson,
      catch: () =>
        new Internal({ message: `qemu-img info printed something that is not JSON for ${path}`, subject: path })
    })
    const backing = info["full-backing-filename"] ?? info["backing-filename"]
    return {
      virtualSize: info["virtual-size"] ?? 0,
      actualSize: info["actual-size"] ?? 0,
      format: info.format ?? "unknown",
      ...(backing !== undefined ? { backingPath: backing } : {})
    }
  })

const badSize = (size: string, path: string) =>
  new Internal({
    message: `invalid disk size "${size}" (use a number with an optional K, M, G or T suffix)`,
    subject: path
  })

/** A qcow2 image of `size`, or an overlay on `backing` (absolute path recorded, its format detected). */
export const createDisk = (
  path: string,
  size: string,
  backing?: string
): Effect.Effect<void, Internal | ProviderMissing | LimitReached> =>
  Effect.gen(function* () {
    const parsed = size === "" ? undefined : parseSize(size)
    if (size !== "" && (parsed === undefined || parsed.relative)) return yield* badSize(size, path)
    const args = ["create", "-q", "-f", "qcow2"]
    if (backing !== undefined) {
      const abs = resolve(backing)
      const base = yield* diskInfo(abs).pipe(
        Effect.catchTag("NotFound", () =>
          Effect.fail(new Internal({ message: `backing image ${abs} does not exist`, subject: abs }))
        )
      )
      args.push("-b", abs, "-F", base.format)
    }
    args.push(path)
    if (parsed !== undefined) args.push(String(parsed.bytes))
    yield* qemuImgWriting(args, path)
  })

/** Grow-only: a size below the current virtual size fails with DiskShrink; the same size is a no-op. */
export const resizeDisk = (
  path: string,
  size: string
): Effect.Effect<void, Internal | DiskShrink | ProviderMissing | LimitReached> =>
  Effect.gen(function* () {
    const parsed = parseSize(size)
    if (parsed === undefined) return yield* badSize(size, path)
    const info = yield* diskInfo(path).pipe(
      Effect.catchTag("NotFound", (error) => Effect.fail(new Internal({ message: error.message, subject: path })))
    )
    const target = parsed.relative ? info.virtualSize + parsed.bytes : parsed.bytes
    if (target < info.virtualSize) {
      return yield* new DiskShrink({
        message: `disks can only grow: ${size} is smaller than the current ${info.virtualSize} bytes`,
        subject: path
      })
    }
    if (target === info.virtualSize) return
    yield* qemuImgWriting(["resize", "-q", "-f", info.format, path, String(target)], path)
  })

/** Internal snapshots of a disk, with their ids; `-U` so a concurrent QEMU does not make it fail. */
export const snapshotRows = (path: string) =>
  Effect.map(qemuImg(["snapshot", "-l", "-U", path], path), parseSnapshotRows)

export const listSnapshots = (path: string): Effect.Effect<Snapshot[], Internal | ProviderMissing> =>
  Effect.map(snapshotRows(path), (rows) => rows.map((row) => row.snapshot))

export const createSnapshot = (path: string, tag: string) =>
  qemuImg(["snapshot", "-c", tag, path], path).pipe(Effect.asVoid)
export const applySnapshot = (path: string, tag: string) =>
  qemuImg(["snapshot", "-a", tag, path], path).pipe(Effect.asVoid)
export const deleteSnapshot = (path: string, tag: string) =>
  qemuImg(["snapshot", "-d", tag, path], path).pipe(Effect.asVoid)
