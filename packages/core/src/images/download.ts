import { createHash, type Hash } from "node:crypto"
import { createReadStream } from "node:fs"
import { mkdir, open, rename, stat, unlink } from "node:fs/promises"
import { join } from "node:path"
import { Effect } from "effect"
import type { ProgressData, PullResult } from "@stoat/wire"
import { Canceled, ChecksumMismatch, DownloadFailed, DownloadStalled, InvalidSpec } from "../errors.js"
import type { KnownImage } from "./known.js"
import { algorithmOf, findChecksum } from "./checksum.js"
import {
  AbortedError,
  DEFAULT_TIMEOUTS,
  TransferError,
  fetchText,
  openGet,
  readBody,
  type DownloadTimeouts
} from "./http.js"

export { DEFAULT_TIMEOUTS, type DownloadTimeouts } from "./http.js"

export interface PullOptions {
  /** The data root's isos/ folder. */
  readonly isosDir: string
  /** Aborting it cancels the pull (`canceled`); interrupting the Effect does the same. */
  readonly signal?: AbortSignal
  /** Called only when the whole percentage changes; never when the server sends no Content-Length. */
  readonly onProgress?: (event: ProgressData) => void
  readonly timeouts?: Partial<DownloadTimeouts>
}

export type PullError = DownloadFailed | DownloadStalled | ChecksumMismatch | InvalidSpec | Canceled

/** What to fetch once the known image is resolved: file name, URL and the expected digest, if published. */
interface Target {
  readonly file: string
  readonly url: string
  readonly digest: string | undefined
}

const safeFileName = (file: string): boolean => file !== "" && file !== "." && file !== ".." && !/[/\\\0]/.test(file)

const resolveTarget = async (entry: KnownImage, signal: AbortSignal, timeouts: DownloadTimeouts): Promise<Target> => {
  const source = entry.source
  if (source.kind === "local")
    throw new InvalidSpec({
      message: `image ${entry.id} is built locally by stoat; there is nothing to pull`,
      subject: entry.id
    })
  if (!safeFileName(source.file))
    throw new InvalidSpec({ message: `image ${entry.id} has no usable file name`, subject: entry.id })
  if (!source.checksum) return { file: source.file, url: source.url, digest: undefined }
  const sums = await fetchText(source.checksum.url, signal, timeouts).catch(
    failed(entry, `could not read the checksum file ${source.checksum.url}`)
  )
  const digest = findChecksum(sums, source.file, { sidecar: source.checksum.format === "sidecar" })
  if (!digest)
    throw new DownloadFailed({
      message: `the checksum file ${source.checksum.url} lists no digest for ${source.file}`,
      subject: entry.id
    })
  return { file: source.file, url: source.url, digest }
}

/** Wraps a metadata fetch failure with context; aborts and stalls pass through to `classify`. */
const failed =
  (entry: KnownImage, context: string) =>
  (error: unknown): never => {
    if (error instanceof TransferError && !error.stalled)
      throw new DownloadFailed({ message: `${context}: ${error.message}`, subject: entry.id })
    throw error
  }

const hashFile = async (path: string, algorithm: string, signal: AbortSignal): Promise<string | undefined> => {
  const info = await stat(path).catch(() => undefined)
  if (!info?.isFile()) return undefined
  const hash = createHash(algorithm)
  for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
    if (signal.aborted) throw new AbortedError("aborted")
    hash.update(chunk)
  }
  return hash.digest("hex")
}

const syncDir = async (dir: string) => {
  const handle = await open(dir, "r")
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}

