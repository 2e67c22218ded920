import { readFile, stat } from "node:fs/promises"
import { homedir } from "node:os"
import { join, resolve } from "node:path"
import { applyEdits, format, modify, parse as parseJsonc, printParseErrorCode, type ParseError } from "jsonc-parser"
import { CONTRACT_VERSION } from "@stoat/wire"
import { STOAT_VERSION, writeFileAtomic } from "@stoat/core"

export const CLIENTS = ["claude-code", "claude-desktop", "cursor", "vscode"] as const
export type ClientName = (typeof CLIENTS)[number]

/** A refusal of an admin command: one line for the person, exit status 2 (usage) or 1. */
export class AdminRefused extends Error {
  override readonly name = "AdminRefused"
  constructor(
    message: string,
    readonly code: "usage" | "internal" | "invalid_spec" = "usage"
  ) {
    super(message)
  }
}

export interface InstallPlace {
  readonly path: string
  /** The object that holds server entries: `mcpServers`, or `servers` for VS Code. */
  readonly key: "mcpServers" | "servers"
}

export interface Environment {
  readonly home: string
  readonly cwd: string
  readonly platform: NodeJS.Platform
  /** The absolute Stoat executable the entry launches. */
  readonly executable: string
}

export const currentEnvironment = (): Environment => ({
  home: homedir(),
  cwd: process.cwd(),
  platform: process.platform,
  executable: resolve(process.argv[1] ?? "stoat")
})

/** Where each client keeps its entry. Claude Code and VS Code have a project file; the others only a user file. */
export const placeOf = (client: ClientName, project: boolean, env: Environment): InstallPlace => {
  if (project && (client === "claude-desktop" || client === "cursor")) {
    throw new AdminRefused(`${client} has no project entry; run stoat mcp install ${client} without --project`)
  }
  switch (client) {
    case "claude-code":
      return { path: project ? join(env.cwd, ".mcp.json") : join(env.home, ".claude.json"), key: "mcpServers" }
    case "claude-desktop":
      return {
        path:
          env.platform === "darwin"
            ? join(env.home, "Library", "Application Support", "Claude", "claude_desktop_config.json")
            : join(env.home, ".config", "Claude", "claude_desktop_config.json"),
        key: "mcpServers"
      }
    case "cursor":
      return { path: join(env.home, ".cursor", "mcp.json"), key: "mcpServers" }
    case "vscode":
      return {
        path: project
          ? join(env.cwd, ".vscode", "mcp.json")
          : env.platform === "darwin"
            ? join(env.home, "Library", "Application Support", "Code", "User", "mcp.json")
            : join(env.home, ".config", "Code", "User", "mcp.json"),
        key: "servers"
      }
  }
}

/** The stdio entry: the absolute executable, the single argument mcp, and the working directory. */
export const entryFor = (client: ClientName, env: Environment): Record<string, unknown> => ({
  ...(client === "vscode" ? { type: "stdio" } : {}),
  command: env.executable,
  args: ["mcp"],
  cwd: env.cwd
})

/** The config file's text ("" when it does not exist yet). */
const readText = async (path: string): Promise<string> => {
  try {
    return await readFile(path, "utf8")
  } catch (error) {
    if ((error as { code?: string }).code === "ENOENT") return ""
    throw new AdminRefused(`cannot read ${path}: ${(error as Error).message}`, "internal")
  }
}

/**
 * A client config as data. Read as JSONC (comments, trailing commas), which VS Code's mcp.json
 * allows and strict JSON is a subset of.
 */
const parseConfig = (path: string, text: string): Record<string, unknown> => {
  if (text.trim() === "") return {}
  const errors: ParseError[] = []
  const parsed = parseJsonc(text, errors, { allowTrailingComma: true, disallowComments: false }) as unknown
  const problem =
    errors.length > 0
      ? `${printParseErrorCode(errors[0]!.error)} at offset ${errors[0]!.offset}`
      : typeof parsed !== "object" || parsed === null || Array.isArray(parsed)
        ? "the top level is not an object"
        : undefined
  if (problem !== undefined)
    throw new AdminRefused(`${path} is not a JSON object (${problem}); fix or move it, then try again`, "invalid_spec")
  return parsed as Record<string, unknown>
}

const readConfig = async (path: string): Promise<Record<string, unknown>> => parseConfig(path, await readText(path))

const FORMAT = { insertSpaces: true, tabSize: 2, eol: "\n" }

/**
 * Sets (or with undefined, removes) the stoat entry in the config's text by editing only that
 * span, so the file's comments, order and layout stay as they were. Undefined: nothing to change.
 */
