import { constants, type Stats } from "node:fs"
import { mkdir, open, stat, type FileHandle } from "node:fs/promises"
import { dirname, resolve } from "node:path"
import { ToolkitError } from "./errors.js"

/** The most any one input (a file, stdin) may hold; option descriptions state it as INPUT_LIMIT. */
export const MAX_INPUT_BYTES = 4 * 1024 * 1024
export const INPUT_LIMIT = `${MAX_INPUT_BYTES / (1024 * 1024)} MiB`

const kindOf = (stats: Stats): string =>
  stats.isDirectory()
    ? "a directory"
    : stats.isFIFO()
      ? "a FIFO"
      : stats.isCharacterDevice() || stats.isBlockDevice()
        ? "a device"
        : stats.isSocket()
          ? "a socket"
          : "a special file"

const reason = (error: unknown): string => {
  const code = (error as NodeJS.ErrnoException).code
  if (code === "EACCES" || code === "EPERM") return "permission denied"
  return (error as Error).message
}

/** Reads an opened regular file to its end, refusing more than MAX_INPUT_BYTES (it may grow after fstat). */
const readCapped = async (handle: FileHandle, size: number, tooLarge: () => never): Promise<Buffer> => {
  const chunks: Buffer[] = []
  let total = 0
  const chunkBytes = Math.min(Math.max(size + 1, 4096), 1024 * 1024)
  for (;;) {
    const chunk = Buffer.allocUnsafe(chunkBytes)
    const { bytesRead } = await handle.read(chunk, 0, chunkBytes, null)
    if (bytesRead === 0) return Buffer.concat(chunks, total)
    total += bytesRead
    if (total > MAX_INPUT_BYTES) tooLarge()
    chunks.push(chunk.subarray(0, bytesRead))
  }
}

/**
 * The text of a regular file, or undefined when nothing exists at `path`. FIFOs, devices,
 * sockets and directories are refused: reading them could block forever or never end. The
 * file is opened non-blocking and checked again on the open descriptor, so swapping in a FIFO
 * after the first check cannot block either.
 */
export const readRegularFile = async (path: string, what: string): Promise<string | undefined> => {
  let first: Stats
  try {
    first = await stat(path)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT" || (error as NodeJS.ErrnoException).code === "ENOTDIR")
      return undefined
    throw new ToolkitError(`cannot read ${what.toLowerCase()} ${path}: ${reason(error)}`)
  }
  const refuse = (stats: Stats): never => {
    throw new ToolkitError(`${what} is ${kindOf(stats)}, not a regular file: ${path}`)
  }
  const tooLarge = (): never => {
    throw new ToolkitError(`${what} is larger than ${INPUT_LIMIT}: ${path}`)
  }
  if (!first.isFile()) refuse(first)
  if (first.size > MAX_INPUT_BYTES) tooLarge()
  let handle: FileHandle
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK)
  } catch (error) {
    throw new ToolkitError(`cannot read ${what.toLowerCase()} ${path}: ${reason(error)}`)
  }
  try {
    const stats = await handle.stat()
    if (!stats.isFile()) refuse(stats)
    if (stats.size > MAX_INPUT_BYTES) tooLarge()
    return (await readCapped(handle, stats.size, tooLarge)).toString("utf8")
  } catch (error) {
    if (error instanceof ToolkitError) throw error
    throw new ToolkitError(`cannot read ${what.toLowerCase()} ${path}: ${reason(error)}`)
  } finally {
    await handle.close()
  }
}

/** True when `path` names a regular file (following symlinks). */
export const isRegularFile = async (path: string): Promise<boolean> => {
  try {
    return (await stat(path)).isFile()
  } catch {
    return false
  }
}

/** Where `-` reads from: a command's CommandIO (io.ts builds on this file, so it is not imported here). */
export interface StdinSource {
  readonly stdin: () => Promise<Uint8Array>
}

/** Reads a text file, or stdin for `-` (empty inside a tool call). `what` names it in errors. */
export const readInput = async (io: StdinSource, path: string, what: string): Promise<string> => {
  if (path === "-") return Buffer.from(await io.stdin()).toString("utf8")
  const text = await readRegularFile(path, what)
  if (text === undefined) throw new ToolkitError(`${what} not found: ${path}`)
  return text
}

/**
 * Writes a text file, creating missing parent directories. Only a regular file (new or
 * existing) is written: opening a FIFO without a reader would block, and devices are refused.
 */
export const writeOutput = async (path: string, text: string, what: string): Promise<void> => {
  let handle: FileHandle | undefined
  try {
    await mkdir(dirname(resolve(path)), { recursive: true })
    // Not O_TRUNC: nothing is changed before the target is known to be a regular file.
    handle = await open(path, constants.O_WRONLY | constants.O_CREAT | constants.O_NONBLOCK, 0o666)
    const stats = await handle.stat()
    if (!stats.isFile()) throw new ToolkitError(`${what} is ${kindOf(stats)}, not a regular file: ${path}`)
    await handle.truncate(0)
    await handle.writeFile(text)
  } catch (error) {
    if (error instanceof ToolkitError) throw error
    const code = (error as NodeJS.ErrnoException).code
    // A FIFO nobody reads fails a non-blocking open with ENXIO; a directory with EISDIR.
    if (code === "ENXIO") throw new ToolkitError(`${what} is a FIFO, not a regular file: ${path}`)
    if (code === "EISDIR") throw new ToolkitError(`${what} is a directory, not a regular file: ${path}`)
    throw new ToolkitError(`cannot write ${what} ${path}: ${reason(error)}`)
  } finally {
    await handle?.close()
  }
}
