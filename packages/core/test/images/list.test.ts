import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Schema } from "effect"
import { Image } from "@stoat/wire"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { KNOWN_IMAGES } from "../../src/images/known.js"
import { imagesOnHost } from "../../src/images/list.js"

let root: string
let isos: string
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "stoat-list-"))
  isos = join(root, "isos")
})
afterEach(async () => {
  await rm(root, { recursive: true, force: true })
})

const list = (configs: Parameters<typeof imagesOnHost>[1] = []) => Effect.runPromise(imagesOnHost(isos, configs))

describe("imagesOnHost", () => {
  it("lists the whole catalog as not downloaded with approximate sizes when isos/ is missing", async () => {
    const images = await list()
    expect(images.map((image) => image.id)).toEqual(KNOWN_IMAGES.map((entry) => entry.id))
    for (const image of images) {
      expect(Schema.is(Image)(image)).toBe(true)
      expect(image).toMatchObject({ downloaded: false, bytes_exact: false, byo: false })
    }
    expect(images.find((image) => image.id === "ubuntu-24.04")?.file).toBe("ubuntu-24.04-server-cloudimg-amd64.img")
  })

  it("reports exact bytes for downloaded files and ignores .part files", async () => {
    await mkdir(isos)
    await writeFile(join(isos, "debian-13-genericcloud-amd64.qcow2"), Buffer.alloc(1234))
    await writeFile(join(isos, "ubuntu-24.04-server-cloudimg-amd64.img.part"), Buffer.alloc(10))
    const byId = new Map((await list()).map((image) => [image.id, image]))
    expect(byId.get("debian-13")).toMatchObject({ downloaded: true, bytes: 1234, bytes_exact: true })
    expect(byId.get("ubuntu-24.04")).toMatchObject({ downloaded: false, bytes_exact: false })
  })

  it("counts a locally built image as present by its build's bytes (the builder's cache, not isos/)", async () => {
    await mkdir(join(isos, "tiny"), { recursive: true })
    await writeFile(join(isos, "tiny", "manifest.json"), "{}")
    expect((await list()).find((image) => image.id === "tiny")).toMatchObject({ downloaded: false, bytes_exact: false })
    const built = await Effect.runPromise(imagesOnHost(isos, [], undefined, new Map([["tiny", 102]])))
    expect(built.find((image) => image.id === "tiny")).toMatchObject({
      file: "tiny",
      downloaded: true,
      bytes: 102,
      bytes_exact: true
    })
  })

  it("lists files in isos/ that VMs use and the catalog does not claim as BYO", async () => {
    await mkdir(isos)
    await writeFile(join(isos, "my-ubuntu-cloudimg.img"), Buffer.alloc(42))
    await writeFile(join(isos, "custom.iso"), Buffer.alloc(9))
    await writeFile(join(isos, "unused.iso"), Buffer.alloc(1))
    await writeFile(join(isos, "debian-13-genericcloud-amd64.qcow2"), Buffer.alloc(3))
    const images = await list([
      { os: "ubuntu", base: join(isos, "my-ubuntu-cloudimg.img") },
      { os: "fedora", iso: "isos/custom.iso" },
      { os: "debian", base: join(isos, "debian-13-genericcloud-amd64.qcow2") },
      { os: "alpine", iso: "isos/gone.iso" },
      { image: "ubuntu-24.04" },
      { iso: "/elsewhere/custom.iso" }
    ])
    const byo = images.filter((image) => image.byo)
    expect(byo).toEqual([
      {
        id: "",
        os: "fedora",
        variant: "",
        backend: "ssh",
        file: "custom.iso",
        downloaded: true,
        bytes: 9,
        bytes_exact: true,
        byo: true
      },
      {
        id: "",
        os: "ubuntu",
        variant: "",
        backend: "cloudinit",
        file: "my-ubuntu-cloudimg.img",
        downloaded: true,
        bytes: 42,
        bytes_exact: true,
        byo: true
      }
    ])
  })
})
