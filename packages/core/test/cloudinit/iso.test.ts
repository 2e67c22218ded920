import { execFileSync, spawnSync } from "node:child_process"
import { mkdtemp, readFile, rm, stat } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildIso, writeIso, type IsoFile } from "../../src/cloudinit/iso.js"

const SECTOR = 2048

/** An independent little reader: descriptors, root directory, files; enough to check layout rules. */
const readIso = (image: Buffer) => {
  const descriptors: Array<{
    type: number
    volumeId: string
    root: { extent: number; size: number }
    totalSectors: number
    joliet: boolean
  }> = []
  for (let sector = 16; ; sector++) {
    const vd = image.subarray(sector * SECTOR, (sector + 1) * SECTOR)
    expect(vd.subarray(1, 6).toString("latin1")).toBe("CD001")
    if (vd[0] === 255) break
    const joliet = vd[0] === 2 && vd.subarray(88, 91).toString("latin1") === "%/E"
    const rawId = vd.subarray(40, 72)
    const volumeId = joliet ? rawId.swap16().toString("utf16le").trimEnd() : rawId.toString("latin1").trimEnd()
    descriptors.push({
      type: vd[0]!,
      volumeId,
      root: { extent: vd.readUInt32LE(156 + 2), size: vd.readUInt32LE(156 + 10) },
      totalSectors: vd.readUInt32LE(80),
      joliet
    })
    // Both-endian fields must agree.
    expect(vd.readUInt32BE(84)).toBe(vd.readUInt32LE(80))
  }
  const list = (root: { extent: number; size: number }, joliet: boolean) => {
    const out: Array<{ name: string; data: Buffer; dir: boolean }> = []
    for (let offset = 0; offset < root.size; ) {
      const at = root.extent * SECTOR + offset
      const length = image[at]!
      if (length === 0) {
        offset = (Math.floor(offset / SECTOR) + 1) * SECTOR
        continue
      }
      // A record must not cross a sector boundary.
      expect(Math.floor(offset / SECTOR)).toBe(Math.floor((offset + length - 1) / SECTOR))
      expect(length % 2).toBe(0)
      const extent = image.readUInt32LE(at + 2)
      expect(image.readUInt32BE(at + 6)).toBe(extent)
      const size = image.readUInt32LE(at + 10)
      const idLength = image[at + 32]!
      const id = Buffer.from(image.subarray(at + 33, at + 33 + idLength))
      const name =
        idLength === 1 && id[0]! <= 1
          ? id[0] === 0
            ? "."
            : ".."
          : joliet
            ? id.swap16().toString("utf16le")
            : id.toString("latin1")
      out.push({
        name,
        data: image.subarray(extent * SECTOR, extent * SECTOR + size),
        dir: (image[at + 25]! & 2) !== 0
      })
      offset += length
    }
    return out
  }
  return { descriptors, list }
}

const seedFiles: IsoFile[] = [
  { name: "user-data", data: "#cloud-config\nssh_pwauth: false\n" },
  { name: "meta-data", data: 'instance-id: "stoat-web"\nlocal-hostname: "web"\n' },
  { name: "network-config", data: "" }
]

