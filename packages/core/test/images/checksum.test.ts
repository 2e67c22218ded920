import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { algorithmOf, findChecksum, parseChecksumFile } from "../../src/images/checksum.js"

const hex = (length: number) =>
  fc
    .array(fc.constantFrom(..."0123456789abcdefABCDEF"), { minLength: length, maxLength: length })
    .map((chars) => chars.join(""))
const digest = fc.oneof(hex(64), hex(128))

// File names as mirrors publish them, plus the awkward ones: spaces, parens, backslashes, newlines.
const fileName = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._+-]{0,40}$/),
  fc
    .string({ minLength: 1, maxLength: 30, unit: "grapheme" })
    .filter((s) => s.trim() === s && !s.startsWith("./") && !s.includes("\r"))
)

type Style = "text" | "binary" | "bsd"
const style = fc.constantFrom<Style>("text", "binary", "bsd")

/** Renders one line the way sha256sum/sha512sum (with or without --tag) would, escaping as coreutils does. */
const render = (name: string, sum: string, how: Style): string => {
  const needsEscape = /[\\\n]/.test(name)
  const escaped = needsEscape ? name.replace(/\\/g, "\\\\").replace(/\n/g, "\\n") : name
  const prefix = needsEscape ? "\\" : ""
  if (how === "bsd") return `${prefix}${sum.length === 64 ? "SHA256" : "SHA512"} (${escaped}) = ${sum}`
  return `${prefix}${sum}${how === "binary" ? " *" : "  "}${escaped}`
}

const entries = fc.uniqueArray(fc.record({ name: fileName, sum: digest, how: style }), {
  selector: (e) => e.name,
  minLength: 1,
  maxLength: 12
})

const clearsign = (body: string) =>
  `-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\n\n${body
    .split("\n")
    .map((line) => (line.startsWith("-") ? `- ${line}` : line))
    .join("\n")}\n-----BEGIN PGP SIGNATURE-----\n\niQIzBAEBCAAdFiEEabc+/=\n=AbCd\n-----END PGP SIGNATURE-----\n`

describe("checksum file parser (property)", () => {
  it("recovers every (file, digest) pair in any format mix, CRLF or not, clearsigned or not", () => {
    fc.assert(
      fc.property(entries, fc.boolean(), fc.boolean(), (list, crlf, signed) => {
        let body = list.map((e) => render(e.name, e.sum, e.how)).join("\n")
        if (signed) body = clearsign(body)
        if (crlf) body = body.replace(/\n/g, "\r\n")
        const parsed = parseChecksumFile(body)
        expect(parsed.map((line) => [line.file, line.digest])).toEqual(list.map((e) => [e.name, e.sum.toLowerCase()]))
        for (const e of list) {
          expect(findChecksum(body, e.name)).toBe(e.sum.toLowerCase())
          expect(parsed.find((line) => line.file === e.name)?.algorithm).toBe(e.sum.length === 64 ? "sha256" : "sha512")
        }
      }),
      { numRuns: 300 }
    )
  })

  it("never throws on arbitrary text and only yields 64/128-hex lowercase digests", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 400 }), (text) => {
        for (const line of parseChecksumFile(text)) {
          expect(line.digest).toMatch(/^([0-9a-f]{64}|[0-9a-f]{128})$/)
          expect(line.file).not.toBe("")
        }
      }),
      { numRuns: 500 }
    )
  })

  it("ignores digests of other lengths and BSD tags that disagree with the length", () => {
    fc.assert(
      fc.property(
        fileName,
        fc.integer({ min: 1, max: 200 }).filter((n) => n !== 64 && n !== 128),
        (name, length) => {
          const odd = "a".repeat(length)
          expect(findChecksum(`${odd}  ${name}\nSHA256 (${name}) = ${"b".repeat(128)}\n`, name)).toBeUndefined()
        }
      )
    )
  })
})

describe("checksum file parser (examples)", () => {
  const a = "a".repeat(64)
  const b = "B".repeat(128)

  it("reads the formats the catalog's mirrors publish", () => {
    expect(
      findChecksum(`${a} *ubuntu-24.04-server-cloudimg-amd64.img\n`, "ubuntu-24.04-server-cloudimg-amd64.img")
    ).toBe(a)
    expect(findChecksum(`${b}  debian-13-genericcloud-amd64.qcow2\n`, "debian-13-genericcloud-amd64.qcow2")).toBe(
      b.toLowerCase()
    )
    expect(findChecksum(`# f.qcow2: 5 bytes\nSHA256 (f.qcow2) = ${a}\n`, "f.qcow2")).toBe(a)
    expect(findChecksum(`${a}  ./f.img\n`, "f.img")).toBe(a)
    expect(findChecksum(`SHA256 (name (1).img) = ${a}\n`, "name (1).img")).toBe(a)
  })

  it("lets a sidecar name a different file or give a bare digest", () => {
    expect(
      findChecksum(`${a}  Arch-Linux-x86_64-cloudimg-20260801.qcow2\n`, "Arch-Linux-x86_64-cloudimg.qcow2", {
        sidecar: true
      })
    ).toBe(a)
    expect(findChecksum(`${a}\n`, "x.qcow2", { sidecar: true })).toBe(a)
    expect(findChecksum(`${a}\n`, "x.qcow2")).toBeUndefined()
    expect(findChecksum(`${a}  one\n${a}  two\n`, "three", { sidecar: true })).toBeUndefined()
  })

  it("picks the algorithm by length", () => {
    expect(algorithmOf(a)).toBe("sha256")
    expect(algorithmOf(b)).toBe("sha512")
    expect(algorithmOf("a".repeat(96))).toBeUndefined()
    expect(algorithmOf("z".repeat(64))).toBeUndefined()
  })
})