const run = async (entry: KnownImage, options: PullOptions, signal: AbortSignal): Promise<PullResult> => {
  const timeouts: DownloadTimeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts }
  const target = await resolveTarget(entry, signal, timeouts)
  const algorithm = target.digest ? algorithmOf(target.digest) : undefined
  const checksumAvailable = target.digest !== undefined
  await mkdir(options.isosDir, { recursive: true })
  const final = join(options.isosDir, target.file)
  const part = `${final}.part`

  // A file already in place is reused only when its bytes match the published digest; without a
  // digest there is nothing to trust it by, so it is fetched again.
  if (target.digest && algorithm) {
    const existing = await hashFile(final, algorithm, signal)
    if (existing === target.digest) return { id: entry.id, downloaded: true, verified: true, checksum_available: true }
  }

  const { response } = await openGet(target.url, signal, timeouts)
  const declared = Number(response.headers["content-length"])
  const total = Number.isFinite(declared) && declared > 0 ? declared : 0
  const hash: Hash = createHash(algorithm ?? "sha256")
  const handle = await open(part, "w", 0o644).catch((error: unknown) => {
    response.destroy()
    throw error
  })
  let done = 0
  let lastPercent = -1
  let renamed = false
  try {
    try {
      await readBody(response, signal, timeouts.stallMs, async (chunk) => {
        hash.update(chunk)
        await handle.write(chunk)
        done += chunk.length
        if (options.onProgress && total > 0) {
          const percent = Math.min(100, Math.floor((done * 100) / total))
          if (percent !== lastPercent) {
            lastPercent = percent
            options.onProgress({ id: entry.id, done, total, percent })
          }
        }
      })
      await handle.sync()
    } finally {
      await handle.close()
    }
    if (target.digest) {
      const got = hash.digest("hex")
      if (got !== target.digest) {
        throw new ChecksumMismatch({
          message: `checksum mismatch for ${target.file}: expected ${algorithm} ${target.digest}, got ${got}; the download was discarded`,
          subject: entry.id
        })
      }
    }
    await rename(part, final)
    renamed = true
    await syncDir(options.isosDir).catch(() => undefined)
  } finally {
    // Only a verified (or knowingly unverified) complete file may carry the final name.
    if (!renamed) await unlink(part).catch(() => undefined)
  }
  return { id: entry.id, downloaded: true, verified: checksumAvailable, checksum_available: checksumAvailable }
}

const classify = (entry: KnownImage, error: unknown): PullError => {
  if (
    error instanceof DownloadFailed ||
    error instanceof DownloadStalled ||
    error instanceof ChecksumMismatch ||
    error instanceof InvalidSpec ||
    error instanceof Canceled
  ) {
    return error
  }
  if (error instanceof AbortedError)
    return new Canceled({ message: `pull of ${entry.id} was canceled`, subject: entry.id })
  if (error instanceof TransferError && error.stalled) {
    return new DownloadStalled({
      message: `download of ${entry.id} stalled: ${error.message}; the partial file was removed`,
      subject: entry.id
    })
  }
  const reason = error instanceof Error ? error.message : String(error)
  return new DownloadFailed({ message: `download of ${entry.id} failed: ${reason}`, subject: entry.id })
}

/**
 * Downloads a catalog image into `isos/<file>`: streamed to `<file>.part` while hashing (sha256 or
 * sha512 by the digest's length), renamed only when the digest matches. Interrupting the Effect
 * (Ctrl-C) or aborting `signal` stops the request and deletes the part file before the Effect
 * finishes. `verified` is true only when the bytes were checked against a published digest.
 */
export const pull = (entry: KnownImage, options: PullOptions): Effect.Effect<PullResult, PullError> =>
  Effect.async<PullResult, PullError>((resume) => {
    const controller = new AbortController()
    const external = options.signal
    const onExternalAbort = () => controller.abort()
    if (external?.aborted) controller.abort()
    else external?.addEventListener("abort", onExternalAbort, { once: true })
    const running = run(entry, options, controller.signal).then(
      (result) => resume(Effect.succeed(result)),
      (error: unknown) => resume(Effect.fail(classify(entry, error)))
    )
    void running.finally(() => external?.removeEventListener("abort", onExternalAbort))
    // Interruption waits for `run` to unwind, so the part file is gone when the fiber ends.
    return Effect.promise(() => {
      controller.abort()
      return running
    })
  })
