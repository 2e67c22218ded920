/**
 * Local Git repositories for tests of remote recipes: a recipe repository (recipe.toml and
 * run.sh at its root) and an index repository (index.toml), committed with a fixed identity.
 */
import { execFileSync } from "node:child_process"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"

const GIT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: "stoat-test",
  GIT_AUTHOR_EMAIL: "test@example.org",
  GIT_COMMITTER_NAME: "stoat-test",
  GIT_COMMITTER_EMAIL: "test@example.org",
  GIT_CONFIG_GLOBAL: "/dev/null"
}

/** Runs git in `dir` and answers its trimmed stdout. */
export const gitIn = (dir: string, ...args: string[]): string =>
  execFileSync("git", args, { cwd: dir, env: GIT_ENV, encoding: "utf8" }).trim()

/** Writes a file and commits everything; answers the new commit. */
export const commitFile = (dir: string, file: string, text: string): string => {
  writeFileSync(join(dir, file), text)
  gitIn(dir, "add", "-A")
  gitIn(dir, "commit", "-qm", `change ${file}`)
  return gitIn(dir, "rev-parse", "HEAD")
}

/** `<base>/src-<name>`: a recipe at the root of branch main, one commit tagged v1. */
export const makeRecipeRepo = (
  base: string,
  name: string,
  options: { readonly manifestName?: string; readonly body?: string } = {}
): string => {
  const dir = join(base, `src-${name}`)
  mkdirSync(dir, { recursive: true })
  gitIn(dir, "init", "-q", "-b", "main")
  writeFileSync(
    join(dir, "recipe.toml"),
    `name = "${options.manifestName ?? name}"\ndescription = "the ${name} recipe"\nscript = "run.sh"\n`
  )
  commitFile(dir, "run.sh", options.body ?? `echo ${name} v1\n`)
  gitIn(dir, "tag", "v1")
  return dir
}

/** Commits index.toml listing `entries` (name → source). */
export const writeIndexFile = (dir: string, entries: Readonly<Record<string, string>>): string => {
  const tables = Object.entries(entries).map(
    ([name, source]) =>
      `[recipes.${name}]\nsource = ${JSON.stringify(source)}\ndescription = "${name} for tests"\nos = []\n`
  )
  return commitFile(dir, "index.toml", `schema = 1\n\n${tables.join("\n")}`)
}

/** `<base>/index`: an index repository listing `entries`. */
export const makeIndexRepo = (base: string, entries: Readonly<Record<string, string>>): string => {
  const dir = join(base, "index")
  mkdirSync(dir, { recursive: true })
  gitIn(dir, "init", "-q", "-b", "main")
  writeIndexFile(dir, entries)
  return dir
}
