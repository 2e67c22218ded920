import { readdirSync, statSync } from "node:fs"
import { stat } from "node:fs/promises"
import { join } from "node:path"
import { Context, Effect, Either, Layer } from "effect"
import { DataRoot, isReservedDir } from "../platform/data-root.js"
import { adviseLookup, internalError, NotFound } from "../errors.js"
import { isNotFound } from "../platform/files.js"
import { byName, closest } from "../platform/names.js"
import { parseVmToml, renderVmToml, salvageSshPort, type VmConfig } from "./config.js"
import * as fs from "../platform/fs.js"
import type { FsError } from "../platform/fs.js"

export type VmRecord =
  | { readonly kind: "ok"; readonly name: string; readonly dir: string; readonly config: VmConfig }
  | {
      readonly kind: "broken"
      readonly name: string
      readonly dir: string
      readonly reason: string
      readonly sshport?: number
    }

/** The VMs of a data root, read fresh from disk on every call: vm.toml is authoritative. */
export class VmStore extends Context.Tag("stoat/VmStore")<
  VmStore,
  {
    /** Every VM, broken ones included, sorted by name. */
    readonly list: Effect.Effect<ReadonlyArray<VmRecord>, FsError>
    /** One VM; not_found names the closest existing VM. */
    readonly get: (name: string) => Effect.Effect<VmRecord, FsError>
    readonly exists: (name: string) => Effect.Effect<boolean>
    /** Replaces vm.toml atomically. */
    readonly write: (name: string, config: VmConfig) => Effect.Effect<void, FsError>
    readonly remove: (name: string) => Effect.Effect<void, FsError>
  }
>() {}

const unreadableReason = (code: string | undefined, error: unknown): string =>
  code === "EISDIR"
    ? "vm.toml is a directory, not a file"
    : code === "EACCES" || code === "EPERM"
      ? "vm.toml cannot be read: permission denied"
      : `vm.toml cannot be read: ${error instanceof Error ? error.message : String(error)}`

/**
 * A notice (an unknown vm.toml key) once per store: stderr only, since stdout carries `--json`
 * and MCP stdio, and a server reading the same file on every call says it once.
 */
const stderrOnce = (): ((message: string) => void) => {
  const seen = new Set<string>()
  return (message) => {
    if (seen.has(message)) return
    seen.add(message)
    process.stderr.write(`warning: ${message}\n`)
  }
}

/** Far beyond any real vm.toml; a larger file is a broken VM, not a read of gigabytes. */
const VM_TOML_MAX_BYTES = 1024 * 1024

/**
 * Read synchronously: a listing reads every vm.toml on every call, and one thread-pool round trip
 * per file cost more than the read. The file is checked before it is read, so a FIFO or a device
 * planted as vm.toml makes a broken VM at once instead of a stalled listing.
 */
const readVmRecord = (name: string, dir: string, warn: (message: string) => void): VmRecord | undefined => {
  let text: string
  try {
    text = fs.readSmallFileSync(join(dir, "vm.toml"), VM_TOML_MAX_BYTES)
  } catch (error) {
    const code = (error as { code?: string }).code
    if (isNotFound(error) || code === "ENOTDIR") return undefined
    // A vm.toml that exists but cannot be read is a broken VM: listed with the reason, and deletable.
    return { kind: "broken", name, dir, reason: unreadableReason(code, error) }
  }
  const parsed = parseVmToml(text)
  if (Either.isLeft(parsed)) {
    const sshport = salvageSshPort(text)
    return { kind: "broken", name, dir, reason: parsed.left, ...(sshport !== undefined ? { sshport } : {}) }
  }
  for (const key of parsed.right.unknownKeys) warn(`${name}/vm.toml: unknown key "${key}" ignored`)
  return { kind: "ok", name, dir, config: parsed.right.config }
}

/** How long after a folder's last change its listing may be kept: past any file-system clock tick. */
const SETTLED_NS = 1_000_000_000n

/**
 * The candidate VM folders of the data root, listed again only when the root's mtime moved: a
 * folder made, removed or renamed there changes it, and one stat costs a third of a listing that
 * every VM listing and every unknown name pays. A listing taken less than a second after the
 * root's last change is not kept, since a change within the same clock tick can leave the mtime as
 * it was (git's "racily clean" rule). What is inside each folder (its vm.toml) is read every time.
 */
const folderLister = (path: string): (() => ReadonlyArray<string>) => {
  let kept: { readonly mtimeNs: bigint; readonly names: ReadonlyArray<string> } | undefined
  return () => {
    try {
      const info = statSync(path, { bigint: true, throwIfNoEntry: false })
      if (info === undefined) {
        kept = undefined
        return []
      }
      if (kept !== undefined && kept.mtimeNs === info.mtimeNs) return kept.names
      const names = readdirSync(path, { withFileTypes: true })
        .filter((entry) => entry.isDirectory() && !isReservedDir(entry.name))
        .map((entry) => entry.name)
      const settled = BigInt(Date.now()) * 1_000_000n - info.mtimeNs > SETTLED_NS
      kept = settled ? { mtimeNs: info.mtimeNs, names } : undefined
      return names
    } catch (cause) {
      kept = undefined
      throw cause
    }
  }
}

export const notFoundVm = (name: string, known: ReadonlyArray<string>): NotFound => {
  const hint = closest(name, known)
  return new NotFound({
    message: `no VM "${name}"${hint ? ` (did you mean "${hint}"?)` : ""}`,
    subject: name,
    hint: adviseLookup("vm.list")
  })
}

export const VmStoreLive = Layer.effect(
  VmStore,
  Effect.map(DataRoot, (root) => {
    const warn = stderrOnce()
    const folders = folderLister(root.root)
    const unreadable = internalError(`cannot read ${root.root}`)
    // One step, every part synchronous: every MCP list_vms and every unknown VM name runs it.
    const list: Effect.Effect<ReadonlyArray<VmRecord>, FsError> = Effect.suspend(() => {
      let names: ReadonlyArray<string>
      try {
        names = folders()
      } catch (cause) {
        return fs.fsError("list", root.root, cause)
      }
      try {
        const records: VmRecord[] = []
        for (const name of names) {
          const record = readVmRecord(name, root.vmDir(name), warn)
          if (record) records.push(record)
        }
        return Effect.succeed(records.sort(byName))
      } catch (cause) {
        return Effect.fail(unreadable(cause))
      }
    })
    const get = (name: string) =>
      Effect.gen(function* () {
        const record = isReservedDir(name)
          ? undefined
          : yield* Effect.try({
              try: () => readVmRecord(name, root.vmDir(name), warn),
              catch: internalError(`cannot read VM ${name}`)
            })
        if (record) return record
        const all = yield* list
        return yield* notFoundVm(
          name,
          all.map((vm) => vm.name)
        )
      })
    return {
      list,
      get,
      exists: (name: string) =>
        Effect.promise(() =>
          stat(join(root.vmDir(name), "vm.toml")).then(
            () => true,
            () => false
          )
        ),
      write: (name: string, config: VmConfig) =>
        fs.writeFileAtomic(join(root.vmDir(name), "vm.toml"), renderVmToml(config)),
      remove: (name: string) => Effect.zipRight(fs.remove(root.vmDir(name)), fs.remove(root.sharedDir(name)))
    }
  })
)
