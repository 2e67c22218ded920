import { readFile, stat } from "node:fs/promises"
import { homedir } from "node:os"
import { join, resolve } from "node:path"
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

const readConfig = async (path: string): Promise<Record<string, unknown>> => {
  let text: string
  try {
    text = await readFile(path, "utf8")
  } catch (error) {
    if ((error as { code?: string }).code === "ENOENT") return {}
    throw new AdminRefused(`cannot read ${path}: ${(error as Error).message}`, "internal")
  }
  if (text.trim() === "") return {}
  try {
    const parsed = JSON.parse(text) as unknown
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error("the top level is not an object")
    return parsed as Record<string, unknown>
  } catch (error) {
    throw new AdminRefused(`${path} is not a JSON object (${(error as Error).message}); fix or move it, then install again`, "invalid_spec")
  }
}

export interface InstallResult {
  readonly client: string
  readonly path?: string
  readonly json: string
}

/** Writes (or with `print`, only shows) the stoat entry, replacing that entry alone, atomically. */
export const install = async (client: ClientName, options: { project: boolean; print: boolean }, env: Environment = currentEnvironment()): Promise<InstallResult> => {
  const place = placeOf(client, options.project, env)
  const entry = entryFor(client, env)
  const json = JSON.stringify(entry, null, 2)
  if (options.print) return { client, json }
  const config = await readConfig(place.path)
  const servers = config[place.key]
  const merged = { ...config, [place.key]: { ...(typeof servers === "object" && servers !== null && !Array.isArray(servers) ? servers : {}), stoat: entry } }
  // Keep the file's own permissions (a client config may hold tokens); a new file is private.
  const mode = await stat(place.path).then((info) => info.mode & 0o777, () => 0o600)
  await writeFileAtomic(place.path, `${JSON.stringify(merged, null, 2)}\n`, mode).catch((error: Error) => {
    throw new AdminRefused(`cannot write ${place.path}: ${error.message}`, "internal")
  })
  return { client, path: place.path, json }
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
    const places = [placeOf(client, false, env), ...(client === "claude-code" || client === "vscode" ? [placeOf(client, true, env)] : [])]
    let found: ClientReport | undefined
    for (const place of places) {
      const entry = await entryIn(place)
      if (!entry) continue
      const command = typeof entry["command"] === "string" ? entry["command"] : undefined
      found = { client, path: place.path, installed: true, ...(command !== undefined ? { command } : {}), current: command === env.executable }
      break
    }
    clients.push(found ?? { client, path: places[0]!.path, installed: false, current: false })
  }
  return { contract: CONTRACT_VERSION, version: STOAT_VERSION, transport: "stdio", binary: env.executable, clients }
}
