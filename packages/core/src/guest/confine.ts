/**
 * The host side of copy_to / copy_from. An agent may only touch the VM's shared folder
 * (`<root>/shared/<vm>/`), so a host path is resolved through its symlinks (up to the deepest
 * part that exists) and must lie inside that folder by path element. Resolving is not enough
 * against a path that changes after the check, so the file (or, for a write, its folder) is
 * then opened without following a final symlink and the opened descriptor's real path
 * (/proc/self/fd/N) is checked again; the copy itself goes through that descriptor's
 * /proc path, so a symlink swapped in afterwards changes nothing.
 *
 * A person at the CLI is not confined (`shared` undefined): any path they can read or write.
 */
import { constants, type Stats } from "node:fs"
import { lstat, open, readlink, realpath, type FileHandle } from "node:fs/promises"
import { basename, dirname, isAbsolute, join, resolve, sep } from "node:path"
import { Effect, type Scope } from "effect"
import { AccessDenied, NotFound, Usage } from "../errors.js"
import * as fs from "../platform/fs.js"

export type ConfineError = AccessDenied | NotFound | Usage | fs.FsError

const errno = (cause: unknown) => (cause as { code?: unknown } | null)?.code

const outside = (local: string, shared: string) =>
  new AccessDenied({
    message: `host path ${local} is outside the VM's shared folder ${shared}; copy tools only reach files under it`,
    subject: local
  })

export const isInside = (base: string, path: string): boolean =>
  path === base || path.startsWith(base.endsWith(sep) ? base : `${base}${sep}`)

const kindOf = (info: Stats) =>
  info.isDirectory()
    ? "a directory"
    : info.isFIFO()
      ? "a FIFO"
      : info.isCharacterDevice() || info.isBlockDevice()
        ? "a device"
        : info.isSocket()
          ? "a socket"
          : "not a regular file"

/**
 * `local` made absolute (relative to the shared folder when confined, else it must already be
 * absolute) and resolved through symlinks as far as it exists, the rest appended. Confined, the
 * result must be inside the shared folder's real path.
 */
export const resolveHostPath = (local: string, shared: string | undefined): Effect.Effect<string, ConfineError> =>
  Effect.gen(function* () {
    if (local === "" || local.includes("\0"))
      return yield* new Usage({ message: "the host path is empty or contains NUL", subject: "local" })
    if (shared === undefined && !isAbsolute(local))
      return yield* new Usage({ message: `host path ${local} must be absolute`, subject: local })
    const base = shared === undefined ? undefined : yield* fs.attempt("resolve", shared, () => realpath(shared))
    const candidate = shared === undefined ? resolve(local) : resolve(shared, local)
    // The deepest part that exists (as anything, a dangling symlink included), and the names below it.
    let head = candidate
    const tail: string[] = []
    for (;;) {
      const found = yield* Effect.tryPromise({ try: () => lstat(head), catch: (cause) => cause }).pipe(
        Effect.map(() => true),
        Effect.catchIf(
          (cause) => errno(cause) === "ENOENT" || errno(cause) === "ENOTDIR",
          () => Effect.succeed(false)
        ),
        Effect.catchAll((cause) => fs.fsError("inspect", head, cause))
      )
      if (found || head === dirname(head)) break
      tail.unshift(basename(head))
      head = dirname(head)
    }
    const real = yield* Effect.tryPromise({ try: () => realpath(head), catch: (cause) => cause }).pipe(
      Effect.catchAll((cause) =>
        errno(cause) === "ENOENT" || errno(cause) === "ELOOP"
          ? Effect.fail(
              shared === undefined
                ? new NotFound({
                    message: `host path ${local} goes through a dangling symlink (${head})`,
                    subject: local
                  })
                : new AccessDenied({
                    message: `host path ${local} goes through a dangling symlink (${head}); copy tools refuse it`,
                    subject: local
                  })
            )
          : fs.fsError("resolve", head, cause)
      )
    )
    const resolved = join(real, ...tail)
    if (base !== undefined && !isInside(base, resolved)) return yield* outside(local, shared!)
    return resolved
  })

/** The descriptor's real path, checked against the shared folder's real path. */
const verifyOpened = (handle: FileHandle, local: string, shared: string | undefined) =>
  Effect.gen(function* () {
    if (shared === undefined) return
    const base = yield* fs.attempt("resolve", shared, () => realpath(shared))
    const real = yield* fs.attempt("inspect", local, () => readlink(`/proc/self/fd/${handle.fd}`))
    if (!isInside(base, real)) return yield* outside(local, shared)
  })

const openHandle = (
  path: string,
  flags: number,
  local: string,
  shared: string | undefined
): Effect.Effect<FileHandle, ConfineError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.tryPromise({ try: () => open(path, flags), catch: (cause) => cause }).pipe(
      Effect.catchAll((cause) =>
        errno(cause) === "ELOOP" && shared !== undefined
          ? Effect.fail(
              new AccessDenied({
                message: `host path ${local} became a symlink while it was being copied; refused`,
                subject: local
              })
            )
          : fs.fsError("open", local, cause)
      )
    ),
    (handle) => Effect.promise(() => handle.close().catch(() => undefined))
  )

/**
 * Opens a resolved host file for reading: a regular file, re-checked through its descriptor.
 * Returns the /proc path to read it by (the same open file, whatever the name points to now).
 */
export const openForRead = (
  resolved: string,
  local: string,
  shared: string | undefined
): Effect.Effect<{ readonly path: string; readonly size: number }, ConfineError, Scope.Scope> =>
  Effect.gen(function* () {
    // O_NONBLOCK: opening a FIFO must not wait for a writer before we can refuse it.
    const handle = yield* openHandle(
      resolved,
      constants.O_RDONLY | constants.O_NONBLOCK | (shared === undefined ? 0 : constants.O_NOFOLLOW),
      local,
      shared
    )
    const info = yield* fs.attempt("inspect", local, () => handle.stat())
    if (!info.isFile())
      return yield* new Usage({
        message: `host path ${local} is ${kindOf(info)}; only regular files are copied`,
        subject: local
      })
    yield* verifyOpened(handle, local, shared)
    return { path: `/proc/self/fd/${handle.fd}`, size: info.size }
  })

/**
 * Opens the folder a resolved host file is to be written into, re-checked through its
 * descriptor, and refuses a target that is a directory or a special file. Returns the path to
 * write by: the name inside the opened folder, reached through /proc so a folder swapped for a
 * symlink afterwards is not followed. (The transport writes a temp file there and renames it.)
 */
export const openForWrite = (
  resolved: string,
  local: string,
  shared: string | undefined
): Effect.Effect<string, ConfineError, Scope.Scope> =>
  Effect.gen(function* () {
    const folder = dirname(resolved)
    const handle = yield* openHandle(
      folder,
      constants.O_RDONLY | constants.O_DIRECTORY | (shared === undefined ? 0 : constants.O_NOFOLLOW),
      local,
      shared
    )
    yield* verifyOpened(handle, local, shared)
    const path = `/proc/self/fd/${handle.fd}/${basename(resolved)}`
    const existing = yield* fs.statIfExists(path)
    if (existing._tag === "Some" && !existing.value.isFile())
      return yield* new Usage({
        message: `host path ${local} is ${kindOf(existing.value)}; copy_from writes regular files`,
        subject: local
      })
    return path
  })
