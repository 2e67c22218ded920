import type { Config } from "@oclif/core"
import { Effect, Option } from "effect"
import { Profiles, type McpProfile } from "../store/index.js"
import { withStore } from "../runtime/store.js"
import { ToolkitError } from "../runtime/errors.js"
import { commandIds, resolveEntry, sortIds } from "../runtime/tree.js"

export const DEFAULT_PROFILE = "default"
/** The built-in default: the whole interpreters topic. */
export const BUILT_IN_DEFAULT: McpProfile = { name: DEFAULT_PROFILE, include: ["interpreters"] }
export const DEFAULT_HOST = "127.0.0.1"
export const DEFAULT_PORT = 5100

export interface LoadedProfile {
  readonly profile: McpProfile
  readonly builtIn: boolean
}

/** A saved profile, or the built-in default when `default` is asked for and none is saved. */
export const loadProfile = async (configDb: string, name: string): Promise<LoadedProfile> => {
  const saved = await withStore(
    configDb,
    Effect.flatMap(Profiles, (profiles) => profiles.get(name))
  )
  if (Option.isSome(saved)) return { profile: saved.value, builtIn: false }
  if (name === DEFAULT_PROFILE) return { profile: BUILT_IN_DEFAULT, builtIn: true }
  throw new ToolkitError(`MCP profile '${name}' does not exist`)
}

/** The built-in default (unless a profile named default is saved) and every saved profile, by name. */
export const listProfiles = async (configDb: string): Promise<LoadedProfile[]> => {
  const saved = await withStore(
    configDb,
    Effect.flatMap(Profiles, (profiles) => profiles.list)
  )
  const all: LoadedProfile[] = saved.map((profile) => ({ profile, builtIn: false }))
  if (!saved.some((p) => p.name === DEFAULT_PROFILE)) all.push({ profile: BUILT_IN_DEFAULT, builtIn: true })
  return all.sort((a, b) => (a.profile.name < b.profile.name ? -1 : a.profile.name > b.profile.name ? 1 : 0))
}

export interface Resolved {
  /** Command ids to serve, in tree order, without duplicates. */
  readonly ids: string[]
  readonly unresolved: string[]
  readonly neverExposed: string[]
  readonly unknown: string[]
}

export const resolveProfile = (config: Config, include: ReadonlyArray<string>): Resolved => {
  const all = commandIds(config)
  const ids = new Set<string>()
  const unknown: string[] = []
  const neverExposed: string[] = []
  for (const entry of include) {
    const resolution = resolveEntry(entry, all)
    if (resolution.kind === "ok") for (const id of resolution.ids) ids.add(id)
    else if (resolution.kind === "unknown") unknown.push(entry)
    else neverExposed.push(entry)
  }
  return {
    ids: sortIds(ids),
    unresolved: include.filter((e) => unknown.includes(e) || neverExposed.includes(e)),
    neverExposed,
    unknown
  }
}
