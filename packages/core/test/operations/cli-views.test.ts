import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import {
  ApplyDryRun,
  CliExecResult,
  CliUpdateResult,
  CopyResult,
  GuestShow,
  RecipeSchema,
  RmResult,
  SnapshotAction,
  SnapshotList,
  VmGet,
  VmResult
} from "@stoat/wire"
import {
  applyDryRunView,
  catalog,
  cliDataOf,
  copyFrom,
  copyTo,
  createVm,
  deleteSnapshot,
  destroyVm,
  execInGuest,
  getVm,
  guestInfo,
  listGuests,
  listRecipes,
  listSnapshots,
  planRecipes,
  recipeSchema,
  restoreSnapshot,
  saveSnapshot,
  startVm,
  stopVm,
  updateVm,
  type Operation
} from "../../src/operations/index.js"
import { harness } from "../harness.js"

/** The `data` of reference §4 ("Per-command `data`") for each operation whose CLI view differs from its MCP result. */
const CONTRACT: Record<
  string,
  { readonly command: string; readonly schema: Schema.Schema<any, any>; readonly keys: ReadonlyArray<string> }
> = {
  "vm.get": { command: "get", schema: VmGet, keys: ["vm"] },
  "vm.create": { command: "create", schema: VmResult, keys: ["vm"] },
  "vm.start": { command: "up", schema: VmResult, keys: ["vm"] },
  "vm.stop": { command: "down", schema: VmResult, keys: ["vm"] },
  "vm.destroy": { command: "rm", schema: RmResult, keys: ["deleted", "name"] },
  "vm.update": { command: "update", schema: CliUpdateResult, keys: ["applies_at", "changed", "vm"] },
  "snapshot.list": { command: "snapshot", schema: SnapshotList, keys: ["snapshots", "vm"] },
  "snapshot.save": { command: "snapshot", schema: SnapshotAction, keys: ["action", "tag", "vm"] },
  "snapshot.restore": { command: "snapshot --restore", schema: SnapshotAction, keys: ["action", "tag", "vm"] },
  "snapshot.delete": { command: "snapshot --delete", schema: SnapshotAction, keys: ["action", "tag", "vm"] },
  "guest.exec": { command: "exec", schema: CliExecResult, keys: ["exit_code", "stderr", "stdout", "vm"] },
  "guest.copy_to": { command: "cp", schema: CopyResult, keys: ["direction", "local", "remote", "vm"] },
  "guest.copy_from": { command: "cp", schema: CopyResult, keys: ["direction", "local", "remote", "vm"] },
  "guest.get": { command: "guest show", schema: GuestShow, keys: ["guest"] },
  "recipe.show": { command: "recipe show", schema: Schema.Struct({ recipe: RecipeSchema }), keys: ["recipe"] }
}

/** The CLI's data for one real run, checked against the contract: exact keys, strictly encodable by its wire schema. */
const viewOf = async <I, O>(h: ReturnType<typeof harness>, operation: Operation<I, O, any>, input: I) => {
  const data = cliDataOf(operation, await h.ok(operation, input), input) as Record<string, unknown>
  const contract = CONTRACT[operation.key]!
  expect(Object.keys(data).sort(), `${operation.key} (stoat ${contract.command})`).toEqual(contract.keys)
  expect(
    () => Schema.encodeUnknownSync(contract.schema)(data, { onExcessProperty: "error" }),
    operation.key
  ).not.toThrow()
  return data
}

