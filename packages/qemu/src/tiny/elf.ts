/**
 * Just enough ELF64 (little-endian) parsing for the tiny-guest builder: DT_NEEDED of
 * executables and shared libraries, the kernel's PVH entry note, and a kernel module's
 * .modinfo. Done in TypeScript so the host needs no binutils (readelf) to build.
 */

const PT_LOAD = 1
const PT_DYNAMIC = 2
const PT_INTERP = 3
const PT_NOTE = 4
const DT_NULL = 0n
const DT_NEEDED = 1n
const DT_STRTAB = 5n
/** Xen's PVH entry point note; QEMU boots an uncompressed vmlinux through it. */
const XEN_ELFNOTE_PHYS32_ENTRY = 18

interface Phdr {
  readonly type: number
  readonly offset: number
  readonly vaddr: number
  readonly filesz: number
}

export function isElf64(buf: Buffer): boolean {
  return buf.length >= 64 && buf.readUInt32BE(0) === 0x7f454c46 && buf[4] === 2 && buf[5] === 1
}

function phdrs(buf: Buffer): Phdr[] {
  if (!isElf64(buf)) throw new Error("not a little-endian ELF64 file")
  const phoff = Number(buf.readBigUInt64LE(0x20))
  const phentsize = buf.readUInt16LE(0x36)
  const phnum = buf.readUInt16LE(0x38)
  const out: Phdr[] = []
  for (let i = 0; i < phnum; i++) {
    const o = phoff + i * phentsize
    if (o + 56 > buf.length) break
    out.push({
      type: buf.readUInt32LE(o),
      offset: Number(buf.readBigUInt64LE(o + 8)),
      vaddr: Number(buf.readBigUInt64LE(o + 16)),
      filesz: Number(buf.readBigUInt64LE(o + 32))
    })
  }
  return out
}

function cstring(buf: Buffer, off: number): string {
  const end = buf.indexOf(0, off)
  return buf.toString("utf8", off, end < 0 ? buf.length : end)
}

/** The sonames an executable or library links against (DT_NEEDED), in order. */
export function elfNeeded(buf: Buffer): string[] {
  const ph = phdrs(buf)
  const dyn = ph.find((p) => p.type === PT_DYNAMIC)
  if (!dyn) return [] // static binary
  const needed: bigint[] = []
  let strtabAddr: number | undefined
  for (let o = dyn.offset; o + 16 <= dyn.offset + dyn.filesz; o += 16) {
    const tag = buf.readBigInt64LE(o)
    const val = buf.readBigUInt64LE(o + 8)
    if (tag === DT_NULL) break
    if (tag === DT_NEEDED) needed.push(val)
    else if (tag === DT_STRTAB) strtabAddr = Number(val)
  }
  if (needed.length === 0) return []
  if (strtabAddr === undefined) throw new Error("ELF has DT_NEEDED but no DT_STRTAB")
  // DT_STRTAB is a virtual address; map it back to a file offset through the PT_LOAD segments.
  const addr = strtabAddr
  const seg = ph.find((p) => p.type === PT_LOAD && addr >= p.vaddr && addr < p.vaddr + p.filesz)
  if (!seg) throw new Error("ELF DT_STRTAB lies outside every PT_LOAD segment")
  const strtab = seg.offset + (addr - seg.vaddr)
  return needed.map((n) => cstring(buf, strtab + Number(n)))
}

/** The program interpreter (PT_INTERP), e.g. /lib64/ld-linux-x86-64.so.2, if any. */
export function elfInterp(buf: Buffer): string | undefined {
  const p = phdrs(buf).find((h) => h.type === PT_INTERP)
  return p ? cstring(buf, p.offset) : undefined
}

/** True when the ELF carries the Xen PVH entry note that QEMU needs to boot it directly. */
export function hasPvhNote(buf: Buffer): boolean {
  for (const p of phdrs(buf)) {
    if (p.type !== PT_NOTE) continue
    let o = p.offset
    const end = p.offset + p.filesz
    while (o + 12 <= end) {
      const namesz = buf.readUInt32LE(o)
      const descsz = buf.readUInt32LE(o + 4)
      const type = buf.readUInt32LE(o + 8)
      const name = buf.toString("latin1", o + 12, o + 12 + Math.max(0, namesz - 1))
      if (name === "Xen" && type === XEN_ELFNOTE_PHYS32_ENTRY) return true
      o += 12 + align4(namesz) + align4(descsz)
    }
  }
  return false
}

/** The key=value pairs of a kernel module's .modinfo section (keys may repeat, e.g. alias). */
export function modinfo(buf: Buffer): Map<string, string[]> {
  if (!isElf64(buf)) throw new Error("kernel module is not an ELF64 object")
  const shoff = Number(buf.readBigUInt64LE(0x28))
  const shentsize = buf.readUInt16LE(0x3a)
  const shnum = buf.readUInt16LE(0x3c)
  const shstrndx = buf.readUInt16LE(0x3e)
  const sh = (i: number) => {
    const o = shoff + i * shentsize
    return {
      name: buf.readUInt32LE(o),
      offset: Number(buf.readBigUInt64LE(o + 24)),
      size: Number(buf.readBigUInt64LE(o + 32))
    }
  }
  const names = sh(shstrndx)
  const out = new Map<string, string[]>()
  for (let i = 0; i < shnum; i++) {
    const s = sh(i)
    if (cstring(buf, names.offset + s.name) !== ".modinfo") continue
    for (const kv of buf.toString("utf8", s.offset, s.offset + s.size).split("\0")) {
      const eq = kv.indexOf("=")
      if (eq <= 0) continue
      const k = kv.slice(0, eq)
      const list = out.get(k) ?? []
      list.push(kv.slice(eq + 1))
      out.set(k, list)
    }
  }
  return out
}

function align4(n: number): number {
  return (n + 3) & ~3
}