const editEntry = (
  path: string,
  text: string,
  key: InstallPlace["key"],
  entry: Record<string, unknown> | undefined
): string | undefined => {
  const config = parseConfig(path, text)
  const servers = config[key]
  const hasServers = typeof servers === "object" && servers !== null && !Array.isArray(servers)
  if (entry === undefined && !(hasServers && "stoat" in servers)) return undefined
  if (text.trim() === "") return `${JSON.stringify({ [key]: { stoat: entry } }, null, 2)}\n`
  // A servers value that is not an object is replaced by one holding the entry alone.
  const edits =
    hasServers || entry === undefined
      ? modify(text, [key, "stoat"], entry, {})
      : modify(text, [key], { stoat: entry }, {})
  let edited = text
  for (const edit of [...edits].sort((left, right) => right.offset - left.offset)) {
    edited = edited.slice(0, edit.offset) + edit.content + edited.slice(edit.offset + edit.length)
    // Only the inserted JSON is laid out; the library's own formatting would redo whole neighbouring lines.
    if (edit.content.length > 0)
      edited = applyEdits(edited, format(edited, { offset: edit.offset, length: edit.content.length }, FORMAT))
  }
  return edited.endsWith("\n") ? edited : `${edited}\n`
}

/** Writes the config atomically, keeping the file's own permissions (a client config may hold tokens); a new file is private. */
const writeConfig = async (path: string, text: string): Promise<void> => {
  const mode = await stat(path).then(
    (info) => info.mode & 0o777,
    () => 0o600
  )
  await writeFileAtomic(path, text, mode).catch((error: Error) => {
    throw new AdminRefused(`cannot write ${path}: ${error.message}`, "internal")
  })
}

export interface InstallResult {
  readonly client: string
  readonly path?: string
  readonly json: string
}

/** Writes (or with `print`, only shows) the stoat entry, replacing that entry alone, atomically. */
export const install = async (
  client: ClientName,
  options: { project: boolean; print: boolean },
  env: Environment = currentEnvironment()
): Promise<InstallResult> => {
  const place = placeOf(client, options.project, env)
  const entry = entryFor(client, env)
  const json = JSON.stringify(entry, null, 2)
  if (options.print) return { client, json }
  await writeConfig(place.path, editEntry(place.path, await readText(place.path), place.key, entry)!)
  return { client, path: place.path, json }
}

export interface UninstallResult {
  readonly client: string
  readonly path: string
  /** False when there was no stoat entry to remove (nothing was written). */
  readonly removed: boolean
}

/** Removes the stoat entry alone, keeping everything else in the file (comments included). */
export const uninstall = async (
  client: ClientName,
  options: { project: boolean },
  env: Environment = currentEnvironment()
): Promise<UninstallResult> => {
  const place = placeOf(client, options.project, env)
  const edited = editEntry(place.path, await readText(place.path), place.key, undefined)
  if (edited !== undefined) await writeConfig(place.path, edited)
  return { client, path: place.path, removed: edited !== undefined }
}

export interface ClientReport {
  readonly client: string
  readonly path?: string
  readonly installed: boolean
  readonly command?: string
  /** False when the entry launches a different Stoat executable (stale). */
  readonly current: boolean
}

const entryIn = async (place: InstallPlace): Promise<Record<string, unknown> | undefined> => {
  const config = await readConfig(place.path).catch(() => ({}) as Record<string, unknown>)
  const servers = config[place.key] as Record<string, unknown> | undefined
  const entry = servers?.["stoat"]
  return typeof entry === "object" && entry !== null ? (entry as Record<string, unknown>) : undefined
}

/** `mcp doctor`: the contract, the transport, this executable, and the stoat entry of each client Stoat writes. */
export const doctor = async (env: Environment = currentEnvironment()) => {
  const clients: ClientReport[] = []
  for (const client of CLIENTS) {
    const places = [
      placeOf(client, false, env),
      ...(client === "claude-code" || client === "vscode" ? [placeOf(client, true, env)] : [])
    ]
    let found: ClientReport | undefined
    for (const place of places) {
      const entry = await entryIn(place)
      if (!entry) continue
      const command = typeof entry["command"] === "string" ? entry["command"] : undefined
      found = {
        client,
        path: place.path,
        installed: true,
        ...(command !== undefined ? { command } : {}),
        current: command === env.executable
      }
      break
    }
    clients.push(found ?? { client, path: places[0]!.path, installed: false, current: false })
  }
  return { contract: CONTRACT_VERSION, version: STOAT_VERSION, transport: "stdio", binary: env.executable, clients }
}
