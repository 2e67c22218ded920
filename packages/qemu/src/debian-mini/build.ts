import { randomBytes } from "node:crypto"
import { copyFile, mkdir, open, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises"
import { basename, dirname, join } from "node:path"
import { findOnPath, isProcessAlive, pollUntil } from "@stoat/core"
import { Cause, Duration, Effect, Exit, Schedule } from "effect"
import { CpioWriter } from "../tiny/cpio.js"
import { run } from "../tiny/exec.js"
import { extractVmlinux } from "../tiny/kernel.js"
import {
  chrootCommands,
  DEBIAN_MINI_KERNEL_ARGS,
  debianSources,
  guestFiles,
  INITRD_APPLETS,
  INITRD_MODULES,
  initScript,
  mmdebstrapArgs,
  moduleLoadOrder,
  primaryMirror,
  recipeHash,
  REMOVED_PATHS,
  ROOT_FS_SIZE
} from "./recipe.js"

export const DEBIAN_MINI_ID = "debian-12-mini"

export interface DebianMiniImage {
  /** The kernel QEMU boots: an uncompressed PVH vmlinux when one could be extracted, else vmlinuz. */
  readonly kernel: string
  /** Stoat's small initrd (busybox, the root disk's modules); per-VM identity is appended to a copy. */
  readonly initrd: string
  /** The qcow2 root disk; VMs boot an overlay on it, so a build is never modified or removed under them. */
  readonly rootDisk: string
  readonly kernelArgs: string
  readonly version: string
}

/**
 * Why a build could not run, in terms a caller maps to a typed error: a host tool or root is
 * missing (capability), the Debian mirror did not answer (reach), or a step failed (internal).
 */
export class DebianMiniBuildError extends Error {
  constructor(
    readonly kind: "missing_tool" | "needs_root" | "mirror_unreachable" | "invalid_path" | "failed" | "gone",
    message: string
  ) {
    super(message)
  }
}

export interface BuildDebianMiniOptions {
  /** Keeps downloaded .debs between builds (`<cacheDir>/debs`). */
  readonly cacheDir: string
  /** Holds one folder per build plus current.json naming the one new VMs use. */
  readonly outDir: string
  readonly onStage?: (line: string) => void
  /** Where the host's apt sources are read (default /etc/apt); tests point it elsewhere. */
  readonly aptDir?: string
}

interface Manifest {
  readonly version: string
  readonly recipe: string
  readonly kernel: string
  readonly initrd: string
  readonly rootDisk: string
  readonly kernelArgs: string
  readonly kernelRelease: string
  readonly pvh: boolean
  readonly mirror: string
  readonly initrdBytes: number
  readonly rootDiskBytes: number
  readonly buildSeconds: number
}

/** Host programs the build runs, and the Debian package each comes from. */
export const BUILD_TOOLS: ReadonlyArray<readonly [program: string, pkg: string]> = [
  ["mmdebstrap", "mmdebstrap"],
  ["mke2fs", "e2fsprogs"],
  ["qemu-img", "qemu-utils"],
  ["chroot", "coreutils"],
  ["xz", "xz-utils"]
]

const CURRENT = "current.json"

/** mmdebstrap splits its special hooks (sync-in DIR …) on whitespace, so the cache path goes in plain. */
const SAFE_HOOK_PATH = /^[^\s"'\\\x00-\x1f]+$/

/** The build a complete manifest in `dir` describes, or undefined when anything is missing or the wrong size. */
async function readBuild(
  dir: string
): Promise<{ readonly image: DebianMiniImage; readonly manifest: Manifest } | undefined> {
  const manifest = await readFile(join(dir, "manifest.json"), "utf8")
    .then((text) => JSON.parse(text) as Manifest)
    .catch(() => undefined)
  if (!manifest) return undefined
  const sizes = await Promise.all(
    [manifest.kernel, manifest.initrd, manifest.rootDisk].map((name) =>
      stat(join(dir, name)).then(
        (info) => (info.isFile() ? info.size : -1),
        () => -1
      )
    )
  )
  if (sizes.some((size) => size < 0) || sizes[1] !== manifest.initrdBytes || sizes[2] !== manifest.rootDiskBytes)
    return undefined
  return {
    manifest,
    image: {
      kernel: join(dir, manifest.kernel),
      initrd: join(dir, manifest.initrd),
      rootDisk: join(dir, manifest.rootDisk),
      kernelArgs: manifest.kernelArgs,
      version: manifest.version
    }
  }
}

/**
 * The build new VMs use: the one current.json names, if complete and made by this recipe.
 * With `rootDisk`, the build that disk belongs to instead (a VM boots the kernel its disk was
 * made with, even after a newer build became current).
 */
export async function readDebianMini(outDir: string, rootDisk?: string): Promise<DebianMiniImage | undefined> {
  if (rootDisk !== undefined) {
    const pinned = await readBuild(dirname(rootDisk))
    return pinned !== undefined && pinned.image.rootDisk === join(dirname(rootDisk), basename(rootDisk))
      ? pinned.image
      : undefined
  }
  const current = await readFile(join(outDir, CURRENT), "utf8")
    .then((text) => (JSON.parse(text) as { version?: unknown }).version)
    .catch(() => undefined)
  if (typeof current !== "string" || !/^[A-Za-z0-9._-]+$/.test(current)) return undefined
  const build = await readBuild(join(outDir, current))
  return build !== undefined && build.manifest.recipe === recipeHash() ? build.image : undefined
}

/** Fails with the typed reason when the host cannot build: not root, or a program missing. */
export async function checkBuildHost(
  pathEnv = process.env["PATH"] ?? "",
  uid = process.getuid?.() ?? 0
): Promise<void> {
  const missing: Array<readonly [string, string]> = []
  for (const tool of BUILD_TOOLS) if ((await findOnPath(tool[0], pathEnv)) === undefined) missing.push(tool)
  if (missing.length > 0) {
    const packages = [...new Set(missing.map(([, pkg]) => pkg))].join(" ")
    throw new DebianMiniBuildError(
      "missing_tool",
      `building ${DEBIAN_MINI_ID} needs ${missing.map(([program]) => program).join(", ")} on PATH; install with: apt-get install -y ${packages}`
    )
  }
  if (uid !== 0) {
    throw new DebianMiniBuildError(
      "needs_root",
      `building ${DEBIAN_MINI_ID} needs root (mmdebstrap --mode=root, then mke2fs -d keeps the files' owners); run stoat pull ${DEBIAN_MINI_ID} as root once`
    )
  }
}

/** mmdebstrap's words for an archive it could not reach (apt's messages, in English under LC_ALL=C). */
const UNREACHABLE =
  /Failed to fetch|Could not resolve|Temporary failure resolving|Unable to connect|Could not connect|Connection timed out|Network is unreachable|is not signed|Release' does not have a Release file/

const readSources = async (aptDir: string) => {
  const files: Array<{ name: string; text: string }> = []
  const main = await readFile(join(aptDir, "sources.list"), "utf8").catch(() => undefined)
  if (main !== undefined) files.push({ name: "sources.list", text: main })
  const partsDir = join(aptDir, "sources.list.d")
  for (const name of (await readdir(partsDir).catch(() => [] as string[])).sort()) {
    if (!name.endsWith(".list") && !name.endsWith(".sources")) continue
    const text = await readFile(join(partsDir, name), "utf8").catch(() => undefined)
    if (text !== undefined) files.push({ name, text })
  }
  return debianSources(files)
}

const errorText = (cause: unknown) => (cause instanceof Error ? cause.message : String(cause))

/** Runs one build step, turning its failure into a `failed` build error that names the step. */
async function step<T>(what: string, body: () => Promise<T>): Promise<T> {
  try {
    return await body()
  } catch (cause) {
    if (cause instanceof DebianMiniBuildError) throw cause
    throw new DebianMiniBuildError("failed", `${DEBIAN_MINI_ID}: ${what} failed: ${errorText(cause)}`)
  }
}

/**
 * Builds (or returns the current) debian-12-mini image: mmdebstrap bookworm minbase from the
 * host's Debian mirror into a directory, configured for Stoat, turned into ext4 with `mke2fs -d`
 * (no loop mount) and then qcow2; its kernel and a busybox initrd beside it for direct boot.
 * Everything is made in a temporary folder and renamed into place; current.json is written last.
 */
export async function buildDebianMini(opts: BuildDebianMiniOptions): Promise<DebianMiniImage> {
  const existing = await readDebianMini(opts.outDir)
  if (existing) return existing
  const log = opts.onStage ?? (() => {})
  await mkdir(opts.outDir, { recursive: true })
  // Two pulls or creates at once build once: the second waits, then finds the first one's build.
  return withBuildLock(
    opts.outDir,
    () => log("waiting for another build of the image to finish"),
    async () => (await readDebianMini(opts.outDir)) ?? buildUnlocked(opts, log)
  )
}

const LOCK = ".build.lock"

/**
 * One attempt at `<dir>/.build.lock` (created exclusively, holding the owner's pid): true once it
 * is ours. A lock whose owner died (a killed build) is removed and taken at once.
 */
const tryLock = (path: string): Promise<boolean> =>
  open(path, "wx").then(
    async (handle) => {
      try {
        await handle.writeFile(`${process.pid}\n`)
      } finally {
        await handle.close()
      }
      return true
    },
    async (error: NodeJS.ErrnoException) => {
      if (error.code !== "EEXIST") throw error
      const owner = Number.parseInt(await readFile(path, "utf8").catch(() => ""), 10)
      // An empty file is a lock being written this instant; only a named, dead owner is stale.
      if (!(owner > 0 && owner !== process.pid && !isProcessAlive(owner))) return false
      await rm(path, { force: true })
      return tryLock(path)
    }
  )

/**
 * Runs `body` holding `<dir>/.build.lock`; a live owner is waited for (looking again each second,
 * for as long as it lives), a dead one's lock taken over. The lock is released however `body` ends.
 */
export async function withBuildLock<T>(dir: string, onWait: () => void, body: () => Promise<T>): Promise<T> {
  const path = join(dir, LOCK)
  let told = false
  const attempt = Effect.tryPromise({ try: () => tryLock(path), catch: (error) => error }).pipe(
    Effect.tap((taken) => {
      if (!taken && !told) {
        told = true
        onWait()
      }
    })
  )
  const locked = pollUntil(attempt, {
    schedule: Schedule.spaced("1 second"),
    until: (taken) => taken,
    within: Duration.infinity,
    onTimeout: () => new Error("unreachable: the wait is unbounded")
  })
  const exit = await Effect.runPromiseExit(
    Effect.acquireUseRelease(
      locked,
      () => Effect.tryPromise({ try: body, catch: (error) => error }),
      () => Effect.promise(() => rm(path, { force: true }))
    )
  )
  if (Exit.isSuccess(exit)) return exit.value
  throw Cause.squash(exit.cause)
}

async function buildUnlocked(opts: BuildDebianMiniOptions, log: (line: string) => void): Promise<DebianMiniImage> {
  const debCache = join(opts.cacheDir, "debs")
  if (!SAFE_HOOK_PATH.test(debCache)) {
    throw new DebianMiniBuildError(
      "invalid_path",
      `the ${DEBIAN_MINI_ID} cache folder ${JSON.stringify(debCache)} must not contain spaces, quotes, backslashes or control characters (mmdebstrap's sync hooks split on them); set STOAT_DEBIAN_MINI_CACHE to a plain path`
    )
  }
  await checkBuildHost()
  const started = Date.now()
  await mkdir(debCache, { recursive: true })
  // Under the lock no other build runs: any work folder here is a killed build's (~1 GB).
  for (const name of await readdir(opts.outDir))
    if (name.startsWith(".build-")) await rm(join(opts.outDir, name), { recursive: true, force: true })
  const work = join(opts.outDir, `.build-${process.pid}-${randomBytes(4).toString("hex")}`)
  const rootfs = join(work, "rootfs")
  try {
    await mkdir(work, { recursive: true })
    const sources = await readSources(opts.aptDir ?? "/etc/apt")
    const mirror = primaryMirror(sources)

    log(`mmdebstrap ${DEBIAN_MINI_ID} from ${mirror} (cached packages in ${debCache})`)
    await run("mmdebstrap", mmdebstrapArgs({ mirror, target: rootfs, debCache }), {
      env: { ...process.env, LC_ALL: "C" },
      onStderrLine: (line) => {
        if (
          /^I: (running apt-get update|downloading packages|extracting archives|installing essential|installing remaining|success)/.test(
            line
          )
        )
          log(`mmdebstrap: ${line.slice(3)}`)
      }
    }).catch((cause: unknown) => {
      const message = errorText(cause)
      if (UNREACHABLE.test(message)) {
        throw new DebianMiniBuildError(
          "mirror_unreachable",
          `the Debian mirror ${mirror} did not answer (from /etc/apt/sources.list*): ${message.split("\n").slice(-3).join("; ")}`
        )
      }
      throw new DebianMiniBuildError("failed", `${DEBIAN_MINI_ID}: mmdebstrap failed: ${message}`)
    })

    log("configuring the guest (user, sshd, systemd units, apt sources)")
    await step("configuring the root file system", async () => {
      for (const path of REMOVED_PATHS) await rm(join(rootfs, path), { force: true })
      for (const file of guestFiles(sources)) {
        await mkdir(dirname(join(rootfs, file.path)), { recursive: true })
        await rm(join(rootfs, file.path), { force: true }) // resolv.conf may be a symlink into the host's
        await writeFile(join(rootfs, file.path), file.content, { mode: file.mode })
      }
      for (const argv of chrootCommands()) await run("chroot", [rootfs, ...argv])
    })

    const kernelRelease = await step("finding the kernel", async () => {
      const releases = await readdir(join(rootfs, "usr/lib/modules"))
      if (releases.length !== 1)
        throw new Error(`expected one kernel in /usr/lib/modules, found ${releases.join(", ") || "none"}`)
      return releases[0]!
    })

    log(`assembling the initrd (kernel ${kernelRelease})`)
    const initrd = await step("assembling the initrd", () => assembleInitrd(rootfs, kernelRelease))
    await writeFile(join(work, "initrd.img"), initrd)

    log("extracting the kernel")
    const { kernelName, pvh } = await step("extracting the kernel", async () => {
      const vmlinuz = await readFile(join(rootfs, "boot", `vmlinuz-${kernelRelease}`))
      const vmlinux = await extractVmlinux(vmlinuz)
      // PVH boot of the uncompressed kernel skips firmware work and in-guest decompression: seconds under TCG.
      if (vmlinux) await writeFile(join(work, "vmlinux"), vmlinux)
      else await copyFile(join(rootfs, "boot", `vmlinuz-${kernelRelease}`), join(work, "vmlinuz"))
      return { kernelName: vmlinux ? "vmlinux" : "vmlinuz", pvh: vmlinux !== undefined }
    })

    log(`making the ext4 file system (${ROOT_FS_SIZE}) and converting it to qcow2`)
    const raw = join(work, "rootfs.raw")
    await step("making the file system", () =>
      run("mke2fs", [
        "-q",
        "-F",
        "-t",
        "ext4",
        "-L",
        "stoat-root",
        "-E",
        "lazy_itable_init=0,lazy_journal_init=0",
        "-d",
        rootfs,
        raw,
        ROOT_FS_SIZE
      ])
    )
    await rm(rootfs, { recursive: true, force: true })
    await step("converting to qcow2", () =>
      run("qemu-img", ["convert", "-f", "raw", "-O", "qcow2", raw, join(work, "rootfs.qcow2")])
    )
    await rm(raw, { force: true })

    const recipe = recipeHash()
    const stamp = new Date().toISOString().replace(/[-:]/g, "").replace(/\..*$/, "").replace("T", "-")
    const version = `${kernelRelease}-${recipe.slice(0, 8)}-${stamp}`
    const manifest: Manifest = {
      version,
      recipe,
      kernel: kernelName,
      initrd: "initrd.img",
      rootDisk: "rootfs.qcow2",
      kernelArgs: DEBIAN_MINI_KERNEL_ARGS,
      kernelRelease,
      pvh,
      mirror,
      initrdBytes: initrd.length,
      rootDiskBytes: (await stat(join(work, "rootfs.qcow2"))).size,
      buildSeconds: Math.round((Date.now() - started) / 100) / 10
    }
    await writeFile(join(work, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`)
    const dir = join(opts.outDir, version)
    await rename(work, dir)
    // current.json last and atomically: until it names the build, nothing uses it.
    const tmp = join(opts.outDir, `.${CURRENT}.${process.pid}-${randomBytes(4).toString("hex")}`)
    await writeFile(tmp, `${JSON.stringify({ version })}\n`)
    await rename(tmp, join(opts.outDir, CURRENT))
    const image = await readDebianMini(opts.outDir)
    if (!image)
      throw new DebianMiniBuildError("failed", `${DEBIAN_MINI_ID}: the finished build in ${dir} does not read back`)
    log(
      `${DEBIAN_MINI_ID} ${version} ready (root disk ${(manifest.rootDiskBytes / 1048576).toFixed(0)} MiB, built in ${manifest.buildSeconds} s)`
    )
    return image
  } finally {
    await rm(work, { recursive: true, force: true })
  }
}

/** Busybox, the modules that reach /dev/vda and eth0 (from the root disk's own kernel), and /init. */
async function assembleInitrd(rootfs: string, kernelRelease: string): Promise<Buffer> {
  const modulesDir = join(rootfs, "usr/lib/modules", kernelRelease)
  const modulesDep = await readFile(join(modulesDir, "modules.dep"), "utf8")
  const builtin = new Set(
    (await readFile(join(modulesDir, "modules.builtin"), "utf8").catch(() => ""))
      .split("\n")
      .filter(Boolean)
      .map((path) =>
        basename(path)
          .replace(/\.ko.*$/, "")
          .replace(/-/g, "_")
      )
  )
  const order = moduleLoadOrder(modulesDep, INITRD_MODULES, builtin)
  const cpio = new CpioWriter()
  for (const dir of ["bin", "dev", "proc", "sys", "newroot", "etc/stoat", "lib/modules"]) cpio.dir(dir)
  // The kernel opens /dev/console for init before /init mounts devtmpfs.
  cpio.charDevice("dev/console", 5, 1, 0o600)
  cpio.file("bin/busybox", await readFile(join(rootfs, "usr/bin/busybox")), 0o755)
  for (const applet of INITRD_APPLETS) cpio.symlink(`bin/${applet}`, "busybox")
  const names: string[] = []
  for (const rel of order) {
    const name = basename(rel)
    if (names.includes(name)) throw new Error(`two initrd modules are named ${name}`)
    names.push(name)
    cpio.file(`lib/modules/${name}`, await readFile(join(modulesDir, rel)), 0o644)
  }
  cpio.file("etc/stoat/modules", `${names.join("\n")}\n`)
  cpio.file("init", initScript(), 0o755)
  return cpio.finish()
}
