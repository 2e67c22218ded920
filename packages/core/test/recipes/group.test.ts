import { execFileSync, spawn } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { RECIPE_IN_OWN_GROUP, STOP_RECIPE_GROUP } from "../../src/recipes/apply.js"
import { alive } from "../processes.js"

const until = async (check: () => boolean, what: string) => {
  for (let i = 0; i < 100 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 50))
  if (!check()) throw new Error(`timed out waiting for ${what}`)
}

// The guest shells: Debian's dash as `sh`, and busybox's (the tiny guest's), both in CI's packages.
const shells: Array<[string, string[]]> = [["dash", ["sh"]]]
try {
  execFileSync("busybox", ["true"])
  shells.push(["busybox", ["busybox", "sh"]])
} catch {
  // Without busybox only dash is covered; CI installs busybox-static.
}

describe.each(shells)("a recipe's process group under %s", (_name, shell) => {
  const dirs: string[] = []
  afterEach(() => dirs.splice(0).forEach((dir) => rmSync(dir, { recursive: true, force: true })))

  it("records the group, and the stop script ends it with every child of the script", async () => {
    const dir = mkdtempSync(join(tmpdir(), "stoat-group-"))
    dirs.push(dir)
    const group = join(dir, "group")
    const child = join(dir, "child")
    const recipe = spawn(shell[0]!, [...shell.slice(1), "-c", RECIPE_IN_OWN_GROUP, "stoat_recipe", group], {
      stdio: ["pipe", "ignore", "ignore"]
    })
    // A recipe like apt under sudo: a child of a child that outlives a kill of the session's process.
    recipe.stdin.end(`sh -c 'sleep 60 & echo $! > "${child}"; wait' &\nwait\nexit 7\n`)
    await until(() => existsSync(child) && readFileSync(child, "utf8").trim() !== "", "the recipe's child")
    const grandchild = Number(readFileSync(child, "utf8"))
    const leader = Number(readFileSync(group, "utf8"))
    expect(alive(grandchild)).toBe(true)
    const exited = new Promise<number | null>((resolve) => recipe.once("exit", (code) => resolve(code)))
    // What an interrupted apply sends on a second channel.
    execFileSync(shell[0]!, [...shell.slice(1), "-c", STOP_RECIPE_GROUP, "stoat_stop", group])
    await until(() => !alive(grandchild) && !alive(leader), "the group to end")
    expect(existsSync(group)).toBe(false)
    expect(await exited).not.toBe(0)
  })

  it("runs the script it reads on stdin and passes its exit status through", async () => {
    const dir = mkdtempSync(join(tmpdir(), "stoat-group-"))
    dirs.push(dir)
    const run = (script: string) =>
      new Promise<number | null>((resolve) => {
        const recipe = spawn(
          shell[0]!,
          [...shell.slice(1), "-c", RECIPE_IN_OWN_GROUP, "stoat_recipe", join(dir, "group")],
          { stdio: ["pipe", "ignore", "ignore"] }
        )
        recipe.once("exit", (code) => resolve(code))
        recipe.stdin.end(script)
      })
    // Read from /dev/null instead (a background job's stdin), the script would be empty and exit 0.
    expect(await run("exit 3\n")).toBe(3)
    expect(await run("true\n")).toBe(0)
  })
})
