import { mkdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, ManagedRuntime } from "effect"
import { describe, expect, it, onTestFinished } from "vitest"
import { createVm } from "../../src/operations/index.js"
import { VmStore, type VmRecord } from "../../src/vm/store.js"
import { harness } from "../harness.js"

/** Dates the data root's last change `seconds` back (whole seconds, so the same call gives the same mtime). */
const ageRoot = (root: string, seconds: number) => {
  const then = Math.floor(Date.now() / 1000) - seconds
  utimesSync(root, then, then)
}

/** One store kept across calls, as a server keeps it (the harness builds a new one per call). */
const oneStore = (h: ReturnType<typeof harness>) => {
  const runtime = ManagedRuntime.make(h.layer() as never)
  onTestFinished(() => runtime.dispose())
  const records = () =>
    runtime.runPromise(Effect.flatMap(VmStore, (store) => store.list) as Effect.Effect<ReadonlyArray<VmRecord>>)
  return Object.assign(() => records().then((all) => all.map((record) => record.name)), { records })
}

/** A VM folder made behind the store's back, with `from`'s vm.toml. */
const copyVm = (root: string, from: string, name: string) => {
  mkdirSync(join(root, name))
  writeFileSync(join(root, name, "vm.toml"), readFileSync(join(root, from, "vm.toml"), "utf8"))
}

describe("the VM store lists the data root's folders again only when the root changed", () => {
  it("sees VMs made one right after another (a listing within a second of a change is never kept)", async () => {
    const h = harness()
    const list = oneStore(h)
    const made: string[] = []
    for (const name of ["a", "b", "c"]) {
      await h.ok(createVm, { name, image: "tiny" })
      made.push(name)
      expect(await list()).toEqual(made)
    }
  })

  it("after a settled listing, a folder made or removed behind its back is seen at once", async () => {
    const h = harness()
    await h.ok(createVm, { name: "a", image: "tiny" })
    const list = oneStore(h)
    ageRoot(h.root, 5)
    expect(await list()).toEqual(["a"])
    // Another process makes a VM folder: the root's mtime moves.
    copyVm(h.root, "a", "b")
    expect(await list()).toEqual(["a", "b"])
    ageRoot(h.root, 5)
    expect(await list()).toEqual(["a", "b"])
    rmSync(join(h.root, "b"), { recursive: true })
    expect(await list()).toEqual(["a"])
  })

  it("reads each vm.toml on every listing: an edit inside a VM's folder (the root's mtime unchanged) shows", async () => {
    const h = harness()
    await h.ok(createVm, { name: "a", image: "tiny" })
    const list = oneStore(h)
    const cpus = async () => {
      const [record] = await list.records()
      return record?.kind === "ok" ? record.config.cpus : undefined
    }
    ageRoot(h.root, 5)
    expect(await cpus()).toBe(1)
    const file = join(h.root, "a", "vm.toml")
    writeFileSync(file, readFileSync(file, "utf8").replace(/^cpus = \d+$/m, "cpus = 3"))
    ageRoot(h.root, 5)
    expect(await cpus()).toBe(3)
  })

  it("keeps a settled listing while the root's mtime is the same, and never one taken right after a change", async () => {
    const h = harness()
    await h.ok(createVm, { name: "a", image: "tiny" })
    const list = oneStore(h)
    ageRoot(h.root, 5)
    expect(await list()).toEqual(["a"])
    // A change that leaves the mtime as it was (as one in the same clock tick can): the kept listing stands.
    copyVm(h.root, "a", "hidden")
    ageRoot(h.root, 5)
    expect(await list()).toEqual(["a"])
    // The root changed just now: that listing is taken, but not kept.
    copyVm(h.root, "a", "b")
    expect(await list()).toEqual(["a", "b", "hidden"])
    copyVm(h.root, "a", "c")
    const mtime = Math.floor(Date.now() / 1000)
    utimesSync(h.root, mtime, mtime)
    expect(await list()).toEqual(["a", "b", "c", "hidden"])
    copyVm(h.root, "a", "d")
    utimesSync(h.root, mtime, mtime)
    expect(await list()).toEqual(["a", "b", "c", "d", "hidden"])
  })

  it("a data root removed and made again lists what is there now", async () => {
    const h = harness()
    await h.ok(createVm, { name: "a", image: "tiny" })
    const list = oneStore(h)
    ageRoot(h.root, 5)
    expect(await list()).toEqual(["a"])
    rmSync(h.root, { recursive: true })
    expect(await list()).toEqual([])
    mkdirSync(h.root)
    ageRoot(h.root, 5)
    expect(await list()).toEqual([])
  })
})
