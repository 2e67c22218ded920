import { createHash, randomBytes } from "node:crypto"
import { createReadStream } from "node:fs"
import { mkdir, readdir, rename, rm, stat } from "node:fs/promises"
import { join } from "node:path"
import { run, runText } from "./exec.js"

/** A .deb in the cache directory. */
export interface Deb {
  readonly pkg: string
  /** File name as apt names it, e.g. `busybox-static_1%3a1.35.0-4+deb12u1+b1_amd64.deb`. */
  readonly file: string
  readonly path: string
}

const SYSTEM_LISTS = "/var/lib/apt/lists"

interface Uri {
  readonly pkg: string
  readonly file: string
  readonly size: number
  readonly sha256: string | undefined
}

/**
 * apt access confined to a cache directory. We never touch the system's apt state:
 * if the system package lists are missing we run `apt-get update` into private lists
 * under `<cacheDir>/apt/lists` (works unprivileged), and apt's binary cache lives there too
 * (container images often disable it, which makes every apt call ~0.7 s slower).
 */
export class AptCache {
  private privateLists = false
  private updated = false

  constructor(
    readonly cacheDir: string,
    private readonly log: (msg: string) => void
  ) {}

  private get aptDir(): string {
    return join(this.cacheDir, "apt")
  }

  private options(): string[] {
    const o = [
      "-o",
      `Dir::Cache::pkgcache=${join(this.aptDir, this.privateLists ? "pkgcache-private.bin" : "pkgcache.bin")}`
    ]
    if (this.privateLists) {
      o.push("-o", `Dir::State::Lists=${join(this.aptDir, "lists")}`, "-o", "Debug::NoLocking=1")
    }
    // As root apt drops to the _apt user, which cannot write into a user's cache directory.
    if (process.getuid?.() === 0) o.push("-o", "APT::Sandbox::User=root")
    return o
  }

  /**
   * Identifies the state of the package lists apt would read (names, sizes, mtimes). The lists
   * change only on `apt-get update`, so while this is unchanged a previous resolution still holds.
   */
  async listsFingerprint(): Promise<string | undefined> {
    const parts: string[] = []
    for (const dir of [SYSTEM_LISTS, join(this.aptDir, "lists")]) {
      for (const f of (await readdir(dir).catch(() => [] as string[])).sort()) {
        if (!/_(Packages|InRelease|Release)/.test(f)) continue
        const st = await stat(join(dir, f)).catch(() => undefined)
        if (st?.isFile()) parts.push(`${dir}/${f}:${st.size}:${st.mtimeMs}`)
      }
    }
    return parts.length > 0 ? createHash("sha256").update(parts.join("\n")).digest("hex") : undefined
  }

