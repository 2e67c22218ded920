import { writeFileAtomic } from "../platform/files.js"

/**
 * A minimal ISO 9660 writer for cloud-init NoCloud seeds: one root directory, a handful of small
 * files, a primary volume (8.3 upper-case names, which ECMA-119 level 1 requires) plus a Joliet
 * supplementary volume carrying the real lowercase names (`user-data`, `meta-data`). Linux's
 * isofs driver presents the Joliet names by default, which is what cloud-init reads; blkid reads
 * the volume id from both descriptors, so both say the same thing.
 *
 * Layout (2048-byte sectors): 0-15 system area, 16 primary descriptor, 17 Joliet descriptor,
 * 18 terminator, 19-22 path tables (L/M for each tree), then the two root directories, then
 * file data (shared by both trees).
 */

export interface IsoFile {
  /** Name in the root directory: up to 64 characters, no `/`, `\`, `;` or NUL. */
  readonly name: string
  readonly data: string | Uint8Array
}

export interface IsoOptions {
  /** Up to 16 characters of A-Z, 0-9 and `_` (the Joliet field holds 16 UCS-2 characters). */
  readonly volumeId: string
  /** Recorded on the volume and every file; defaults to now. Fix it for reproducible images. */
  readonly date?: Date
}

const SECTOR = 2048
const PVD_SECTOR = 16
const FIRST_PATH_TABLE = 19
const FIRST_DIRECTORY = 23

const both16 = (buffer: Buffer, offset: number, value: number) => {
  buffer.writeUInt16LE(value, offset)
  buffer.writeUInt16BE(value, offset + 2)
}
const both32 = (buffer: Buffer, offset: number, value: number) => {
  buffer.writeUInt32LE(value, offset)
  buffer.writeUInt32BE(value, offset + 4)
}

/** Fixed-width text field: ASCII padded with spaces, or UCS-2 BE padded with U+0020. */
const fillAscii = (buffer: Buffer, offset: number, length: number, text = "") => {
  buffer.fill(0x20, offset, offset + length)
  buffer.write(text, offset, Math.min(length, text.length), "latin1")
}
const ucs2 = (text: string): Buffer => {
  const out = Buffer.alloc(text.length * 2)
  for (let i = 0; i < text.length; i++) out.writeUInt16BE(text.charCodeAt(i), i * 2)
  return out
}
const fillUcs2 = (buffer: Buffer, offset: number, length: number, text = "") => {
  for (let i = 0; i + 1 < length; i += 2) buffer.writeUInt16BE(0x0020, offset + i)
  if (length % 2 === 1) buffer[offset + length - 1] = 0
  ucs2(text).copy(buffer, offset, 0, Math.min(length - (length % 2), text.length * 2))
}

/** The 7-byte directory record date (UTC). */
const shortDate = (date: Date): Buffer =>
  Buffer.from([
    date.getUTCFullYear() - 1900,
    date.getUTCMonth() + 1,
    date.getUTCDate(),
    date.getUTCHours(),
    date.getUTCMinutes(),
    date.getUTCSeconds(),
    0
  ])

/** The 17-byte volume descriptor date: "YYYYMMDDHHMMSScc" + GMT offset; all-zero digits = unset. */
const longDate = (date: Date | undefined): Buffer => {
  const out = Buffer.alloc(17)
  const pad = (n: number, width: number) => String(n).padStart(width, "0")
  const text = date
    ? `${pad(date.getUTCFullYear(), 4)}${pad(date.getUTCMonth() + 1, 2)}${pad(date.getUTCDate(), 2)}${pad(date.getUTCHours(), 2)}${pad(date.getUTCMinutes(), 2)}${pad(date.getUTCSeconds(), 2)}00`
    : "0000000000000000"
  out.write(text, 0, "latin1")
  return out
}

const directoryRecord = (
  identifier: Buffer,
  extent: number,
  size: number,
  directory: boolean,
  date: Buffer
): Buffer => {
  // Records have even length: a padding byte follows an even-length identifier.
  const length = 33 + identifier.length + (identifier.length % 2 === 0 ? 1 : 0)
  const record = Buffer.alloc(length)
  record[0] = length
  both32(record, 2, extent)
  both32(record, 10, size)
  date.copy(record, 18)
  record[25] = directory ? 0x02 : 0
  both16(record, 28, 1)
  record[32] = identifier.length
  identifier.copy(record, 33)
  return record
}

