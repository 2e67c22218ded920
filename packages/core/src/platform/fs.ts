/**
 * The file system as Effects with typed failures. Every failure names the path and carries the
 * errno, and is one of Stoat's errors chosen by what the user can do about it:
 *
 * | errno                               | error          | wire code       |
 * |-------------------------------------|----------------|-----------------|
 * | ENOENT                              | `NotFound`     | `not_found`     |
 * | EACCES, EPERM, EROFS                | `AccessDenied` | `access_denied` |
 * | EISDIR, ENOTDIR, EEXIST, ELOOP, ENAMETOOLONG | `InvalidSpec` | `invalid_spec` |
 * | ENOSPC, EDQUOT                      | `LimitReached` | `limit_reached` (`available_mb` = free space) |
 * | anything else                       | `Internal`     | `internal`      |
 */
import * as nodeFs from "node:fs/promises"
import {
  closeSync,
  constants,
  fstatSync,
  openSync,
  readdirSync,
  readSync,
  type Dirent,
  type MakeDirectoryOptions,
  type RmOptions,
  type Stats
} from "node:fs"
import { dirname } from "node:path"
import { Effect, Option } from "effect"
import { AccessDenied, advise, Internal, InvalidSpec, LimitReached, NotFound } from "../errors.js"
import { writeFileAtomic as writeAtomicPromise } from "./files.js"

export type FsError = NotFound | AccessDenied | InvalidSpec | LimitReached | Internal

const errnoOf = (cause: unknown): string | undefined => {
  const code = (cause as { code?: unknown } | null)?.code
  return typeof code === "string" ? code : undefined
}

const REASONS: Record<string, string> = {
  ENOENT: "no such file or directory",
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  EROFS: "read-only file system",
  EISDIR: "it is a directory",
  ENOTDIR: "a part of the path is not a directory",
  EEXIST: "something is already there",
  ELOOP: "too many symbolic links",
  ENAMETOOLONG: "the name is too long",
  ENOSPC: "no space left on the device",
  EDQUOT: "the disk quota is exceeded"
}

const MiB = 1024 * 1024

/** Free and total space (MiB) of the file system holding `path`; undefined when it cannot be told. */
export const spaceOf = (
  path: string
): Effect.Effect<{ readonly freeMb: number; readonly totalMb: number } | undefined> =>
  Effect.promise(() =>
    nodeFs.statfs(path).then(
      (info) => ({
        freeMb: Math.floor((info.bavail * info.bsize) / MiB),
        totalMb: Math.floor((info.blocks * info.bsize) / MiB)
      }),
      () => undefined
    )
  )

/** Free space (MiB) of the file system holding `path`'s folder; 0 when it cannot be told. */
const freeMb = (path: string): Effect.Effect<number> =>
  Effect.map(spaceOf(dirname(path)), (space) => space?.freeMb ?? 0)

/**
 * Whether a failure is a full file system: its errno (ENOSPC, EDQUOT), SQLite's SQLITE_FULL, or a
 * program's own words for it (ssh-keygen and qemu-img print strerror).
 */
export const isDiskFull = (cause: unknown): boolean => {
  const code = (cause as { code?: unknown } | null)?.code
  if (code === "ENOSPC" || code === "EDQUOT" || code === "SQLITE_FULL") return true
  const message = cause instanceof Error ? cause.message : (cause as { message?: unknown } | null)?.message
  return typeof message === "string" && /No space left on device|Disk quota exceeded/.test(message)
}

/**
 * The file system is full (ENOSPC, EDQUOT, SQLite's SQLITE_FULL): `limit_reached` with the free
 * space, said as such, so nobody deletes a good file believing it damaged. `message` says what failed.
 */
export const diskFull = (
  message: string,
  path: string,
  options: { readonly neededBytes?: number; readonly errno?: string } = {}
): Effect.Effect<LimitReached> =>
  Effect.map(
    freeMb(path),
    (available) =>
      new LimitReached({
        message: `${message}: the file system is full (${available} MiB free at ${dirname(path)})`,
        subject: path,
        hint: advise("free some space (or delete a VM you no longer need)", {
          operation: "host.prune",
          input: { apply: true, images: true }
        }),
        needed_mb: Math.max(1, Math.ceil((options.neededBytes ?? 0) / MiB)),
        available_mb: available,
        ...(options.errno !== undefined ? { errno: options.errno } : {})
      })
  )

/**
 * The typed error for a failed file-system call: `what` says what was being done ("create the
 * VM folder"), `bytes` how much a write needed (for ENOSPC).
 */
