import { appendFile, open, readFile, stat } from "node:fs/promises"
import { join } from "node:path"
import { Context, Effect, Layer, Option } from "effect"
import { advise, internalError, NameTaken, NotFound, type StoatError } from "../errors.js"
import { defaultProjectName, PROJECT_FILE, projectOf, type Project } from "./file.js"

/**
 * The project scope of a frontend: the folder whose `stoat.toml` bare commands and project tools
 * act on. The CLI gives its working directory, the MCP server the directory it was started in;
 * core never asks the process. Without a folder (an embedder, a unit test) there is no project.
 */
export interface ProjectScopeApi {
  readonly dir: string | undefined
  /** The folder's project, none without a stoat.toml; a malformed file is its typed error. */
  readonly current: Effect.Effect<Option.Option<Project>, StoatError>
  /** The project, or not_found advising to create one (or to name a VM). */
  readonly require: Effect.Effect<Project, StoatError>
}

const noProject = (dir: string | undefined) =>
  new NotFound({
    message: `no ${PROJECT_FILE} in ${dir ?? "this server's working directory"} (project scope reads only the working directory, not its parents); use the commands and tools that name a VM`,
    subject: PROJECT_FILE,
    hint: advise("or create one there", { operation: "project.init", input: {} })
  })

export const projectScopeAt = (dir: string | undefined): ProjectScopeApi => {
  const current = dir === undefined ? Effect.succeed(Option.none<Project>()) : projectOf(dir)
  return {
    dir,
    current,
    require: Effect.flatMap(
      current,
      Option.match({ onNone: () => Effect.fail(noProject(dir)), onSome: Effect.succeed })
    )
  }
}

export class ProjectScope extends Context.Reference<ProjectScope>()("stoat/ProjectScope", {
  defaultValue: (): ProjectScopeApi => projectScopeAt(undefined)
}) {}

/** The project scope of folder `dir` (a frontend's working directory). */
export const projectScopeLayer = (dir: string): Layer.Layer<never> => Layer.succeed(ProjectScope, projectScopeAt(dir))

/** The declaration a bare VM argument names: a declaration key first, then it is a VM name as given. */
export const resolveVmArgument = (name: string): Effect.Effect<string, StoatError> =>
  Effect.gen(function* () {
    const scope = yield* ProjectScope
    if (scope.dir === undefined) return name
    const project = yield* scope.current
    if (Option.isNone(project)) return name
    return project.value.vms.find((vm) => vm.key === name)?.name ?? name
  })

const initTemplate = (name: string) => `# stoat.toml: the VMs of this project (stoat up, stoat status, stoat down).
schema = 1

[project]
name = "${name}"            # VM names default to "<project>-<key>"

# [limits]                  # optional; may only lower the account's limits
# max_vms = 4
# max_ram_mb = 8192

[vms.dev]                   # the key: stoat get dev, stoat up dev
image = "tiny"              # a catalog id (stoat images) or an image file relative to this file
# name = "${name}-dev"      # the VM's global name
cpus = 1
ram = 256                   # MiB
# disk = "8G"               # absolute size; fixed once created
# recipes = ["devtools"]    # applied by stoat up in dependency order
# shares = ["."]            # host folders inside this project
# agent_access = "manage"   # none | observe | manage | exec (what MCP agents may do)
# [vms.dev.params.devtools] # non-secret recipe params; secrets go in .stoat/secrets.toml
`

/**
 * `stoat init`: writes an annotated stoat.toml with one `[vms.dev]` (never over an existing one)
 * and, in a git checkout, adds `.stoat/` to .gitignore.
 */
export const initProject = (dir: string, name: string | undefined) =>
  Effect.gen(function* () {
    const file = join(dir, PROJECT_FILE)
    const project = name ?? defaultProjectName(dir)
    // "wx": created only if absent, so two inits cannot both write.
    yield* Effect.tryPromise({
      try: async () => {
        const handle = await open(file, "wx", 0o644)
        try {
          await handle.writeFile(initTemplate(project))
        } finally {
          await handle.close()
        }
      },
      catch: (error) =>
        (error as { code?: string }).code === "EEXIST"
          ? new NameTaken({ message: `${file} already exists; edit it, or remove it to start over`, subject: file })
          : internalError(`cannot write ${file}`)(error)
    })
    const gitignoreUpdated = yield* Effect.tryPromise({
      try: async () => {
        const isCheckout = await stat(join(dir, ".git")).then(
          () => true,
          () => false
        )
        if (!isCheckout) return false
        const path = join(dir, ".gitignore")
        const current = await readFile(path, "utf8").catch(() => "")
        if (current.split("\n").some((line) => /^\/?\.stoat\/?$/.test(line.trim()))) return false
        await appendFile(path, `${current === "" || current.endsWith("\n") ? "" : "\n"}.stoat/\n`)
        return true
      },
      catch: internalError(`cannot update ${join(dir, ".gitignore")}`)
    })
    return { path: file, project, gitignore_updated: gitignoreUpdated }
  })
