import { Context, Layer } from "effect"

/**
 * The directory a project lives in: the CLI's working directory, or the MCP server's. Frontends
 * provide it; core never reads `process.cwd()`. Without it there is no project scope.
 */
export class ProjectDirectory extends Context.Tag("stoat/ProjectDirectory")<ProjectDirectory, { readonly dir: string }>() {
  static readonly layer = (dir: string) => Layer.succeed(ProjectDirectory, { dir })
}
