import { createHash, randomBytes } from "node:crypto"
import { copyFile, link, mkdir, readdir, readFile, readlink, rename, rm, stat, writeFile } from "node:fs/promises"
import { join, posix } from "node:path"
import { CpioWriter } from "./cpio.js"
import { AptCache, type Deb } from "./debs.js"
import { elfInterp, elfNeeded } from "./elf.js"
import { run, runText } from "./exec.js"
import { guestFiles } from "./guest-files.js"
import { MODULE_GROUPS, prepareKernel } from "./kernel.js"

export interface TinyGuestImage {
  /** Absolute path of the kernel to pass to `-kernel` (an uncompressed PVH vmlinux when available). */
  readonly kernel: string
  /** Absolute path of the shared base initramfs (an uncompressed newc cpio). Per-VM data goes in an appended archive. */
  readonly initrd: string
  /** Kernel command line for `-append`. */
  readonly kernelArgs: string
  /** Identifies the build: kernel release plus a hash of the packages and the guest recipe. */
  readonly version: string
}

export interface BuildTinyGuestOptions {
  /** Holds downloaded .debs and the unpacked kernel; shared between builds. */
  readonly cacheDir: string
  /** Receives vmlinux, initrd.img and manifest.json. */
  readonly outDir: string
  readonly onStage?: (msg: string) => void
}

/**
 * `quiet` and a serial console keep boot output cheap; `mitigations=off` and
 * `cryptomgr.notests` skip work that is slow under TCG; `panic=-1` reboots instead of hanging;
 * `8250.nr_uarts=1` avoids probing UARTs that q35 does not have; `i8042.*` skip the PS/2 mouse
 * probe; `ipv6.disable=1` skips IPv6 setup (~0.25 s under TCG; user-mode networking is IPv4).
 * The blacklisted initcalls are a KDF self-test that ignores cryptomgr.notests (~0.25 s under
 * TCG), kprobe-event tracing setup (~0.07 s), the CMOS RTC driver (the clock is read without
 * it), encrypted-key and built-in certificate setup (no keyrings or module signatures are
 * checked here); nothing in the guest uses any of them.
 */
export const TINY_KERNEL_ARGS =
  "console=ttyS0 quiet panic=-1 mitigations=off cryptomgr.notests 8250.nr_uarts=1 i8042.noaux i8042.nomux i8042.nopnp ipv6.disable=1 " +
  "initcall_blacklist=crypto_kdf108_init,init_kprobe_trace,cmos_init,init_encrypted,load_system_certificate_list"

/** Bump when the guest layout changes in a way the recipe hash below would not notice. */
const BUILDER_REVISION = 2

// e2fsprogs: busybox mke2fs writes every inode table (seconds per GiB under TCG); mke2fs -E lazy_itable_init does not.
const ROOT_PACKAGES = ["busybox-static", "dropbear-bin", "openssh-sftp-server", "e2fsprogs"] as const
/** Dynamically linked programs taken from the packages, and where they go in the guest. */
const PROGRAMS: ReadonlyArray<readonly [string, string]> = [
  ["usr/sbin/dropbear", "bin/dropbear"],
  ["usr/bin/dropbearkey", "bin/dropbearkey"],
  ["usr/bin/dropbearconvert", "bin/dropbearconvert"],
  // Debian's dropbear runs the SFTP subsystem from here; OpenSSH 9's scp needs it.
  ["usr/lib/openssh/sftp-server", "usr/lib/sftp-server"],
  ["sbin/mke2fs", "bin/mke2fs"],
  ["sbin/resize2fs", "bin/resize2fs"]
]
const KERNEL_META_PACKAGE = "linux-image-amd64"
const MULTIARCH = "x86_64-linux-gnu"

interface Manifest {
  readonly version: string
  readonly recipe: string
  readonly kernel: string
  readonly initrd: string
  readonly kernelArgs: string
  readonly kernelRelease: string
  readonly pvh: boolean
  readonly packages: readonly string[]
  readonly initrdBytes: number
}

