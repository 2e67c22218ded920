import { randomBytes } from "node:crypto"
import { mkdtemp, open, readFile, rename, rm, stat, writeFile } from "node:fs/promises"
import type { Stats } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { gzip } from "node:zlib"
import { CpioWriter } from "./cpio.js"
import { run } from "./exec.js"
import { GUEST_AUTHORIZED_KEYS, GUEST_HOST_KEY, GUEST_HOSTNAME, GUEST_OPENSSH_HOST_KEY } from "./guest-files.js"

export interface WriteVmInitrdOptions {
  /** The shared initrd from buildTinyGuest. */
  readonly baseInitrd: string
  /** Where to write this VM's initrd (e.g. <vmDir>/initrd.img). */
  readonly out: string
  /** Contents of root's authorized_keys. */
  readonly authorizedKeys: string
  /** Host key in dropbear's format (see toDropbearKey); without one the guest generates a key each boot. */
  readonly hostKeyDropbear?: Buffer
  /** The same host key in OpenSSH's format, for guests whose sshd is OpenSSH (debian-12-mini). */
  readonly hostKeyOpenssh?: Buffer
  /** A valid hostname (core derives it from the VM name). */
  readonly hostname: string
}

/**
 * Writes a VM's initrd: the shared base followed by a small gzip'd cpio carrying the VM's
 * authorized_keys, hostname and host key. The kernel unpacks concatenated archives in order,
 * so the base stays shared and this costs one file copy per VM start.
 */
export async function writeVmInitrd(opts: WriteVmInitrdOptions): Promise<void> {
  const cpio = new CpioWriter()
  cpio.dir("etc/stoat")
  cpio.file(
    GUEST_AUTHORIZED_KEYS,
    opts.authorizedKeys.endsWith("\n") ? opts.authorizedKeys : `${opts.authorizedKeys}\n`,
    0o600
  )
  cpio.file(GUEST_HOSTNAME, `${opts.hostname}\n`, 0o644)
  if (opts.hostKeyDropbear !== undefined) cpio.file(GUEST_HOST_KEY, opts.hostKeyDropbear, 0o600)
  if (opts.hostKeyOpenssh !== undefined) cpio.file(GUEST_OPENSSH_HOST_KEY, opts.hostKeyOpenssh, 0o600)
  const overlay = await promisify(gzip)(cpio.finish())
  const baseInfo = await stat(opts.baseInitrd)
  // Zero padding between archives is skipped by the kernel; aligning keeps the next header on a 4-byte boundary.
  const pad = Buffer.alloc((4 - (baseInfo.size % 4)) % 4)
  if (await holdsAlready(opts.out, baseInfo, pad.length, overlay)) return
  const base = await readFile(opts.baseInitrd)
  await writeAtomic(opts.out, Buffer.concat([base, pad, overlay]), 0o600)
}

/**
 * True when `out` was written after the current base and ends in this overlay: each start
 * then skips re-copying the ~12 MB base. A rebuilt base is newer than any initrd made from it.
 */
async function holdsAlready(out: string, base: Stats, pad: number, overlay: Buffer): Promise<boolean> {
  const current = await stat(out).catch(() => undefined)
  if (!current?.isFile() || current.size !== base.size + pad + overlay.length || current.mtimeMs < base.mtimeMs)
    return false
  const handle = await open(out, "r")
  try {
    const tail = Buffer.alloc(overlay.length)
    const { bytesRead } = await handle.read(tail, 0, tail.length, base.size + pad)
    return bytesRead === tail.length && tail.equals(overlay)
  } finally {
    await handle.close()
  }
}

/**
 * An OpenSSH-format private key in dropbear's host-key format, for the VM's initrd. Done on the
 * host, so the guest needs no converter and every boot presents the same host key. Unencrypted
 * ed25519 keys are converted in TypeScript; any other key falls back to `dropbearconvert`
 * (dropbear-bin) if installed, through 0600 files in a private temporary folder.
 */
export async function toDropbearKey(opensshPrivateKey: string): Promise<Buffer> {
  try {
    return opensshEd25519ToDropbear(opensshPrivateKey)
  } catch (e) {
    const dir = await mkdtemp(join(tmpdir(), "stoat-hostkey-"))
    try {
      await writeFile(join(dir, "openssh"), opensshPrivateKey, { mode: 0o600 })
      await run("dropbearconvert", ["openssh", "dropbear", join(dir, "openssh"), join(dir, "dropbear")])
      return await readFile(join(dir, "dropbear"))
    } catch (e2) {
      throw new Error(
        `cannot convert the host key to dropbear's format: ${(e as Error).message}; dropbearconvert: ${(e2 as Error).message}`
      )
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  }
}

/** Dropbear's ed25519 private key: string "ssh-ed25519", string (32-byte seed ‖ 32-byte public key). */
export function opensshEd25519ToDropbear(pem: string): Buffer {
  const m = /-----BEGIN OPENSSH PRIVATE KEY-----([\s\S]*?)-----END OPENSSH PRIVATE KEY-----/.exec(pem)
  if (!m) throw new Error("not an OpenSSH private key")
  const buf = Buffer.from((m[1] ?? "").replace(/\s+/g, ""), "base64")
  const magic = "openssh-key-v1\0"
  if (buf.toString("latin1", 0, magic.length) !== magic) throw new Error("bad OpenSSH key magic")
  const r = new SshReader(buf, magic.length)
  const cipher = r.string().toString()
  const kdf = r.string().toString()
  r.string() // kdf options
  if (cipher !== "none" || kdf !== "none") throw new Error("encrypted OpenSSH keys are not supported")
  if (r.uint32() !== 1) throw new Error("OpenSSH key files with several keys are not supported")
  r.string() // public key blob
  const priv = new SshReader(r.string(), 0)
  if (priv.uint32() !== priv.uint32()) throw new Error("corrupt OpenSSH private key (check bytes differ)")
  const type = priv.string().toString()
  if (type !== "ssh-ed25519") throw new Error(`unsupported key type ${type}`)
  const pub = priv.string()
  const secret = priv.string()
  if (pub.length !== 32 || secret.length !== 64 || !secret.subarray(32).equals(pub)) {
    throw new Error("malformed ed25519 key")
  }
  return Buffer.concat([sshString(Buffer.from("ssh-ed25519")), sshString(secret)])
}

class SshReader {
  constructor(
    private readonly buf: Buffer,
    private off: number
  ) {}
  uint32(): number {
    if (this.off + 4 > this.buf.length) throw new Error("truncated OpenSSH key")
    const v = this.buf.readUInt32BE(this.off)
    this.off += 4
    return v
  }
  string(): Buffer {
    const n = this.uint32()
    if (this.off + n > this.buf.length) throw new Error("truncated OpenSSH key")
    const s = this.buf.subarray(this.off, this.off + n)
    this.off += n
    return s
  }
}

function sshString(b: Buffer): Buffer {
  const len = Buffer.alloc(4)
  len.writeUInt32BE(b.length)
  return Buffer.concat([len, b])
}

async function writeAtomic(path: string, data: Buffer, mode: number): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}-${randomBytes(4).toString("hex")}`
  try {
    await writeFile(tmp, data, { mode })
    await rename(tmp, path)
  } catch (e) {
    await rm(tmp, { force: true })
    throw e
  }
}
