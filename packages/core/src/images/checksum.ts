/** One digest line of a published checksum file. */
export interface ChecksumLine {
  readonly file: string
  /** Lowercase hex. */
  readonly digest: string
  readonly algorithm: DigestAlgorithm
}

export type DigestAlgorithm = "sha256" | "sha512"

/** The algorithm is chosen by the digest's length, not by the file's name: 64 hex = sha256, 128 = sha512. */
export const algorithmOf = (digest: string): DigestAlgorithm | undefined =>
  /^[0-9a-fA-F]+$/.test(digest)
    ? digest.length === 64
      ? "sha256"
      : digest.length === 128
        ? "sha512"
        : undefined
    : undefined

// `<hex>  <file>` (text mode) or `<hex> *<file>` (binary mode), as sha256sum/sha512sum print.
const GNU = /^([0-9a-fA-F]+) [ *](.+)$/s
// `SHA256 (<file>) = <hex>`, as `sha256sum --tag` and BSD tools print; the name may contain parens.
const BSD = /^(SHA256|SHA512|SHA-256|SHA-512)\s?\((.*)\)\s?=\s?([0-9a-fA-F]+)$/is
const BARE = /^([0-9a-fA-F]+)$/
// Both use the `s` flag: a name may hold U+2028/U+2029, which `.` would not match otherwise.

/** coreutils prefixes a line with `\` when the name holds a backslash or newline, then escapes those. */
const unescapeName = (name: string): string =>
  name.replace(/\\(\\|n|r)/g, (_, c: string) => (c === "n" ? "\n" : c === "r" ? "\r" : "\\"))

const cleanName = (name: string): string => (name.startsWith("./") ? name.slice(2) : name)

/**
 * Reads SHA256SUMS/SHA512SUMS (GNU), BSD-tagged and `.SHA256`-sidecar files, also inside a PGP
 * clearsigned block (armor lines match no format and are skipped; dash-escaped lines are undone).
 * Digests that are not 64 or 128 hex characters, or whose BSD tag disagrees with their length,
 * are ignored. The first line for a file wins.
 */
export const parseChecksumFile = (text: string): ReadonlyArray<ChecksumLine> => {
  const out: ChecksumLine[] = []
  const seen = new Set<string>()
  const add = (file: string, digest: string, tag?: string) => {
    const algorithm = algorithmOf(digest)
    if (!algorithm || file === "" || seen.has(file)) return
    if (tag !== undefined && tag.replace("-", "").toLowerCase() !== algorithm) return
    seen.add(file)
    out.push({ file, digest: digest.toLowerCase(), algorithm })
  }
  for (const raw of text.split("\n")) {
    let line = raw.endsWith("\r") ? raw.slice(0, -1) : raw
    if (line.startsWith("- ")) line = line.slice(2)
    let escaped = false
    if (line.startsWith("\\")) {
      escaped = true
      line = line.slice(1)
    }
    const bsd = BSD.exec(line)
    if (bsd) {
      const name = escaped ? unescapeName(bsd[2]!) : bsd[2]!
      add(cleanName(name), bsd[3]!, bsd[1]!)
      continue
    }
    const gnu = GNU.exec(line)
    if (gnu) {
      const name = escaped ? unescapeName(gnu[2]!) : gnu[2]!
      add(cleanName(name), gnu[1]!)
    }
  }
  return out
}

/**
 * The digest published for `file`. A sidecar describes one file, so when it holds exactly one
 * digest (or a bare hex line, as some mirrors publish) that digest is used even if the name it
 * gives differs, e.g. a versioned name behind a "latest" alias.
 */
export const findChecksum = (
  text: string,
  file: string,
  options: { readonly sidecar?: boolean } = {}
): string | undefined => {
  const lines = parseChecksumFile(text)
  const match = lines.find((line) => line.file === file)
  if (match) return match.digest
  if (!options.sidecar) return undefined
  if (lines.length === 1) return lines[0]!.digest
  if (lines.length === 0) {
    const bare = text
      .split("\n")
      .map((line) => line.trim())
      .filter((line) => line !== "")
    if (bare.length === 1 && BARE.test(bare[0]!) && algorithmOf(bare[0]!)) return bare[0]!.toLowerCase()
  }
  return undefined
}