/** Hash of everything that shapes the guest except the package versions. */
function recipeHash(): string {
  return createHash("sha256")
    .update(
      JSON.stringify({
        rev: BUILDER_REVISION,
        packages: ROOT_PACKAGES,
        programs: PROGRAMS,
        files: guestFiles({ kernelRelease: "", version: "" }),
        modules: MODULE_GROUPS,
        args: TINY_KERNEL_ARGS
      })
    )
    .digest("hex")
    .slice(0, 16)
}

/** Reads outDir/manifest.json and returns the image if it is complete and built by this recipe. */
export async function readTinyGuest(outDir: string): Promise<TinyGuestImage | undefined> {
  const m = await readFile(join(outDir, "manifest.json"), "utf8")
    .then((t) => JSON.parse(t) as Manifest)
    .catch(() => undefined)
  if (!m || m.recipe !== recipeHash()) return undefined
  const kernel = join(outDir, m.kernel)
  const initrd = join(outDir, m.initrd)
  const [k, i] = await Promise.all([stat(kernel).catch(() => undefined), stat(initrd).catch(() => undefined)])
  if (!k?.isFile() || !i?.isFile() || i.size !== m.initrdBytes) return undefined
  return { kernel, initrd, kernelArgs: m.kernelArgs, version: m.version }
}

/**
 * Builds (or returns the existing) tiny guest: a Debian kernel booted through PVH plus a
 * busybox + dropbear initramfs, all taken from Debian packages via `apt-get download`.
 */