describe("ISO 9660 + Joliet writer", () => {
  it("writes a CIDATA volume with the lowercase names in the Joliet tree and 8.3 names in the primary", () => {
    const image = Buffer.from(buildIso(seedFiles, { volumeId: "CIDATA", date: new Date("2026-01-02T03:04:05Z") }))
    expect(image.length % SECTOR).toBe(0)
    const { descriptors, list } = readIso(image)
    expect(descriptors.map((d) => [d.type, d.joliet, d.volumeId])).toEqual([
      [1, false, "CIDATA"],
      [2, true, "CIDATA"]
    ])
    expect(descriptors[0]!.totalSectors * SECTOR).toBe(image.length)
    const joliet = list(descriptors[1]!.root, true)
    expect(joliet.map((f) => f.name)).toEqual([".", "..", "meta-data", "network-config", "user-data"])
    expect(joliet.find((f) => f.name === "user-data")!.data.toString()).toBe(seedFiles[0]!.data)
    expect(joliet.find((f) => f.name === "network-config")!.data.length).toBe(0)
    const primary = list(descriptors[0]!.root, false)
    expect(primary.map((f) => f.name)).toEqual([".", "..", "META_DAT.;1", "NETWORK_.;1", "USER_DAT.;1"])
    expect(primary.find((f) => f.name === "META_DAT.;1")!.data.toString()).toBe(seedFiles[1]!.data)
  })

  it("is byte-for-byte reproducible for a fixed date", () => {
    const date = new Date("2026-05-06T07:08:09Z")
    expect(
      Buffer.from(buildIso(seedFiles, { volumeId: "CIDATA", date })).equals(
        Buffer.from(buildIso(seedFiles, { volumeId: "CIDATA", date }))
      )
    ).toBe(true)
  })

  it("round-trips any set of files (property), including multi-sector files and directories", () => {
    const name = fc.stringMatching(/^[a-zA-Z0-9][a-zA-Z0-9._-]{0,40}$/).filter((n) => n !== "." && n !== "..")
    const files = fc.uniqueArray(fc.record({ name, data: fc.uint8Array({ maxLength: 5000 }) }), {
      selector: (f) => f.name,
      maxLength: 60
    })
    fc.assert(
      fc.property(files, (input) => {
        const image = Buffer.from(buildIso(input, { volumeId: "CIDATA" }))
        const { descriptors, list } = readIso(image)
        const joliet = list(descriptors[1]!.root, true).filter((f) => !f.dir)
        expect(new Map(joliet.map((f) => [f.name, Buffer.from(f.data).toString("hex")]))).toEqual(
          new Map(input.map((f) => [f.name, Buffer.from(f.data).toString("hex")]))
        )
        const primaryNames = list(descriptors[0]!.root, false)
          .filter((f) => !f.dir)
          .map((f) => f.name)
        expect(new Set(primaryNames).size).toBe(input.length)
        for (const n of primaryNames) expect(n).toMatch(/^[A-Z0-9_]{1,8}\.[A-Z0-9_]{0,3};1$/)
      }),
      { numRuns: 60 }
    )
  })

  it("refuses bad names and volume ids", () => {
    expect(() => buildIso([{ name: "a/b", data: "" }], { volumeId: "CIDATA" })).toThrow()
    expect(() => buildIso([{ name: "x;1", data: "" }], { volumeId: "CIDATA" })).toThrow()
    expect(() =>
      buildIso(
        [
          { name: "a", data: "" },
          { name: "a", data: "" }
        ],
        { volumeId: "CIDATA" }
      )
    ).toThrow()
    expect(() => buildIso([], { volumeId: "cidata" })).toThrow()
  })
})

// isoinfo (Debian package `genisoimage`) is a second, independent reader. Its absence is loud, not silent.
const hasIsoinfo = spawnSync("isoinfo", ["-version"]).error === undefined
if (!hasIsoinfo) console.warn("SKIPPING isoinfo checks: isoinfo not found (apt-get install -y genisoimage)")

describe.skipIf(!hasIsoinfo)("ISO read back with isoinfo (genisoimage)", () => {
  let dir: string
  let path: string
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "stoat-iso-"))
    path = join(dir, "seed.iso")
    await writeIso(path, seedFiles, { volumeId: "CIDATA", mode: 0o600 })
  })
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true })
  })
  const isoinfo = (...args: string[]) => execFileSync("isoinfo", [...args, "-i", path], { encoding: "utf8" })

  it("reports volume id CIDATA and Joliet", async () => {
    const info = isoinfo("-d")
    expect(info).toMatch(/^Volume id: CIDATA$/m)
    expect(info).toContain("Joliet with UCS level 3 found")
    expect((await stat(path)).mode & 0o777).toBe(0o600)
  })

  it("lists the lowercase names under -J and extracts their contents", async () => {
    const listing = isoinfo("-J", "-l")
    for (const name of ["user-data", "meta-data", "network-config"])
      expect(listing).toMatch(new RegExp(`\\s${name}\\s*$`, "m"))
    expect(isoinfo("-J", "-x", "/user-data")).toBe(seedFiles[0]!.data)
    expect(isoinfo("-J", "-x", "/meta-data")).toBe(seedFiles[1]!.data)
    expect(isoinfo("-x", "/USER_DAT.;1")).toBe(seedFiles[0]!.data)
    expect((await readFile(path)).length % SECTOR).toBe(0)
  })
})
