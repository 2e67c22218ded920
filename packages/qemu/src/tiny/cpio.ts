/**
 * A minimal writer for the "newc" cpio format, which is what the Linux kernel unpacks
 * as an initramfs. Written here rather than shelling out to cpio(1) so that archives are
 * reproducible (fixed mtimes, owner root, stable inode numbers) and need no staging tree.
 */

const S_IFDIR = 0o040000
const S_IFREG = 0o100000
const S_IFLNK = 0o120000
const S_IFCHR = 0o020000

interface Entry {
  readonly name: string
  readonly mode: number
  readonly data: Buffer
  readonly rdevMajor: number
  readonly rdevMinor: number
}

export class CpioWriter {
  private readonly entries: Entry[] = []
  private readonly seen = new Set<string>()

  constructor(private readonly mtime = 0) {}

  /** Adds a directory (and any missing parents). Re-adding an existing directory is a no-op. */
  dir(path: string, mode = 0o755): this {
    const name = normalize(path)
    if (name === "." || this.seen.has(name)) return this
    this.parents(name)
    this.push({ name, mode: S_IFDIR | (mode & 0o7777), data: Buffer.alloc(0), rdevMajor: 0, rdevMinor: 0 })
    return this
  }

  file(path: string, data: Buffer | string, mode = 0o644): this {
    const name = normalize(path)
    this.parents(name)
    const buf = typeof data === "string" ? Buffer.from(data, "utf8") : data
    this.push({ name, mode: S_IFREG | (mode & 0o7777), data: buf, rdevMajor: 0, rdevMinor: 0 })
    return this
  }

  symlink(path: string, target: string): this {
    const name = normalize(path)
    this.parents(name)
    this.push({ name, mode: S_IFLNK | 0o777, data: Buffer.from(target, "utf8"), rdevMajor: 0, rdevMinor: 0 })
    return this
  }

  charDevice(path: string, major: number, minor: number, mode = 0o600): this {
    const name = normalize(path)
    this.parents(name)
    this.push({ name, mode: S_IFCHR | (mode & 0o7777), data: Buffer.alloc(0), rdevMajor: major, rdevMinor: minor })
    return this
  }

  has(path: string): boolean {
    return this.seen.has(normalize(path))
  }

  /** Serialises all entries plus the TRAILER!!! record, padded to a 512-byte boundary. */
  finish(): Buffer {
    const parts: Buffer[] = []
    let ino = 1
    let size = 0
    const put = (b: Buffer) => {
      parts.push(b)
      size += b.length
    }
    const record = (e: Entry, inode: number) => {
      const nameBuf = Buffer.from(`${e.name}\0`, "utf8")
      const fields = [
        inode,
        e.mode,
        0, // uid
        0, // gid
        (e.mode & 0o170000) === S_IFDIR ? 2 : 1,
        this.mtime,
        e.data.length,
        0, // devmajor
        0, // devminor
        e.rdevMajor,
        e.rdevMinor,
        nameBuf.length,
        0 // check
      ]
      put(Buffer.from(`070701${fields.map((n) => n.toString(16).padStart(8, "0")).join("")}`, "ascii"))
      put(nameBuf)
      put(Buffer.alloc(pad4(size)))
      put(e.data)
      put(Buffer.alloc(pad4(size)))
    }
    for (const e of this.entries) record(e, ino++)
    record({ name: "TRAILER!!!", mode: 0, data: Buffer.alloc(0), rdevMajor: 0, rdevMinor: 0 }, 0)
    put(Buffer.alloc((512 - (size % 512)) % 512))
    return Buffer.concat(parts)
  }

  private parents(name: string): void {
    const segs = name.split("/")
    for (let i = 1; i < segs.length; i++) this.dir(segs.slice(0, i).join("/"))
  }

  private push(e: Entry): void {
    if (this.seen.has(e.name)) throw new Error(`cpio: duplicate entry ${e.name}`)
    this.seen.add(e.name)
    this.entries.push(e)
  }
}

function pad4(n: number): number {
  return (4 - (n % 4)) % 4
}

function normalize(path: string): string {
  const p = path.replace(/^\/+/, "").replace(/\/+$/, "")
  if (p === "") return "."
  if (p.split("/").some((s) => s === ".." || s === "." || s === "")) throw new Error(`cpio: bad path ${path}`)
  return p
}