/** Lays records into sectors; a record never straddles a sector boundary (ECMA-119 6.8.1.1). */
const packDirectory = (records: ReadonlyArray<Buffer>): Buffer => {
  const sectors: Buffer[] = []
  let current = Buffer.alloc(SECTOR)
  let used = 0
  for (const record of records) {
    if (used + record.length > SECTOR) {
      sectors.push(current)
      current = Buffer.alloc(SECTOR)
      used = 0
    }
    record.copy(current, used)
    used += record.length
  }
  sectors.push(current)
  return Buffer.concat(sectors)
}

/** Level-1 name: `NAME.EXT;1`, d-characters only, made unique with a numeric tail. */
const primaryNames = (names: ReadonlyArray<string>): string[] => {
  const used = new Set<string>()
  return names.map((name) => {
    const clean = (text: string) => text.toUpperCase().replace(/[^A-Z0-9_]/g, "_")
    const dot = name.lastIndexOf(".")
    const stem = clean(dot > 0 ? name.slice(0, dot) : name) || "_"
    const ext = clean(dot > 0 ? name.slice(dot + 1) : "").slice(0, 3)
    let candidate = `${stem.slice(0, 8)}.${ext}`
    for (let n = 1; used.has(candidate); n++) {
      const tail = String(n)
      candidate = `${stem.slice(0, 8 - tail.length)}${tail}.${ext}`
    }
    used.add(candidate)
    return candidate
  })
}

const pathTable = (rootExtent: number, bigEndian: boolean): Buffer => {
  const table = Buffer.alloc(10)
  table[0] = 1
  if (bigEndian) {
    table.writeUInt32BE(rootExtent, 2)
    table.writeUInt16BE(1, 6)
  } else {
    table.writeUInt32LE(rootExtent, 2)
    table.writeUInt16LE(1, 6)
  }
  return table
}

const validate = (files: ReadonlyArray<IsoFile>, options: IsoOptions) => {
  if (!/^[A-Z0-9_]{1,16}$/.test(options.volumeId)) throw new Error(`invalid ISO volume id "${options.volumeId}"`)
  const seen = new Set<string>()
  for (const file of files) {
    // Joliet allows 64 UCS-2 characters; `;` would be read as a version separator.
    if (
      file.name === "" ||
      file.name.length > 64 ||
      /[/\\;\0]/.test(file.name) ||
      file.name === "." ||
      file.name === ".."
    ) {
      throw new Error(`invalid ISO file name "${file.name}"`)
    }
    if (/[^\u0020-\uffff]/.test(file.name)) throw new Error(`invalid ISO file name "${file.name}"`)
    if (seen.has(file.name)) throw new Error(`duplicate ISO file name "${file.name}"`)
    seen.add(file.name)
  }
}

const volumeDescriptor = (
  type: 1 | 2,
  options: IsoOptions,
  totalSectors: number,
  pathTableL: number,
  pathTableM: number,
  root: Buffer,
  created: Date
): Buffer => {
  const joliet = type === 2
  const text = joliet ? fillUcs2 : fillAscii
  const vd = Buffer.alloc(SECTOR)
  vd[0] = type
  vd.write("CD001", 1, "latin1")
  vd[6] = 1
  text(vd, 8, 32, "LINUX")
  text(vd, 40, 32, options.volumeId)
  both32(vd, 80, totalSectors)
  // UCS-2 level 3, the escape sequence that marks a supplementary descriptor as Joliet.
  if (joliet) vd.write("%/E", 88, "latin1")
  both16(vd, 120, 1)
  both16(vd, 124, 1)
  both16(vd, 128, SECTOR)
  both32(vd, 132, 10)
  vd.writeUInt32LE(pathTableL, 140)
  vd.writeUInt32BE(pathTableM, 148)
  root.copy(vd, 156)
  text(vd, 190, 128)
  text(vd, 318, 128)
  text(vd, 446, 128)
  text(vd, 574, 128, "STOAT")
  text(vd, 702, 37)
  text(vd, 739, 37)
  text(vd, 776, 37)
  longDate(created).copy(vd, 813)
  longDate(created).copy(vd, 830)
  longDate(undefined).copy(vd, 847)
  longDate(created).copy(vd, 864)
  vd[881] = 1
  return vd
}

