import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Either } from "effect"
import { describe, expect, it } from "vitest"
import { forkDomainXml, readSaveImage } from "../src/checkpoint.js"
import { domainName } from "../src/domain-xml.js"
import { validate } from "./validate.js"

/** What `virsh save-image-dumpxml` printed for a checkpoint of a tiny VM "dev" (libvirt 9.0). */
const saved = readFileSync(join(import.meta.dirname, "fixtures", "saved-domain.xml"), "utf8")
const source = { name: "dev", dir: "/tmp/lvt/dev" }
const plan = {
  vm: { name: "f1", dir: "/data/f1" },
  sshPort: 2299,
  disk: "disk.qcow2",
  workShare: "/data/shared/f1"
}

describe("a fork's domain", () => {
  const xml = forkDomainXml(saved, source, plan)

  it("passes libvirt's domain schema", () => {
    expect(validate(xml)).toMatch(/validates/)
  })

  it("is the source's devices under the fork's name, a new UUID and generation ID, its own files and forward", () => {
    expect(xml).toContain(`<name>${domainName(plan.vm)}</name>`)
    expect(xml).not.toMatch(/<uuid>/)
    expect(xml).toContain("<genid/>")
    expect(xml).toContain("<title>f1</title>")
    expect(xml).toContain("<source file='/data/f1/disk.qcow2'/>")
    expect(xml).toContain("<source dir='/data/shared/f1'/>")
    expect(xml.match(/\/data\/f1\/console\.log/g)).toHaveLength(2)
    expect(xml.match(/\/data\/f1\/vnc\.sock/g)).toHaveLength(2)
    expect(xml).toContain("hostfwd=tcp:127.0.0.1:2299-:22'")
    expect(xml).toMatch(/<qemu:arg value='-incoming'\/>\s*<qemu:arg value='defer'\/>\s*<\/qemu:commandline>/)
    // Only the initrd, read once when QEMU starts, is still the source's.
    expect(xml.match(/\/tmp\/lvt\/dev\/[^'<]*/g)).toEqual(["/tmp/lvt/dev/initrd.img"])
    // Every device and address stays: the saved state fits only the same machine.
    const addresses = (text: string) => text.match(/<address [^>]*>/g)
    expect(addresses(xml)).toEqual(addresses(saved))
  })

  it("escapes the fork's paths, so a folder name cannot change the domain", () => {
    const odd = forkDomainXml(saved, source, { ...plan, vm: { name: "f2", dir: "/data/it's <f2>" } })
    expect(odd).toContain("<source file='/data/it&apos;s &lt;f2&gt;/disk.qcow2'/>")
    expect(validate(odd)).toMatch(/validates/)
  })
})

describe("a checkpoint's state file", () => {
  const dir = mkdtempSync(join(tmpdir(), "stoat-save-image-"))
  /** libvirt's layout: a 92-byte header (magic, version, data_len, was_running, compressed, …), the XML, then QEMU's stream. */
  const image = (xml: string, options: { readonly magic?: string; readonly compressed?: number } = {}) => {
    const data = Buffer.concat([Buffer.from(xml), Buffer.from([0]), Buffer.from("cookie"), Buffer.alloc(16)])
    const header = Buffer.alloc(92)
    header.write(options.magic ?? "LibvirtQemudSave", 0, "latin1")
    header.writeUInt32LE(2, 16)
    header.writeUInt32LE(data.length, 20)
    header.writeUInt32LE(1, 24)
    header.writeUInt32LE(options.compressed ?? 0, 28)
    const path = join(dir, `state-${Math.random()}`)
    writeFileSync(path, Buffer.concat([header, data, Buffer.from("QEVM\x00\x00\x00\x03rest of the stream")]))
    return path
  }
  const read = (path: string) => Effect.runPromise(Effect.either(readSaveImage(path)))

  it("gives the saved XML and where QEMU's stream starts", async () => {
    const path = image(saved)
    const result = await read(path)
    if (Either.isLeft(result)) throw result.left
    expect(result.right.xml).toBe(saved)
    expect(
      readFileSync(path)
        .subarray(result.right.streamOffset, result.right.streamOffset + 4)
        .toString()
    ).toBe("QEVM")
  })

  it("refuses what is not an uncompressed libvirt save image", async () => {
    for (const path of [image(saved, { magic: "SomethingElse..." }), image(saved, { compressed: 1 }), "/dev/null"]) {
      const result = await read(path)
      expect(Either.isLeft(result) && result.left).toMatchObject({ _tag: "Internal" })
    }
  })
})
