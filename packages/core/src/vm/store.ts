import { readFile, stat } from "node:fs/promises"
import { join } from "node:path"
import { Context, Effect, Either, Layer } from "effect"
import { DataRoot, isReservedDir } from "../platform/data-root.js"
import { NotFound, internalError } from "../errors.js"
import { isNotFound } from "../platform/files.js"
import { byName, closest } from "./names.js"
import { parseVmToml, renderVmToml, salvageSshPort, type VmConfig } from "./config.js"
import * as fs from "../platform/fs.js"
import type { FsError } from "../platform/fs.js"

export type VmRecord =
  | { readonly kind: "ok"; readonly name: string; readonly dir: string; readonly config: VmConfig }
  | { readonly kind: "broken"; readonly name: string; readonly dir: string; readonly reason: string; readonly sshport?: number }

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

const readVmRecord = async (name: string, dir: string, warn: (message: string) => void): Promise<VmRecord | undefined> => {
  let text: string
  try {
    text = await readFile(join(dir, "vm.toml"), "utf8")
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

export const notFoundVm = (name: string, known: ReadonlyArray<string>): NotFound => {
  const hint = closest(name, known)
  return new NotFound({ message: `no VM "${name}"${hint ? ` (did you mean "${hint}"?)` : ""}; see stoat ls`, subject: name })
}

export const VmStoreLive = Layer.effect(
  VmStore,
  Effect.map(DataRoot, (root) => {
    const warn = stderrOnce()
    const list = Effect.flatMap(fs.listDirectoryEntries(root.root), (entries) =>
      Effect.tryPromise({
        try: async () => {
          const names = entries.filter((entry) => entry.isDirectory() && !isReservedDir(entry.name)).map((entry) => entry.name)
          const records = await Promise.all(names.map((name) => readVmRecord(name, root.vmDir(name), warn)))
          return records.filter((record): record is VmRecord => record !== undefined).sort(byName)
        },
        catch: internalError(`cannot read ${root.root}`)
      })
    )
    const get = (name: string) =>
      Effect.gen(function* () {
        const record = isReservedDir(name)
          ? undefined
          : yield* Effect.tryPromise({ try: () => readVmRecord(name, root.vmDir(name), warn), catch: internalError(`cannot read VM ${name}`) })
        if (record) return record
        const all = yield* list
        return yield* notFoundVm(name, all.map((vm) => vm.name))
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
      write: (name: string, config: VmConfig) => fs.writeFileAtomic(join(root.vmDir(name), "vm.toml"), renderVmToml(config)),
      remove: (name: string) => Effect.zipRight(fs.remove(root.vmDir(name)), fs.remove(root.sharedDir(name)))
    }
  })
)
