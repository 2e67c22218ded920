import { Layer } from "effect"
import { homedir } from "node:os"
import { isAbsolute, join } from "node:path"
import { ConfigDbLive, type ConfigDb } from "./db.js"
import { ConfigStoreLive, type ConfigStore } from "./config-store.js"
import { ProfilesLive, type Profiles } from "./mcp-profiles.js"
import { OAuthProfilesLive, type OAuthProfiles } from "./oauth-profiles.js"

/**
 * Where a tool keeps its per-user config.db: `$XDG_CONFIG_HOME/<tool>/config.db`, else
 * `~/.config/<tool>/config.db`. A relative XDG_CONFIG_HOME is ignored, as the XDG spec says.
 */
export const configDbPath = (tool: string, env: NodeJS.ProcessEnv = process.env, home: string = homedir()): string => {
  const xdg = env["XDG_CONFIG_HOME"]
  const base = xdg !== undefined && xdg !== "" && isAbsolute(xdg) ? xdg : join(home, ".config")
  return join(base, tool, "config.db")
}

/** Every store of a tool's config.db over one scoped handle. */
export const ToolStoreLive = (path: string): Layer.Layer<ConfigDb | ConfigStore | Profiles | OAuthProfiles> =>
  Layer.provideMerge(Layer.mergeAll(ConfigStoreLive, ProfilesLive, OAuthProfilesLive), ConfigDbLive(path))