export const fsError = (what: string, path: string, cause: unknown, bytes = 0): Effect.Effect<never, FsError> => {
  const errno = errnoOf(cause)
  const reason =
    (errno !== undefined ? REASONS[errno] : undefined) ?? (cause instanceof Error ? cause.message : String(cause))
  const message = `cannot ${what} ${path}: ${reason}${errno !== undefined ? ` (${errno})` : ""}`
  const fields = { message, subject: path, ...(errno !== undefined ? { errno } : {}) }
  switch (errno) {
    case "ENOENT":
      return Effect.fail(new NotFound(fields))
    case "EACCES":
    case "EPERM":
    case "EROFS":
      return Effect.fail(new AccessDenied(fields))
    case "EISDIR":
    case "ENOTDIR":
    case "EEXIST":
    case "ELOOP":
    case "ENAMETOOLONG":
      return Effect.fail(new InvalidSpec(fields))
    case "ENOSPC":
    case "EDQUOT":
      return Effect.flatMap(
        diskFull(`cannot ${what} ${path} (${errno})`, path, { neededBytes: bytes, errno }),
        Effect.fail
      )
    default:
      return Effect.fail(new Internal(fields))
  }
}

/** Runs one promise-returning fs call, its failure typed by `fsError`. */
export const attempt = <A>(what: string, path: string, run: () => Promise<A>, bytes = 0): Effect.Effect<A, FsError> =>
  Effect.catchAll(Effect.tryPromise({ try: run, catch: (cause) => cause }), (cause) =>
    fsError(what, path, cause, bytes)
  )

const isMissing = (error: FsError) => error.errno === "ENOENT" || error.errno === "ENOTDIR"

export const readFileString = (path: string): Effect.Effect<string, FsError> =>
  attempt("read", path, () => nodeFs.readFile(path, "utf8"))

/** The file's text, or none when it does not exist. */
export const readFileStringIfExists = (path: string): Effect.Effect<Option.Option<string>, FsError> =>
  readFileString(path).pipe(
    Effect.map(Option.some),
    Effect.catchIf(isMissing, () => Effect.succeed(Option.none()))
  )

/**
 * A folder's entries; a folder that does not exist has none. Listed synchronously: one system
 * call that no special file can stall (a FIFO is ENOTDIR at once), where the round trip through
 * libuv's thread pool was the largest part of an MCP list_vms.
 */
export const listDirectory = (path: string): Effect.Effect<ReadonlyArray<string>, FsError> =>
  listed(path, () => readdirSync(path))

export const listDirectoryEntries = (path: string): Effect.Effect<ReadonlyArray<Dirent>, FsError> =>
  listed(path, () => readdirSync(path, { withFileTypes: true }))

/** A missing folder lists empty, decided on Node's error (no typed error made only to be caught). */
const listed = <A>(path: string, read: () => A[]): Effect.Effect<ReadonlyArray<A>, FsError> =>
  Effect.suspend(() => {
    try {
      return Effect.succeed(read())
    } catch (cause) {
      return errnoOf(cause) === "ENOENT" ? Effect.succeed([]) : fsError("list", path, cause)
    }
  })

/** Thrown by `openRegularFile` for a FIFO, a device or a socket, so callers branch on `code` as on errno. */
export const NOT_REGULAR = "ENOTREG"

/**
 * Opens `path` for reading without blocking and checks it is a regular file before any read: a
 * FIFO, a device (`/dev/zero`) or a socket throws `NOT_REGULAR` at once instead of stalling or
 * reading forever, a folder throws EISDIR. Returns the descriptor (the caller closes it) and size.
 */
const openRegularFile = (path: string): { readonly fd: number; readonly size: number } => {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK)
  try {
    const info = fstatSync(fd)
    if (info.isFile()) return { fd, size: info.size }
    const code = info.isDirectory() ? "EISDIR" : NOT_REGULAR
    throw Object.assign(new Error(info.isDirectory() ? "it is a directory" : "not a regular file"), { code })
  } catch (error) {
    closeSync(fd)
    throw error
  }
}

/** Reads `length` bytes of `fd` from `from` (fewer when the file shrank meanwhile). */
const readRange = (fd: number, from: number, length: number): Buffer => {
  const buffer = Buffer.alloc(length)
  return buffer.subarray(0, readSync(fd, buffer, 0, length, from))
}

/**
 * A small file's text, read synchronously: for the files a listing reads on every call (vm.toml,
 * pidfiles), where a thread-pool round trip per file cost more than the read. Throws Node's errno
 * errors, `NOT_REGULAR` for a special file, and EFBIG for a file over `maxBytes`.
 */