describe("CLI views (reference §4, per-command data)", () => {
  it("is declared exactly by the operations the contract table names", () => {
    const withView = catalog.filter((operation) => operation.cliView !== undefined).map((operation) => operation.key)
    expect(withView.sort()).toEqual(Object.keys(CONTRACT).sort())
  })

  it("create / up / down / get answer {vm}; rm answers {deleted, name}", async () => {
    const h = harness()
    const created = await viewOf(h, createVm, { name: "box", image: "tiny" })
    expect(created["vm"]).toMatchObject({ name: "box", state: "stopped" })
    expect((await viewOf(h, startVm, { vm: "box" }))["vm"]).toMatchObject({ name: "box", state: "running" })
    expect((await viewOf(h, getVm, { vm: "box" }))["vm"]).toMatchObject({ name: "box", health: expect.any(String) })
    expect((await viewOf(h, stopVm, { vm: "box" }))["vm"]).toMatchObject({ name: "box", state: "stopped" })
    expect(await viewOf(h, destroyVm, { vm: "box" })).toEqual({ deleted: true, name: "box" })
  })

  it("update answers {vm, changed, applies_at}", async () => {
    const h = harness()
    await h.ok(createVm, { name: "box", image: "tiny" })
    const updated = await viewOf(h, updateVm, { vm: "box", cpus: 2 })
    expect(updated).toMatchObject({
      changed: ["cpus"],
      applies_at: "now",
      vm: expect.objectContaining({ name: "box", cpus: 2 })
    })
  })

  it("snapshot lists as {vm, snapshots} and acts as {vm, tag, action}", async () => {
    const h = harness()
    await h.ok(createVm, { name: "box", image: "tiny" })
    expect(await viewOf(h, saveSnapshot, { vm: "box", tag: "clean" })).toEqual({
      vm: "box",
      tag: "clean",
      action: "save"
    })
    const listed = await viewOf(h, listSnapshots, { vm: "box" })
    expect(listed["vm"]).toBe("box")
    expect(listed["snapshots"]).toEqual([expect.objectContaining({ tag: "clean" })])
    expect(await viewOf(h, restoreSnapshot, { vm: "box", tag: "clean" })).toEqual({
      vm: "box",
      tag: "clean",
      action: "restore"
    })
    expect(await viewOf(h, deleteSnapshot, { vm: "box", tag: "clean" })).toEqual({
      vm: "box",
      tag: "clean",
      action: "delete"
    })
  })

  it("exec answers {vm, exit_code, stdout, stderr}; cp names the direction", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(startVm, { vm: "web" })
    h.guest.execHandler = () => ({ exitCode: 3, stdout: "out\n", stderr: "err\n" })
    expect(await viewOf(h, execInGuest, { vm: "web", argv: ["false"] })).toEqual({
      vm: "web",
      exit_code: 3,
      stdout: "out\n",
      stderr: "err\n"
    })
    const shared = h.sharedDir("web")
    mkdirSync(shared, { recursive: true })
    writeFileSync(join(shared, "up.txt"), "to the guest")
    expect(await viewOf(h, copyTo, { vm: "web", local: join(shared, "up.txt"), remote: "/tmp/up.txt" })).toEqual({
      vm: "web",
      direction: "to_guest",
      local: join(shared, "up.txt"),
      remote: "/tmp/up.txt"
    })
    expect(
      await viewOf(h, copyFrom, { vm: "web", local: join(shared, "down.txt"), remote: "/tmp/up.txt" })
    ).toMatchObject({ direction: "from_guest" })
  })

  it("guest show and recipe show wrap the one they show", async () => {
    const h = harness()
    const [guest] = (await h.ok(listGuests, {})).guests
    expect((await viewOf(h, guestInfo, { name: guest!.name }))["guest"]).toMatchObject({ name: guest!.name })
    const [recipe] = (await h.ok(listRecipes, {})).recipes
    expect((await viewOf(h, recipeSchema, { name: recipe!.name }))["recipe"]).toMatchObject({ name: recipe!.name })
  })

  it("apply --dry-run answers {vm, dry_run, plan}: plan_recipes' result, marked as a dry run", async () => {
    const h = harness()
    mkdirSync(join(h.root, "recipes", "hello"), { recursive: true })
    writeFileSync(join(h.root, "recipes", "hello", "recipe.toml"), 'schema = 3\nname = "hello"\nscript = "run.sh"\n')
    writeFileSync(join(h.root, "recipes", "hello", "run.sh"), "echo hello\n")
    await h.ok(createVm, { name: "box", image: "tiny" })
    await h.ok(updateVm, { vm: "box", recipes: ["hello"] })
    const before = h.guest.execs.length
    const data = applyDryRunView(await h.ok(planRecipes, { vm: "box" }))
    expect(Object.keys(data).sort()).toEqual(["dry_run", "plan", "vm"])
    expect(() => Schema.encodeUnknownSync(ApplyDryRun)(data, { onExcessProperty: "error" })).not.toThrow()
    expect(data).toEqual({
      vm: "box",
      dry_run: true,
      plan: [{ name: "hello", action: "run", reason: "never applied" }]
    })
    expect(h.guest.execs.length).toBe(before)
  })
})