export async function buildTinyGuest(opts: BuildTinyGuestOptions): Promise<TinyGuestImage> {
  const log = opts.onStage ?? (() => {})
  const existing = await readTinyGuest(opts.outDir)
  if (existing) return existing

  await mkdir(opts.cacheDir, { recursive: true })
  await mkdir(opts.outDir, { recursive: true })
  const apt = new AptCache(opts.cacheDir, log)

  const { kernelPkg, debs } = await resolveDebs(apt, opts.cacheDir, log)
  const kernelDeb = debs.find((d) => d.pkg === kernelPkg)
  if (!kernelDeb) throw new Error(`apt did not return a .deb for ${kernelPkg}`)

  const work = join(opts.outDir, `.build-${process.pid}-${randomBytes(4).toString("hex")}`)
  try {
    await mkdir(work, { recursive: true })
    const [kernel, sysroot] = await Promise.all([
      prepareKernel(kernelDeb, opts.cacheDir, log),
      unpackUserland(
        debs.filter((d) => d !== kernelDeb),
        opts.cacheDir,
        log
      )
    ])

    const packages = debs.map((d) => d.file).sort()
    const recipe = recipeHash()
    const version = `${kernel.release}-${createHash("sha256")
      .update(recipe)
      .update(packages.join("\n"))
      .digest("hex")
      .slice(0, 8)}`

    log("assembling initramfs")
    const cpio = await assembleInitramfs({ sysroot, kernel, version })
    // Uncompressed: under TCG the kernel takes ~0.4 s to gunzip 12 MB, far more than QEMU takes to load it.
    const initrdBytes = cpio

    // Everything is staged in `work` (same file system as outDir) and renamed into place;
    // the finally below removes whatever a failure leaves behind.
    const kernelName = kernel.pvh ? "vmlinux" : "vmlinuz"
    await writeFile(join(work, "initrd.img"), initrdBytes)
    await rename(join(work, "initrd.img"), join(opts.outDir, "initrd.img"))
    // Hard-link the kernel from the cache when possible: it is ~60 MB and identical. (Renaming a
    // link onto another link of the same file is a no-op, which is fine: it is already in place.)
    await link(kernel.kernelPath, join(work, kernelName)).catch(() =>
      copyFile(kernel.kernelPath, join(work, kernelName))
    )
    await rename(join(work, kernelName), join(opts.outDir, kernelName))

    const manifest: Manifest = {
      version,
      recipe,
      kernel: kernelName,
      initrd: "initrd.img",
      kernelArgs: TINY_KERNEL_ARGS,
      kernelRelease: kernel.release,
      pvh: kernel.pvh,
      packages,
      initrdBytes: initrdBytes.length
    }
    // manifest.json last, atomically: its presence is what marks the build complete.
    await writeFile(join(work, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`)
    await rename(join(work, "manifest.json"), join(opts.outDir, "manifest.json"))
    await pruneCache(opts.cacheDir, debs, kernelDeb)
    log(`tiny guest ${version} ready (initrd ${(initrdBytes.length / 1048576).toFixed(1)} MiB)`)
    return {
      kernel: join(opts.outDir, kernelName),
      initrd: join(opts.outDir, "initrd.img"),
      kernelArgs: TINY_KERNEL_ARGS,
      version
    }
  } finally {
    await rm(work, { recursive: true, force: true })
  }
}

interface Resolution {
  readonly fingerprint: string
  readonly roots: readonly string[]
  readonly kernelPkg: string
  readonly debs: ReadonlyArray<{ readonly pkg: string; readonly file: string; readonly size: number }>
}

/**
 * Which .debs make up the guest. Resolving takes several apt calls (~1 s each on a busy
 * host), so the answer is remembered in the cache for as long as apt's package lists are
 * unchanged and the files are still there.
 */
async function resolveDebs(
  apt: AptCache,
  cacheDir: string,
  log: (m: string) => void
): Promise<{ kernelPkg: string; debs: Deb[] }> {
  const memo = join(cacheDir, "apt", "resolved.json")
  const fingerprint = await apt.listsFingerprint()
  const prev = await readFile(memo, "utf8")
    .then((t) => JSON.parse(t) as Resolution)
    .catch(() => undefined)
  if (fingerprint !== undefined && prev?.fingerprint === fingerprint && prev.roots.join() === ROOT_PACKAGES.join()) {
    const debs = prev.debs.map((d) => ({ pkg: d.pkg, file: d.file, path: join(cacheDir, d.file) }))
    const sizes = await Promise.all(
      debs.map((d) =>
        stat(d.path).then(
          (s) => s.size,
          () => -1
        )
      )
    )
    if (sizes.every((sz, i) => sz === prev.debs[i]?.size)) return { kernelPkg: prev.kernelPkg, debs }
  }
  log("resolving packages")
  const kernelPkg = await resolveKernelPackage(apt)
  const libs = await libraryClosure(apt, ROOT_PACKAGES)
  const debs = await apt.fetch([kernelPkg, ...ROOT_PACKAGES, ...libs])
  const after = await apt.listsFingerprint() // an apt-get update may have happened meanwhile
  if (after !== undefined) {
    const sized = await Promise.all(
      debs.map(async (d) => ({ pkg: d.pkg, file: d.file, size: (await stat(d.path)).size }))
    )
    const r: Resolution = { fingerprint: after, roots: ROOT_PACKAGES, kernelPkg, debs: sized }
    const tmp = `${memo}.tmp-${process.pid}-${randomBytes(4).toString("hex")}`
    await writeFile(tmp, JSON.stringify(r, null, 2))
    await rename(tmp, memo)
  }
  return { kernelPkg, debs }
}

/**
 * Unpacks the userland .debs into one tree, cached under `<cacheDir>/userland-<hash>/` so a
 * rebuild with unchanged packages skips dpkg-deb (libc6 alone is ~13 MB of files).
 */
async function unpackUserland(debs: readonly Deb[], cacheDir: string, log: (m: string) => void): Promise<string> {
  const id = createHash("sha256")
    .update(
      debs
        .map((d) => d.file)
        .sort()
        .join("\n")
    )
    .digest("hex")
    .slice(0, 16)
  const dir = join(cacheDir, `userland-${id}`)
  if (
    await stat(join(dir, ".complete")).then(
      () => true,
      () => false
    )
  )
    return dir
  log("unpacking userland packages")
  const tmp = `${dir}.tmp-${process.pid}-${randomBytes(4).toString("hex")}`
  try {
    await mkdir(tmp, { recursive: true })
    await Promise.all(debs.map((d) => run("dpkg-deb", ["-x", d.path, tmp])))
    await writeFile(join(tmp, ".complete"), "")
    await rm(dir, { recursive: true, force: true })
    await rename(tmp, dir).catch(async (e: NodeJS.ErrnoException) => {
      // A concurrent build got there first with the same packages; use its copy.
      if (e.code !== "ENOTEMPTY" && e.code !== "EEXIST") throw e
    })
  } finally {
    await rm(tmp, { recursive: true, force: true })
  }
  // Trees for older package sets are dead weight.
  for (const f of await readdir(cacheDir)) {
    if (/^userland-[0-9a-f]{16}$/.test(f) && f !== `userland-${id}`)
      await rm(join(cacheDir, f), { recursive: true, force: true })
  }
  return dir
}

/** Drops .debs and unpacked kernels that the current package set no longer uses (~70 MB per kernel). */
async function pruneCache(cacheDir: string, debs: readonly Deb[], kernelDeb: Deb): Promise<void> {
  const keep = new Set(debs.map((d) => d.file))
  for (const f of await readdir(cacheDir)) {
    if (f.endsWith(".deb") && !keep.has(f)) await rm(join(cacheDir, f), { force: true })
  }
  const current = kernelDeb.file.replace(/\.deb$/, "")
  for (const f of await readdir(join(cacheDir, "kernel")).catch(() => [] as string[])) {
    if (f !== current && !f.includes(".tmp-")) await rm(join(cacheDir, "kernel", f), { recursive: true, force: true })
  }
}

/** The versioned kernel package that the linux-image-amd64 metapackage currently points at. */
async function resolveKernelPackage(apt: AptCache): Promise<string> {
  const deps = await apt.depends([KERNEL_META_PACKAGE])
  const pkg = deps.get(KERNEL_META_PACKAGE)?.find((d) => /^linux-image-\d/.test(d))
  if (!pkg) throw new Error(`cannot resolve the kernel package behind ${KERNEL_META_PACKAGE}`)
  return pkg
}

/**
 * Library packages the binaries depend on: Depends closure restricted to lib* packages
 * (following e.g. openssh-sftp-server → openssh-client would drag in far too much).
 * Completeness is checked afterwards against the binaries' DT_NEEDED entries.
 */
async function libraryClosure(apt: AptCache, roots: readonly string[]): Promise<string[]> {
  const seen = new Set<string>(roots)
  const libs: string[] = []
  let frontier = [...roots]
  while (frontier.length > 0) {
    const deps = await apt.depends(frontier)
    frontier = []
    for (const list of deps.values()) {
      for (const d of list) {
        if (seen.has(d) || !/^(lib|zlib)/.test(d)) continue
        seen.add(d)
        libs.push(d)
        frontier.push(d)
      }
    }
  }
  return libs.sort()
}

interface AssembleOptions {
  readonly sysroot: string
  readonly kernel: Awaited<ReturnType<typeof prepareKernel>>
  readonly version: string
}

async function assembleInitramfs(o: AssembleOptions): Promise<Buffer> {
  const { sysroot, kernel } = o
  const cpio = new CpioWriter()

  // Merged-/usr layout: one bin directory, so every applet is on dropbear's default PATH.
  for (const d of ["bin", "lib", `lib/${MULTIARCH}`, "lib64", "usr/lib", "etc/stoat", "dev", "proc", "sys", "run"]) {
    cpio.dir(d)
  }
  cpio.dir("tmp", 0o1777)
  cpio.dir("root", 0o700)
  cpio.dir("var/lib/stoat")
  cpio.dir("var/log")
  cpio.dir("mnt")
  cpio.symlink("sbin", "bin")
  cpio.symlink("usr/bin", "../bin")
  cpio.symlink("usr/sbin", "../bin")
  cpio.symlink("var/run", "../run")
  cpio.symlink("etc/mtab", "/proc/mounts")
  // The kernel opens /dev/console for init before anything mounts devtmpfs.
  cpio.charDevice("dev/console", 5, 1, 0o600)

  const files = guestFiles({ kernelRelease: kernel.release, version: o.version })
  for (const f of files) cpio.file(f.path, f.content, f.mode)

  const libDirs = [`lib/${MULTIARCH}`, `usr/lib/${MULTIARCH}`, "lib64", "lib", "usr/lib"]
  const wantedLibs = new Map<string, Buffer>()
  const queue: Buffer[] = []
  let interp: string | undefined
  for (const [src, dst] of PROGRAMS) {
    const buf = await readFile(await resolveInRoot(sysroot, src))
    cpio.file(dst, buf, 0o755)
    interp ??= elfInterp(buf)
    queue.push(buf)
  }
  while (queue.length > 0) {
    const buf = queue.shift()
    if (!buf) break
    for (const soname of elfNeeded(buf)) {
      if (wantedLibs.has(soname)) continue
      const lib = await findLibrary(sysroot, libDirs, soname)
      if (!lib)
        throw new Error(`shared library ${soname} not found in the unpacked packages (a lib* package is missing)`)
      wantedLibs.set(soname, lib)
      queue.push(lib)
    }
  }
  if (interp) {
    const name = posix.basename(interp)
    if (!wantedLibs.has(name)) {
      const lib = await findLibrary(sysroot, libDirs, name)
      if (!lib) throw new Error(`program interpreter ${interp} not found in the unpacked packages`)
      wantedLibs.set(name, lib)
    }
  }
  for (const [soname, buf] of [...wantedLibs].sort(([a], [b]) => a.localeCompare(b))) {
    cpio.file(`lib/${MULTIARCH}/${soname}`, buf, 0o755)
  }
  if (interp) {
    const target = `/lib/${MULTIARCH}/${posix.basename(interp)}`
    if (interp !== target) cpio.symlink(interp, target)
  }

  // Busybox last, so the real programs above win over its applets of the same name (mke2fs).
  const busybox = await readFile(await resolveInRoot(sysroot, "bin/busybox"))
  cpio.file("bin/busybox", busybox, 0o755)
  cpio.symlink("init", "bin/busybox")
  const applets = (await runText(join(sysroot, "bin/busybox"), ["--list"])).split("\n").filter(Boolean)
  for (const a of applets) {
    if (a === "busybox" || a.includes("/") || cpio.has(`bin/${a}`)) continue
    cpio.symlink(`bin/${a}`, "busybox")
  }

  // Kernel modules plus per-group load lists for rc.sysinit and modules.dep for modprobe.
  const modBase = `lib/modules/${kernel.release}`
  for (const list of Object.values(kernel.groups)) {
    for (const rel of list) cpio.file(`${modBase}/${rel}`, await readFile(join(kernel.root, modBase, rel)), 0o644)
  }
  cpio.file(`${modBase}/modules.dep`, `${kernel.modulesDep}\n`)
  for (const [group, list] of Object.entries(kernel.groups)) {
    cpio.file(`etc/stoat/modules/${group}`, list.length > 0 ? `${list.join("\n")}\n` : "")
  }
  return cpio.finish()
}

async function findLibrary(root: string, dirs: readonly string[], soname: string): Promise<Buffer | undefined> {
  for (const d of dirs) {
    const p = await resolveInRoot(root, `${d}/${soname}`).catch(() => undefined)
    if (p) return readFile(p)
  }
  return undefined
}

/**
 * Resolves a path inside an unpacked package tree, following symlinks *within* that tree
 * (an absolute link target like /lib/x86_64-linux-gnu/… must not escape to the host's files).
 */
async function resolveInRoot(root: string, rel: string, depth = 0): Promise<string> {
  if (depth > 32) throw new Error(`too many symlinks resolving ${rel}`)
  const parts = rel.split("/").filter(Boolean)
  let cur = ""
  for (let i = 0; i < parts.length; i++) {
    const next = cur ? `${cur}/${parts[i]}` : (parts[i] ?? "")
    const full = join(root, next)
    const target = await readlink(full).catch((e: NodeJS.ErrnoException) => {
      if (e.code === "EINVAL") return undefined // not a symlink
      throw e
    })
    if (target === undefined) {
      cur = next
      continue
    }
    const base = target.startsWith("/") ? target : posix.join(posix.dirname(`/${next}`), target)
    const rest = parts.slice(i + 1).join("/")
    return resolveInRoot(root, posix.normalize(rest ? `${base}/${rest}` : base).replace(/^\/+/, ""), depth + 1)
  }
  await stat(join(root, cur))
  return join(root, cur)
}

export type { Deb }
