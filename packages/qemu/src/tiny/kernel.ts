import { randomBytes } from "node:crypto"
import { mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises"
import { basename, dirname, join, relative } from "node:path"
import { PassThrough } from "node:stream"
import { Effect } from "effect"
import { runChild } from "../child.js"
import { hasPvhNote, isElf64, modinfo } from "./elf.js"
import { run } from "./exec.js"
import type { Deb } from "./debs.js"

/** Kernel modules the guest needs, by group; rc.sysinit loads a group only when its hardware is present. */
export const MODULE_GROUPS: Readonly<Record<string, readonly string[]>> = {
  // virtio PCI transport, network, block, entropy (dropbear key generation), ACPI power button + evdev for acpid
  base: ["virtio_pci", "virtio_net", "virtio_blk", "virtio_rng", "button", "evdev"],
  // crc32c_generic is only a soft dependency of ext4/jbd2, so name it explicitly
  ext4: ["ext4", "crc32c_generic"],
  "9p": ["9pnet_virtio", "9p"],
  // shipped for manual `modprobe` (seed ISOs, vfat sticks); never loaded automatically
  extra: ["isofs", "vfat", "nls_cp437", "nls_ascii", "nls_utf8"]
}

/** Dependencies the Debian 6.1 kernel is known to need, extracted in the first pass to avoid a second one. */
const KNOWN_DEPS = [
  "virtio",
  "virtio_ring",
  "virtio_pci_modern_dev",
  "virtio_pci_legacy_dev",
  "failover",
  "net_failover",
  "crc16",
  "mbcache",
  "jbd2",
  "9pnet",
  "netfs",
  "fscache",
  "fat",
  "cdrom"
]

export interface PreparedKernel {
  /** `uname -r`, e.g. 6.1.0-57-amd64 */
  readonly release: string
  /** Absolute path of the file QEMU boots: an uncompressed PVH vmlinux when possible, else vmlinuz. */
  readonly kernelPath: string
  readonly pvh: boolean
  /** Root holding lib/modules/<release>/… for the selected modules. */
  readonly root: string
  /** Group name → module paths relative to lib/modules/<release>, in load order. */
  readonly groups: Record<string, string[]>
  /** modules.dep lines for every shipped module (so `modprobe` works in the guest). */
  readonly modulesDep: string
}

interface KernelMeta {
  readonly release: string
  readonly kernelFile: string
  readonly pvh: boolean
  readonly groups: Record<string, string[]>
  readonly modulesDep: string
  readonly wanted: string
}

const norm = (name: string) => name.replace(/-/g, "_")

/**
 * Unpacks what the guest needs from the kernel .deb into `<cacheDir>/kernel/<deb>/`, once:
 * xz-decompressing the 70 MB package takes ~5 s, which would otherwise dominate every rebuild.
 */
export async function prepareKernel(deb: Deb, cacheDir: string, log: (m: string) => void): Promise<PreparedKernel> {
  const wanted = JSON.stringify(MODULE_GROUPS)
  const dir = join(cacheDir, "kernel", deb.file.replace(/\.deb$/, ""))
  const metaPath = join(dir, "kernel.json")
  const fromCache = async (): Promise<PreparedKernel | undefined> => {
    const cached = await readFile(metaPath, "utf8")
      .then((t) => JSON.parse(t) as KernelMeta)
      .catch(() => undefined)
    if (!cached || cached.wanted !== wanted) return undefined
    return {
      release: cached.release,
      kernelPath: join(dir, cached.kernelFile),
      pvh: cached.pvh,
      root: join(dir, "root"),
      groups: cached.groups,
      modulesDep: cached.modulesDep
    }
  }
  const hit = await fromCache()
  if (hit) return hit

  log(`unpacking kernel from ${deb.file}`)
  const tmp = `${dir}.tmp-${process.pid}-${randomBytes(4).toString("hex")}`
  await rm(tmp, { recursive: true, force: true })
  const root = join(tmp, "root")
  await mkdir(root, { recursive: true })
  try {
    const allWanted = Object.values(MODULE_GROUPS).flat()
    await extract(deb.path, root, [
      "./boot/vmlinuz-*",
      "./lib/modules/*/modules.builtin",
      ...modulePatterns([...allWanted, ...KNOWN_DEPS])
    ])
    const bootFiles = await readdir(join(root, "boot")).catch(() => [] as string[])
    const vmlinuzName = bootFiles.find((f) => f.startsWith("vmlinuz-"))
    if (!vmlinuzName) throw new Error(`${deb.file} contains no boot/vmlinuz-*`)
    const release = vmlinuzName.slice("vmlinuz-".length)
    const modRoot = join(root, "lib", "modules", release)
    const builtin = new Set(
      (await readFile(join(modRoot, "modules.builtin"), "utf8").catch(() => ""))
        .split("\n")
        .filter(Boolean)
        .map((p) => norm(basename(p).replace(/\.ko.*$/, "")))
    )

    // name → relative path, and name → depends, for everything extracted; extract missing deps in extra passes.
    const found = new Map<string, string>()
    const deps = new Map<string, string[]>()
    for (let pass = 0; ; pass++) {
      for (const rel of await listModules(modRoot)) {
        const name = norm(basename(rel).replace(/\.ko$/, ""))
        if (deps.has(name)) continue
        const info = modinfo(await readFile(join(modRoot, rel)))
        found.set(name, rel)
        deps.set(name, (info.get("depends")?.[0] ?? "").split(",").filter(Boolean).map(norm))
      }
      const missing = new Set<string>()
      for (const d of [...deps.values()].flat()) if (!found.has(d) && !builtin.has(d)) missing.add(d)
      if (missing.size === 0) break
      if (pass >= 3) throw new Error(`kernel modules not found in ${deb.file}: ${[...missing].join(", ")}`)
      log(`extracting module dependencies: ${[...missing].join(" ")}`)
      await extract(deb.path, root, modulePatterns([...missing]))
    }

    // Group lists in load order; a module lands in the first group that needs it.
    const groups: Record<string, string[]> = {}
    const placed = new Set<string>()
    for (const [group, names] of Object.entries(MODULE_GROUPS)) {
      const order: string[] = []
      const visit = (n: string, chain: string[]) => {
        if (placed.has(n) || builtin.has(n)) return
        if (chain.includes(n)) throw new Error(`module dependency cycle: ${[...chain, n].join(" -> ")}`)
        for (const d of deps.get(n) ?? []) visit(d, [...chain, n])
        const rel = found.get(n)
        if (!rel) throw new Error(`kernel module ${n} is neither in ${deb.file} nor built in`)
        placed.add(n)
        order.push(rel)
      }
      for (const n of names) visit(norm(n), [])
      groups[group] = order
    }
    const modulesDep = [...found.entries()]
      .filter(([n]) => placed.has(n))
      .map(([n, rel]) => `${rel}:${(deps.get(n) ?? []).map((d) => (found.has(d) ? ` ${found.get(d)}` : "")).join("")}`)
      .join("\n")

    // Drop extracted-but-unused modules so the directory holds exactly what ships.
    for (const [n, rel] of found) if (!placed.has(n)) await rm(join(modRoot, rel))

    const vmlinuz = await readFile(join(root, "boot", vmlinuzName))
    const vmlinux = await extractVmlinux(vmlinuz)
    let kernelFile: string
    if (vmlinux) {
      kernelFile = "vmlinux"
      await writeFile(join(tmp, kernelFile), vmlinux)
    } else {
      log("no PVH-capable vmlinux inside vmlinuz; booting the compressed kernel (slower under TCG)")
      kernelFile = "vmlinuz"
      await writeFile(join(tmp, kernelFile), vmlinuz)
    }
    await rm(join(root, "boot"), { recursive: true, force: true })
    const meta: KernelMeta = { release, kernelFile, pvh: vmlinux !== undefined, groups, modulesDep, wanted }
    await writeFile(join(tmp, "kernel.json"), JSON.stringify(meta, null, 2))
    // A concurrent build may have finished first; keep its copy, which others may be reading.
    const raced = await fromCache()
    if (raced) {
      await rm(tmp, { recursive: true, force: true })
      return raced
    }
    await rm(dir, { recursive: true, force: true })
    await mkdir(dirname(dir), { recursive: true })
    await rename(tmp, dir)
    return { release, kernelPath: join(dir, kernelFile), pvh: meta.pvh, root: join(dir, "root"), groups, modulesDep }
  } catch (e) {
    await rm(tmp, { recursive: true, force: true })
    throw e
  }
}

function modulePatterns(names: readonly string[]): string[] {
  // File names use '-' or '_' inconsistently (virtio-rng.ko is module virtio_rng); match both.
  return names.flatMap((n) => {
    const variants = new Set([n, n.replace(/_/g, "-")])
    return [...variants].map((v) => `./lib/modules/*/kernel/*/${v}.ko*`)
  })
}

async function extract(debPath: string, into: string, patterns: readonly string[]): Promise<void> {
  // dpkg-deb streams the data tarball; GNU tar's --wildcards lets one pass pick the few files we want.
  const tarball = new PassThrough()
  const [dpkg, tar] = await Effect.runPromise(
    Effect.all(
      [
        runChild("dpkg-deb", ["--fsys-tarfile", debPath], { stdout: tarball }),
        runChild("tar", ["-x", "-C", into, "--wildcards", ...patterns], { input: tarball, stdout: "ignore" })
      ],
      {
        concurrency: 2
      }
    ).pipe(Effect.mapError((failure) => new Error(failure.message)))
  )
  // tar fails when a pattern matches nothing, which is expected (dash/underscore variants); anything else is real.
  const tarReal = tar.stderr.split("\n").filter((l) => l && !/Not found in archive|Exiting with failure status/.test(l))
  if (dpkg.code !== 0) throw new Error(`dpkg-deb --fsys-tarfile ${debPath} failed: ${dpkg.stderr.trim()}`)
  if (tarReal.length > 0) throw new Error(`tar failed extracting ${debPath}: ${tarReal.join("; ")}`)
  // Debian 13+ compresses modules; busybox insmod only loads plain .ko files.
  for (const rel of await listModules(into, /\.ko\.(xz|zst)$/)) {
    const p = join(into, rel)
    await run(p.endsWith(".xz") ? "xz" : "zstd", ["-d", "-f", "-q", p])
  }
}

async function listModules(dir: string, re = /\.ko$/): Promise<string[]> {
  const out: string[] = []
  const walk = async (d: string) => {
    for (const e of await readdir(d, { withFileTypes: true }).catch(() => [])) {
      const p = join(d, e.name)
      if (e.isDirectory()) await walk(p)
      else if (re.test(e.name)) out.push(relative(dir, p))
    }
  }
  await walk(dir)
  return out.sort()
}

const XZ_MAGIC = Buffer.from([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00])

/**
 * Finds the XZ payload inside a bzImage and decompresses it to the ELF vmlinux. Booting that
 * via its PVH note skips SeaBIOS and in-guest decompression, which is slow under TCG.
 * Returns undefined when no candidate yields a PVH-capable ELF.
 */
export async function extractVmlinux(vmlinuz: Buffer): Promise<Buffer | undefined> {
  for (let off = vmlinuz.indexOf(XZ_MAGIC); off >= 0; off = vmlinuz.indexOf(XZ_MAGIC, off + 1)) {
    // --single-stream ignores the data that follows the payload inside the bzImage.
    const out = await run("xz", ["-dc", "--single-stream"], { input: vmlinuz.subarray(off) }).catch(() => undefined)
    if (out && isElf64(out.stdout) && hasPvhNote(out.stdout)) return out.stdout
  }
  return undefined
}
