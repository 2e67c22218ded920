/** Fast checks of the tiny-guest builder's pieces; no VM, no downloads. */
import { execFile } from "node:child_process"
import { mkdtemp, readdir, readFile, rm, stat, utimes, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { BootPlan } from "@stoat/core"
import { qemuArgs } from "../../src/argv.js"
import { CpioWriter } from "../../src/tiny/cpio.js"
import { elfInterp, elfNeeded, isElf64 } from "../../src/tiny/elf.js"
import { opensshEd25519ToDropbear, toDropbearKey, writeVmInitrd } from "../../src/tiny/vm-initrd.js"

const execFileP = promisify(execFile)

interface CpioEntry {
  name: string
  mode: number
  rdevMajor: number
  rdevMinor: number
  data: Buffer
}

/** Independent newc reader, to check the writer against the format rather than against itself. */
function readNewc(buf: Buffer): CpioEntry[] {
  const out: CpioEntry[] = []
  let off = 0
  const align = (n: number) => (n + 3) & ~3
  for (;;) {
    expect(buf.toString("ascii", off, off + 6)).toBe("070701")
    const field = (i: number) => parseInt(buf.toString("ascii", off + 6 + i * 8, off + 14 + i * 8), 16)
    const mode = field(1)
    const size = field(6)
    const namesize = field(11)
    const name = buf.toString("utf8", off + 110, off + 110 + namesize - 1)
    const dataOff = align(off + 110 + namesize)
    if (name === "TRAILER!!!") break
    out.push({ name, mode, rdevMajor: field(9), rdevMinor: field(10), data: buf.subarray(dataOff, dataOff + size) })
    off = align(dataOff + size)
  }
  return out
}

describe("CpioWriter", () => {
  it("writes newc entries with parents first, padding and a trailer", () => {
    const w = new CpioWriter()
    w.file("etc/stoat/hostname", "vm1\n", 0o644)
    w.symlink("bin/sh", "busybox")
    w.charDevice("dev/console", 5, 1)
    w.dir("tmp", 0o1777)
    const buf = w.finish()
    expect(buf.length % 512).toBe(0)
    const entries = readNewc(buf)
    expect(entries.map((e) => e.name)).toEqual([
      "etc",
      "etc/stoat",
      "etc/stoat/hostname",
      "bin",
      "bin/sh",
      "dev",
      "dev/console",
      "tmp"
    ])
    const byName = new Map(entries.map((e) => [e.name, e]))
    expect(byName.get("etc/stoat/hostname")?.data.toString()).toBe("vm1\n")
    expect(byName.get("etc/stoat/hostname")?.mode).toBe(0o100644)
    expect(byName.get("bin/sh")?.mode).toBe(0o120777)
    expect(byName.get("bin/sh")?.data.toString()).toBe("busybox")
    expect(byName.get("dev/console")).toMatchObject({ mode: 0o020600, rdevMajor: 5, rdevMinor: 1 })
    expect(byName.get("tmp")?.mode).toBe(0o041777)
  })

  it("rejects duplicates and path escapes", () => {
    const w = new CpioWriter().file("a", "1")
    expect(() => w.file("a", "2")).toThrow(/duplicate/)
    expect(() => w.file("../x", "2")).toThrow(/bad path/)
  })
})

describe("ELF parsing", () => {
  it("reads DT_NEEDED and the interpreter of a host binary", async () => {
    const ls = await readFile("/bin/ls")
    expect(isElf64(ls)).toBe(true)
    expect(elfNeeded(ls)).toContain("libc.so.6")
    expect(elfInterp(ls)).toMatch(/ld-linux-x86-64\.so\.2$/)
  })
})

describe("host key conversion", () => {
  let dir: string
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "stoat-tiny-units-"))
    await execFileP("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "k", "-f", join(dir, "k")])
  })
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  it("converts an OpenSSH ed25519 key to dropbear's format", async () => {
    const key = opensshEd25519ToDropbear(await readFile(join(dir, "k"), "utf8"))
    expect(key.readUInt32BE(0)).toBe(11)
    expect(key.toString("latin1", 4, 15)).toBe("ssh-ed25519")
    expect(key.readUInt32BE(15)).toBe(64)
    expect(key.length).toBe(19 + 64)
    // The second half of the secret is the public key, which the .pub file also carries.
    const pubBlob = Buffer.from((await readFile(join(dir, "k.pub"), "utf8")).split(" ")[1] ?? "", "base64")
    expect(key.subarray(19 + 32).equals(pubBlob.subarray(pubBlob.length - 32))).toBe(true)
  })

  it("matches dropbearconvert when that is installed", async () => {
    const has = await execFileP("dropbearconvert", []).then(
      () => true,
      (e: NodeJS.ErrnoException) => e.code !== "ENOENT"
    )
    if (!has) return
    await execFileP("dropbearconvert", ["openssh", "dropbear", join(dir, "k"), join(dir, "k.ref")])
    expect(
      (await toDropbearKey(await readFile(join(dir, "k"), "utf8"))).equals(await readFile(join(dir, "k.ref")))
    ).toBe(true)
  })

  it("converts a key of another type through dropbearconvert, leaving no file behind", async () => {
    await execFileP("ssh-keygen", ["-q", "-t", "ecdsa", "-N", "", "-f", join(dir, "ecdsa")])
    const before = (await readdir(tmpdir())).filter((name) => name.startsWith("stoat-hostkey-"))
    const key = await toDropbearKey(await readFile(join(dir, "ecdsa"), "utf8"))
    expect(key.subarray(4, 4 + key.readUInt32BE(0)).toString()).toBe("ecdsa-sha2-nistp256")
    expect((await readdir(tmpdir())).filter((name) => name.startsWith("stoat-hostkey-"))).toEqual(before)
  })

  it("refuses keys it cannot read", () => {
    expect(() =>
      opensshEd25519ToDropbear("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n")
    ).toThrow()
  })
})