export const readSmallFileSync = (path: string, maxBytes: number): string => {
  const { fd, size } = openRegularFile(path)
  try {
    if (size > maxBytes) throw Object.assign(new Error(`larger than ${maxBytes} bytes`), { code: "EFBIG" })
    return readRange(fd, 0, size).toString("utf8")
  } finally {
    closeSync(fd)
  }
}

/**
 * The last `maxBytes` of a regular file as text, starting at a line boundary; a file that does
 * not exist is empty. A FIFO, a device (`/dev/zero`) or a folder at `path` is a typed error,
 * never a stall or an endless read; a huge file costs `maxBytes`, not its size.
 */
export const readFileTail = (path: string, maxBytes: number): Effect.Effect<string, FsError> =>
  Effect.suspend(() => {
    let fd: number | undefined
    try {
      const opened = openRegularFile(path)
      fd = opened.fd
      const from = Math.max(0, opened.size - maxBytes)
      const text = readRange(fd, from, opened.size - from).toString("utf8")
      // Cut mid-file: the first line is partial (perhaps mid-character), so it is left out.
      return Effect.succeed(from === 0 ? text : text.slice(text.indexOf("\n") + 1))
    } catch (cause) {
      const errno = errnoOf(cause)
      if (errno === "ENOENT") return Effect.succeed("")
      if (errno === NOT_REGULAR || errno === "EISDIR")
        return Effect.fail(new InvalidSpec({ message: `cannot read ${path}: not a regular file`, subject: path }))
      return fsError("read", path, cause)
    } finally {
      if (fd !== undefined) closeSync(fd)
    }
  })

export const makeDirectory = (
  path: string,
  options: MakeDirectoryOptions = { recursive: true }
): Effect.Effect<void, FsError> => Effect.asVoid(attempt("create the folder", path, () => nodeFs.mkdir(path, options)))

/** Stats, or none when nothing is at `path`. */
export const statIfExists = (path: string): Effect.Effect<Option.Option<Stats>, FsError> =>
  attempt("inspect", path, () => nodeFs.stat(path)).pipe(
    Effect.map(Option.some),
    Effect.catchIf(isMissing, () => Effect.succeed(Option.none()))
  )

export const exists = (path: string): Effect.Effect<boolean, FsError> => Effect.map(statIfExists(path), Option.isSome)

/** Whether anything is at `path`, where a failure to look (EACCES, …) counts as nothing there. */
export const isPresent = (path: string): Effect.Effect<boolean> =>
  Effect.promise(() =>
    nodeFs.stat(path).then(
      () => true,
      () => false
    )
  )

export const remove = (
  path: string,
  options: RmOptions = { recursive: true, force: true }
): Effect.Effect<void, FsError> => attempt("remove", path, () => nodeFs.rm(path, options))

/** Replaces `path` atomically (temp file, fsync, rename): readers see the old or the new content. */
export const writeFileAtomic = (path: string, data: string | Uint8Array, mode?: number): Effect.Effect<void, FsError> =>
  attempt(
    "write",
    path,
    () => writeAtomicPromise(path, data, mode),
    typeof data === "string" ? Buffer.byteLength(data) : data.byteLength
  )

/**
 * Puts the folder `staged` at `dest` and runs `then` (the writes that name it): when `then` fails,
 * the folder that was at `dest` before is back and the staged one is gone; when it succeeds, the
 * old folder is removed. One change as far as a reader after a failure can tell.
 */
export const replaceDirectoryThen = <A, E, R>(
  staged: string,
  dest: string,
  then: Effect.Effect<A, E, R>
): Effect.Effect<A, E | FsError, R> =>
  Effect.gen(function* () {
    const previous = `${dest}.replaced-${process.pid}-${Date.now().toString(36)}`
    const hadPrevious = yield* exists(dest)
    if (hadPrevious) yield* attempt("move aside", dest, () => nodeFs.rename(dest, previous))
    const putBack = hadPrevious
      ? attempt("restore", dest, () => nodeFs.rename(previous, dest)).pipe(Effect.ignore)
      : Effect.void
    yield* attempt("install", dest, () => nodeFs.rename(staged, dest)).pipe(Effect.tapError(() => putBack))
    const result = yield* then.pipe(Effect.tapError(() => Effect.zipRight(remove(dest).pipe(Effect.ignore), putBack)))
    if (hadPrevious) yield* remove(previous).pipe(Effect.ignore)
    return result
  })
