import { mkdirSync, utimesSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { createVm, listImages, prune, pullImage } from "../../src/operations/index.js"
import { harness } from "../harness.js"

/** A file in the image folder, `ageMs` old. */
const imageFile = (root: string, name: string, ageMs = 0) => {
  const path = join(root, "isos", name)
  mkdirSync(join(root, "isos"), { recursive: true })
  writeFileSync(path, "x")
  const when = (Date.now() - ageMs) / 1000
  utimesSync(path, when, when)
  return path
}

describe("the Images service", () => {
  it("calls a partial download stale only after two minutes, and an image stale only when asked and no VM names it", async () => {
    const h = harness()
    const old = imageFile(h.root, "a.iso.part", 3 * 60_000)
    imageFile(h.root, "b.iso.part", 1_000)
    const used = imageFile(h.root, "ubuntu-used.iso")
    const unused = imageFile(h.root, "unused.iso")
    const named = imageFile(h.root, "named-by-broken.iso")
    mkdirSync(join(h.root, "isos", "a-folder"))
    await h.ok(createVm, { name: "inst", image_path: used }, { caller: "cli" })
    // A broken vm.toml still keeps the files it mentions.
    mkdirSync(join(h.root, "broken"))
    writeFileSync(join(h.root, "broken", "vm.toml"), `iso = "isos/named-by-broken.iso"\n[[[`)

    expect((await h.ok(prune, {})).items).toEqual([{ class: "partial_download", path: old }])
    const all = await h.ok(prune, { images: true })
    expect(all.items).toEqual([
      { class: "orphaned_image", path: unused },
      { class: "partial_download", path: old }
    ])
    expect(all.items.map((item) => item.path)).not.toContain(named)
    expect(all.dry_run).toBe(true)
    expect(h.exists("isos", "unused.iso")).toBe(true)

    await h.ok(prune, { images: true, apply: true })
    expect([
      h.exists("isos", "unused.iso"),
      h.exists("isos", "a.iso.part"),
      h.exists("isos", "b.iso.part"),
      h.exists("isos", "ubuntu-used.iso")
    ]).toEqual([false, false, true, true])
  })

  it("builds a local image through the ImageBuilder port; an unknown id is a typed error", async () => {
    const h = harness()
    expect((await h.ok(listImages, {})).images.find((image) => image.id === "tiny")).toMatchObject({
      downloaded: false
    })
    expect(await h.ok(pullImage, { id: "tiny" })).toEqual({
      id: "tiny",
      downloaded: true,
      verified: true,
      checksum_available: false
    })
    // What pull reported is what images lists (it listed tiny as not downloaded after a pull).
    expect((await h.ok(listImages, {})).images.find((image) => image.id === "tiny")).toMatchObject({
      downloaded: true,
      bytes_exact: true
    })
    expect(h.images.builds).toEqual([{ id: "tiny" }])
    const error = await h.fail(pullImage, { id: "no-such-image" })
    expect(error.code).toBe("no_such_image")
  })

  it("lists the catalog images with their download state, and a file a VM uses that none claims as BYO", async () => {
    const h = harness()
    const own = imageFile(h.root, "ubuntu-own.iso")
    await h.ok(createVm, { name: "inst", image_path: own }, { caller: "cli" })
    const { images } = await h.ok(listImages, {})
    expect(images.find((image) => image.id === "tiny")).toMatchObject({ downloaded: false, byo: false })
    expect(images.filter((image) => image.byo).map((image) => image.file)).toEqual(["ubuntu-own.iso"])
  })
})