describe("qemuArgs for a direct-boot guest", () => {
  const plan: BootPlan = {
    vm: { name: "tiny", dir: "/vm" },
    ramMb: 256,
    cpus: 1,
    sshPort: 2222,
    forwards: [],
    kernel: { path: "/img/vmlinux", initrd: "/img/initrd.img", append: "console=ttyS0" },
    workShare: "/shared/w",
    display: "vnc"
  }

  it("builds a TCG q35 command line with the SSH forward, QMP and console file", () => {
    const args = qemuArgs(plan, { accel: "tcg", initrd: "/vm/initrd.img", daemonize: false })
    const joined = args.join(" ")
    expect(joined).toContain("-accel tcg")
    expect(joined).toContain("-kernel /img/vmlinux -initrd /vm/initrd.img -append console=ttyS0")
    expect(joined).toContain("hostfwd=tcp:127.0.0.1:2222-:22")
    expect(joined).toContain("-qmp unix:/vm/qmp.sock,server=on,wait=off")
    expect(joined).toContain("-chardev file,id=con0,path=/vm/console.log,append=on")
    expect(joined).toContain("-pidfile /vm/qemu.pid")
    expect(args).not.toContain("-daemonize")
  })

  it("adds forwards, disk, shares and daemonize, escaping commas", () => {
    const args = qemuArgs(
      {
        ...plan,
        ramMb: 512,
        cpus: 2,
        forwards: [{ host: 8080, guest: 80 }],
        disk: "disk.qcow2",
        workShare: "/shared/a,b",
        hostShare: "/home/u"
      },
      { accel: "tcg" }
    )
    const joined = args.join(" ")
    expect(joined).toContain("hostfwd=tcp:127.0.0.1:2222-:22,hostfwd=tcp:127.0.0.1:8080-:80")
    expect(joined).toContain("file=/vm/disk.qcow2,if=none,id=d0,format=qcow2")
    expect(joined).toContain("local,path=/shared/a,,b,mount_tag=work,security_model=mapped-xattr")
    expect(joined).toContain("mount_tag=host,security_model=mapped-xattr,readonly=on")
    expect(args).toContain("-daemonize")
  })
})

describe("writeVmInitrd", () => {
  let dir: string
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "stoat-initrd-"))
  })
  afterAll(() => rm(dir, { recursive: true, force: true }))

  it("rewrites a VM's initrd only when the base or the VM's identity changed", async () => {
    const base = join(dir, "base.img")
    const out = join(dir, "vm.img")
    await writeFile(base, Buffer.alloc(4097, 7))
    const write = (hostname: string) =>
      writeVmInitrd({ baseInitrd: base, out, authorizedKeys: "ssh-ed25519 AAAA k", hostname })
    const inode = async () => (await stat(out)).ino

    await write("one")
    const first = await readFile(out)
    expect(first.subarray(0, 4097).equals(Buffer.alloc(4097, 7))).toBe(true)
    const written = await inode()
    await write("one")
    expect(await inode()).toBe(written)

    await write("two")
    expect(await inode()).not.toBe(written)
    const renamed = await inode()

    // A rebuilt base (same size, new content, newer than the VM's copy) is copied again.
    await writeFile(base, Buffer.alloc(4097, 9))
    const later = new Date(Date.now() + 60_000)
    await utimes(base, later, later)
    await write("two")
    expect(await inode()).not.toBe(renamed)
    expect((await readFile(out)).subarray(0, 4097).equals(Buffer.alloc(4097, 9))).toBe(true)
  })
})