  /** Runs an apt command; on a "no such package / no source" failure, updates private lists once and retries. */
  private async apt(cmd: "apt-get" | "apt-cache", args: string[], cwd?: string): Promise<string> {
    await mkdir(this.aptDir, { recursive: true })
    // Private lists exist only because the system's were unusable before; keep using them.
    if (!this.privateLists) {
      const own = await readdir(join(this.aptDir, "lists")).catch(() => [] as string[])
      if (own.some((f) => f.includes("_Packages"))) this.privateLists = true
    }
    try {
      return await runText(cmd, [...this.options(), ...args], cwd === undefined ? {} : { cwd })
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e)
      if (
        this.updated ||
        !/Unable to locate package|Can't find a source|has no installation candidate|No packages found|Can't select|404\s+Not Found|Failed to fetch/i.test(
          msg
        )
      ) {
        throw e
      }
      await this.update()
      return await runText(cmd, [...this.options(), ...args], cwd === undefined ? {} : { cwd })
    }
  }

  private async update(): Promise<void> {
    this.log("apt package lists missing or stale: running apt-get update into the cache directory")
    this.privateLists = true
    this.updated = true
    await mkdir(join(this.aptDir, "lists", "partial"), { recursive: true })
    await run("apt-get", [...this.options(), "update"])
  }

  /** Direct dependencies (Depends + Pre-Depends, first alternative, no virtual packages) of each package. */
  async depends(pkgs: readonly string[]): Promise<Map<string, string[]>> {
    const out = await this.apt("apt-cache", [
      "depends",
      "--no-recommends",
      "--no-suggests",
      "--no-conflicts",
      "--no-breaks",
      "--no-replaces",
      "--no-enhances",
      ...pkgs
    ])
    const deps = new Map<string, string[]>()
    let cur: string[] | undefined
    let skipNext = false
    for (const line of out.split("\n")) {
      if (/^\S/.test(line)) {
        cur = []
        deps.set(line.trim(), cur)
        skipNext = false
        continue
      }
      const m = /^\s+(\|)?(?:Pre)?Depends:\s+(\S+)/.exec(line)
      if (!m || !cur) continue
      const name = m[2] ?? ""
      // "|Depends: a" is followed by its alternatives; keep only the first of each group.
      if (!skipNext && !name.startsWith("<")) cur.push(name.replace(/:any$/, ""))
      skipNext = m[1] === "|"
    }
    return deps
  }

  /**
   * Makes sure the candidate .deb of each package is in the cache directory and returns them.
   * Cached files are reused when their size matches what apt expects; new downloads are
   * checked against apt's SHA256 and renamed into place only when complete.
   */
  async fetch(pkgs: readonly string[]): Promise<Deb[]> {
    let uris: Uri[]
    try {
      // Not in cacheDir: apt leaves out packages whose .deb already sits in the working directory.
      uris = parseUris(await this.apt("apt-get", ["download", "--print-uris", ...pkgs], this.aptDir))
    } catch (e) {
      // Offline with no usable package lists: fall back to whatever is already cached.
      const cached = await this.cachedFallback(pkgs)
      if (cached) {
        this.log(`apt unavailable (${firstLine(e)}); using cached packages`)
        return cached
      }
      throw e
    }
    const got = new Set(uris.map((u) => u.pkg))
    const absent = pkgs.filter((p) => !got.has(p))
    if (absent.length > 0) throw new Error(`apt-get download --print-uris returned nothing for ${absent.join(", ")}`)
    const missing: Uri[] = []
    for (const u of uris) {
      const st = await stat(join(this.cacheDir, u.file)).catch(() => undefined)
      if (!st || st.size !== u.size) missing.push(u)
    }
    if (missing.length > 0) {
      this.log(`downloading ${missing.map((u) => u.pkg).join(" ")}`)
      const tmp = join(this.cacheDir, `.download-${process.pid}-${randomBytes(4).toString("hex")}`)
      await mkdir(tmp, { recursive: true })
      try {
        await this.apt("apt-get", ["download", ...missing.map((u) => u.pkg)], tmp)
        for (const u of missing) {
          const p = join(tmp, u.file)
          if (u.sha256 !== undefined && (await sha256File(p)) !== u.sha256) {
            throw new Error(`downloaded ${u.file} does not match apt's SHA256`)
          }
          await rename(p, join(this.cacheDir, u.file))
        }
      } finally {
        await rm(tmp, { recursive: true, force: true })
      }
    }
    return uris.map((u) => ({ pkg: u.pkg, file: u.file, path: join(this.cacheDir, u.file) }))
  }

  private async cachedFallback(pkgs: readonly string[]): Promise<Deb[] | undefined> {
    const files = await readdir(this.cacheDir).catch(() => [] as string[])
    const out: Deb[] = []
    for (const pkg of pkgs) {
      const candidates = files.filter((f) => f.startsWith(`${pkg}_`) && f.endsWith(".deb"))
      if (candidates.length === 0) return undefined
      // Newest by mtime: the most recent download is the most recent candidate apt knew about.
      let best: { f: string; t: number } | undefined
      for (const f of candidates) {
        const t = (await stat(join(this.cacheDir, f))).mtimeMs
        if (!best || t > best.t) best = { f, t }
      }
      if (best) out.push({ pkg, file: best.f, path: join(this.cacheDir, best.f) })
    }
    return out
  }
}

function parseUris(text: string): Uri[] {
  const out: Uri[] = []
  for (const line of text.split("\n")) {
    const m = /^'([^']+)'\s+(\S+)\s+(\d+)\s+(\S+)/.exec(line.trim())
    if (!m) continue
    const file = m[2] ?? ""
    const hash = m[4] ?? ""
    out.push({
      pkg: file.slice(0, file.indexOf("_")),
      file,
      size: Number(m[3]),
      sha256: hash.toUpperCase().startsWith("SHA256:") ? hash.slice(7).toLowerCase() : undefined
    })
  }
  return out
}

export function sha256File(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const h = createHash("sha256")
    createReadStream(path)
      .on("data", (b) => h.update(b))
      .on("error", reject)
      .on("end", () => resolve(h.digest("hex")))
  })
}

function firstLine(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).split("\n")[0] ?? ""
}