/** Builds the whole image in memory: seeds are a few kilobytes. */
export const buildIso = (files: ReadonlyArray<IsoFile>, options: IsoOptions): Uint8Array => {
  validate(files, options)
  const date = options.date ?? new Date()
  const stamp = shortDate(date)
  const contents = files.map((file) =>
    typeof file.data === "string" ? Buffer.from(file.data, "utf8") : Buffer.from(file.data)
  )
  const primary = primaryNames(files.map((file) => file.name))

  // Directory sizes depend only on the names, so they are measured with placeholder extents first.
  const records = (extents: ReadonlyArray<number>, rootExtent: number, rootSize: number, joliet: boolean) => {
    const entries = files.map((file, i) => ({
      id: joliet ? ucs2(file.name) : Buffer.from(`${primary[i]!};1`, "latin1"),
      extent: extents[i]!,
      size: contents[i]!.length
    }))
    entries.sort((a, b) => Buffer.compare(a.id, b.id))
    return [
      directoryRecord(Buffer.from([0]), rootExtent, rootSize, true, stamp),
      directoryRecord(Buffer.from([1]), rootExtent, rootSize, true, stamp),
      ...entries.map((entry) => directoryRecord(entry.id, entry.extent, entry.size, false, stamp))
    ]
  }
  const zeros = files.map(() => 0)
  const primarySectors = packDirectory(records(zeros, 0, 0, false)).length / SECTOR
  const jolietSectors = packDirectory(records(zeros, 0, 0, true)).length / SECTOR
  const primaryRoot = FIRST_DIRECTORY
  const jolietRoot = primaryRoot + primarySectors
  let next = jolietRoot + jolietSectors
  // An empty file gets extent 0 and occupies no sector.
  const extents = contents.map((data) => {
    if (data.length === 0) return 0
    const extent = next
    next += Math.ceil(data.length / SECTOR)
    return extent
  })
  const totalSectors = next

  const image = Buffer.alloc(totalSectors * SECTOR)
  const primaryDir = packDirectory(records(extents, primaryRoot, primarySectors * SECTOR, false))
  const jolietDir = packDirectory(records(extents, jolietRoot, jolietSectors * SECTOR, true))
  primaryDir.copy(image, primaryRoot * SECTOR)
  jolietDir.copy(image, jolietRoot * SECTOR)
  contents.forEach((data, i) => data.copy(image, extents[i]! * SECTOR))

  pathTable(primaryRoot, false).copy(image, FIRST_PATH_TABLE * SECTOR)
  pathTable(primaryRoot, true).copy(image, (FIRST_PATH_TABLE + 1) * SECTOR)
  pathTable(jolietRoot, false).copy(image, (FIRST_PATH_TABLE + 2) * SECTOR)
  pathTable(jolietRoot, true).copy(image, (FIRST_PATH_TABLE + 3) * SECTOR)

  const rootRecord = (extent: number, sectors: number) =>
    directoryRecord(Buffer.from([0]), extent, sectors * SECTOR, true, stamp)
  volumeDescriptor(
    1,
    options,
    totalSectors,
    FIRST_PATH_TABLE,
    FIRST_PATH_TABLE + 1,
    rootRecord(primaryRoot, primarySectors),
    date
  ).copy(image, PVD_SECTOR * SECTOR)
  volumeDescriptor(
    2,
    options,
    totalSectors,
    FIRST_PATH_TABLE + 2,
    FIRST_PATH_TABLE + 3,
    rootRecord(jolietRoot, jolietSectors),
    date
  ).copy(image, (PVD_SECTOR + 1) * SECTOR)
  const terminator = Buffer.alloc(SECTOR)
  terminator[0] = 255
  terminator.write("CD001", 1, "latin1")
  terminator[6] = 1
  terminator.copy(image, (PVD_SECTOR + 2) * SECTOR)
  return image
}

/** Writes the image atomically (temp file, fsync, rename), so a crash never leaves a torn seed. */
export const writeIso = (
  path: string,
  files: ReadonlyArray<IsoFile>,
  options: IsoOptions & { readonly mode?: number }
): Promise<void> => writeFileAtomic(path, buildIso(files, options), options.mode ?? 0o644)
