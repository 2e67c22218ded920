/**
 * The pure parts of the debian-12-mini builder: reading the host's apt sources, the mmdebstrap
 * command line, the guest's files and chroot commands, the initrd's module order and /init, and
 * when a cached build counts as usable. No mmdebstrap run, no root needed.
 */
import { execFileSync } from "node:child_process"
import { existsSync } from "node:fs"
import { mkdir, mkdtemp, rm, truncate, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Either, Layer } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { BUNDLED_GUESTS, dataRootAt, ImageBuilder } from "@stoat/core"
import {
  buildDebianMini,
  checkBuildHost,
  DebianMiniBuildError,
  readDebianMini,
  withBuildLock
} from "../../src/debian-mini/build.js"
import {
  chrootCommands,
  DEBIAN_MINI_KERNEL_ARGS,
  debianSources,
  EXCLUDED_MODULE_TREES,
  GUEST_USER,
  guestAptSources,
  guestFiles,
  initScript,
  MASKED_UNITS,
  mmdebstrapArgs,
  moduleLoadOrder,
  PACKAGES,
  primaryMirror,
  recipeHash,
  STOAT_UNITS
} from "../../src/debian-mini/recipe.js"
import { makeQemuImageBuilder } from "../../src/image-builder.js"
import { GUEST_AUTHORIZED_KEYS, GUEST_HOSTNAME, GUEST_OPENSSH_HOST_KEY } from "../../src/tiny/guest-files.js"
import { TINY_SSHD_MARKER } from "../../src/tiny/guest-files.js"

const scratch: string[] = []
const tempDir = async () => {
  const dir = await mkdtemp(join(tmpdir(), "stoat-debmini-"))
  scratch.push(dir)
  return dir
}
afterEach(async () => {
  for (const dir of scratch.splice(0)) await rm(dir, { recursive: true, force: true })
})

// What this machine's /etc/apt holds: deb822 with comments, plus third-party repositories.
const HOST_DEBIAN_SOURCES = `Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
# http://snapshot.debian.org/archive/debian-security/20250520T000000Z
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
`
const NODESOURCE = `Types: deb
URIs: https://deb.nodesource.com/node_20.x
Suites: nodistro
Components: main
`

describe("the host's apt sources", () => {
  it("keeps the Debian archives for bookworm and drops third-party repositories", () => {
    const sources = debianSources([
      { name: "debian.sources", text: HOST_DEBIAN_SOURCES },
      { name: "google-cloud-sdk.list", text: "deb https://packages.cloud.google.com/apt cloud-sdk-bookworm main\n" },
      { name: "nodesource.sources", text: NODESOURCE }
    ])
    expect(sources).toEqual([
      { uri: "http://deb.debian.org/debian", suites: ["bookworm", "bookworm-updates"], components: ["main"] },
      { uri: "http://deb.debian.org/debian-security", suites: ["bookworm-security"], components: ["main"] }
    ])
    expect(primaryMirror(sources)).toBe("http://deb.debian.org/debian")
  })

  it("reads one-line entries with options, merges a mirror named twice and skips other releases and disabled stanzas", () => {
    const sources = debianSources([
      {
        name: "sources.list",
        text: [
          "# deb http://commented.example/debian bookworm main",
          "deb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian/ bookworm main contrib",
          "deb http://mirror.example/debian bookworm-updates main non-free-firmware # trailing comment",
          "deb-src http://mirror.example/debian bookworm main",
          "deb http://mirror.example/debian trixie main",
          "deb http://security.example/debian-security bookworm-security main"
        ].join("\n")
      },
      {
        name: "off.sources",
        text: "Types: deb\nEnabled: no\nURIs: http://off.example/debian\nSuites: bookworm\nComponents: main\n"
      },
      {
        name: "ubuntu.sources",
        text: "Types: deb\nURIs: http://archive.ubuntu.com/ubuntu\nSuites: jammy\nComponents: main\n"
      }
    ])
    expect(sources).toEqual([
      {
        uri: "http://mirror.example/debian",
        suites: ["bookworm", "bookworm-updates"],
        components: ["main", "contrib", "non-free-firmware"]
      },
      { uri: "http://security.example/debian-security", suites: ["bookworm-security"], components: ["main"] }
    ])
    expect(primaryMirror(sources)).toBe("http://mirror.example/debian")
  })

  it("falls back to deb.debian.org (and its security archive) when the host has no Debian source", () => {
    expect(debianSources([])).toEqual([])
    expect(primaryMirror([])).toBe("http://deb.debian.org/debian")
    const text = guestAptSources([])
    expect(text).toContain("URIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\n")
    expect(text).toContain("URIs: http://deb.debian.org/debian-security\nSuites: bookworm-security\n")
    expect(text.match(/^Signed-By: \/usr\/share\/keyrings\/debian-archive-keyring.gpg$/gm)).toHaveLength(2)
  })

  it("writes the guest's debian.sources from the host's mirrors", () => {
    const text = guestAptSources(debianSources([{ name: "debian.sources", text: HOST_DEBIAN_SOURCES }]))
    expect(text).toBe(
      "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n" +
        "Types: deb\nURIs: http://deb.debian.org/debian-security\nSuites: bookworm-security\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
    )
  })
})

describe("the mmdebstrap command line", () => {
  const args = mmdebstrapArgs({
    mirror: "http://mirror.example/debian",
    target: "/out/rootfs",
    debCache: "/cache/debs"
  })

  it("installs minbase plus systemd, apt, sudo, OpenSSH and the generic kernel, as root into a directory", () => {
    expect(args.slice(0, 3)).toEqual(["--variant=minbase", "--mode=root", "--format=directory"])
    const include = args
      .find((arg) => arg.startsWith("--include="))
      ?.slice("--include=".length)
      .split(",")
    expect(include).toEqual([...PACKAGES])
    for (const pkg of [
      "systemd",
      "systemd-sysv",
      "dbus",
      "apt",
      "sudo",
      "openssh-server",
      "linux-image-amd64",
      "busybox-static"
    ])
      expect(include).toContain(pkg)
    expect(include).not.toContain("cloud-init")
    expect(args.slice(-3)).toEqual(["bookworm", "/out/rootfs", "http://mirror.example/debian"])
  })

  it("skips docs, man pages, the initramfs-tools kernel hook and the module trees a VM never loads", () => {
    const excluded = args
      .filter((arg) => arg.startsWith("--dpkgopt=path-exclude="))
      .map((arg) => arg.slice("--dpkgopt=path-exclude=".length))
    expect(excluded).toContain("/usr/share/doc/*")
    expect(excluded).toContain("/usr/share/man/*")
    expect(excluded).toContain("/etc/kernel/postinst.d/initramfs-tools")
    // Bookworm's kernel package ships under /lib; both spellings, so a merged-/usr package is covered too.
    for (const tree of EXCLUDED_MODULE_TREES) {
      expect(excluded).toContain(`/lib/modules/*/kernel/${tree}/*`)
      expect(excluded).toContain(`/usr/lib/modules/*/kernel/${tree}/*`)
    }
    // What the guest needs stays: virtio, ext4, 9p.
    for (const kept of ["drivers/virtio", "drivers/block", "fs", "net/9p", "drivers/net"])
      expect(EXCLUDED_MODULE_TREES).not.toContain(kept)
    expect(args).toContain("--dpkgopt=path-include=/usr/share/doc/*/copyright")
  })

  it("keeps downloaded packages in the cache folder and the package lists in the image", () => {
    expect(args).toContain("--setup-hook=sync-in /cache/debs /var/cache/apt/archives/")
    expect(args).toContain("--customize-hook=sync-out /var/cache/apt/archives /cache/debs")
    expect(args).toContain("--skip=essential/unlink")
    expect(args).toContain("--skip=cleanup/apt/lists")
  })

  it("refuses a cache path that mmdebstrap's hooks would split, before anything runs", async () => {
    const dir = await tempDir()
    for (const bad of ["with space", "quo'te", 'dq"', "back\\slash", "new\nline"]) {
      const error = await buildDebianMini({ cacheDir: join(dir, bad), outDir: join(dir, "out") }).catch(
        (e: unknown) => e
      )
      expect(error).toBeInstanceOf(DebianMiniBuildError)
      expect((error as DebianMiniBuildError).kind).toBe("invalid_path")
    }
  })
})

describe("the guest's configuration", () => {
  const files = guestFiles(debianSources([{ name: "debian.sources", text: HOST_DEBIAN_SOURCES }]))
  const file = (path: string) => {
    const found = files.find((f) => f.path === path)
    if (!found) throw new Error(`no ${path}`)
    return found
  }

  it("logs in as the bundled debian guest's user, with passwordless sudo as its escalation expects", () => {
    const debian = BUNDLED_GUESTS.find((guest) => guest.name === "debian")!
    expect(GUEST_USER.name).toBe(debian.default_ssh_user)
    expect(debian.escalate).toEqual(["sudo", "-n"])
    expect(file(`etc/sudoers.d/${GUEST_USER.name}`)).toEqual({
      path: "etc/sudoers.d/stoat",
      content: "stoat ALL=(ALL) NOPASSWD:ALL\n",
      mode: 0o440
    })
    const useradd = chrootCommands()[0]!
    expect(useradd).toEqual([
      "useradd",
      "--create-home",
      "--uid",
      "1000",
      "--user-group",
      "--groups",
      "sudo,adm,systemd-journal",
      "--shell",
      debian.shell,
      "stoat"
    ])
  })

  it("points sshd at this boot's host key and authorized keys in /run, IPv4 only", () => {
    const sshd = file("etc/ssh/sshd_config.d/stoat.conf").content
    expect(sshd).toMatch(/^HostKey \/run\/stoat\/ssh_host_ed25519_key$/m)
    expect(sshd).toMatch(/^AuthorizedKeysFile \.ssh\/authorized_keys \/run\/stoat\/authorized_keys\/%u$/m)
    expect(sshd).toMatch(/^AddressFamily inet$/m)
    // The kernel runs without IPv6; sshd must not try to listen on it.
    expect(DEBIAN_MINI_KERNEL_ARGS).toContain("ipv6.disable=1")
  })

  it("uses QEMU's user-mode network DNS, never fscks or waits on the network, and prints the ready line after sshd", () => {
    expect(file("etc/resolv.conf").content).toBe("nameserver 10.0.2.3\n")
    expect(file("etc/fstab").content).toMatch(/^\/dev\/vda \/ ext4 rw,errors=remount-ro 0 0$/m)
    const ready = file("etc/systemd/system/stoat-ready.service").content
    expect(ready).toMatch(/^After=ssh\.service$/m)
    expect(ready).toContain(`echo "${TINY_SSHD_MARKER}" > /dev/console`)
    expect(file("etc/systemd/system/stoat-growfs.service").content).toMatch(
      /^After=local-fs\.target stoat-ready\.service$/m
    )
    expect(file("etc/systemd/system/stoat-hostkey.service").content).toMatch(
      /^ConditionPathExists=!\/run\/stoat\/ssh_host_ed25519_key$/m
    )
    expect(file("etc/apt/sources.list.d/debian.sources").content).toContain(
      "URIs: http://deb.debian.org/debian-security\n"
    )
  })

  it("enables its own units and masks the timers and units that would fight a test for dpkg or the CPU", () => {
    const commands = chrootCommands()
    expect(commands).toContainEqual(["systemctl", "enable", ...STOAT_UNITS])
    expect(commands).toContainEqual(["systemctl", "mask", ...MASKED_UNITS])
    for (const unit of ["apt-daily.timer", "apt-daily-upgrade.timer"]) expect(MASKED_UNITS).toContain(unit)
    for (const unit of STOAT_UNITS) expect(files.map((f) => f.path)).toContain(`etc/systemd/system/${unit}`)
    expect(MASKED_UNITS).not.toContain("ssh.service")
    expect(MASKED_UNITS).not.toContain("systemd-journald.service")
  })

  it("writes every file once, relative to the root", () => {
    const paths = files.map((f) => f.path)
    expect(new Set(paths).size).toBe(paths.length)
    for (const path of paths) expect(path).toMatch(/^[a-z][a-z0-9._/@-]*$/)
  })
})

// From this machine's bookworm kernel (6.1.0-50-amd64).
const MODULES_DEP = `kernel/fs/ext4/ext4.ko: kernel/lib/crc16.ko kernel/fs/mbcache.ko kernel/fs/jbd2/jbd2.ko
kernel/fs/jbd2/jbd2.ko:
kernel/fs/mbcache.ko:
kernel/lib/crc16.ko:
kernel/fs/9p/9p.ko: kernel/net/9p/9pnet.ko kernel/fs/fscache/fscache.ko kernel/fs/netfs/netfs.ko
kernel/fs/fscache/fscache.ko: kernel/fs/netfs/netfs.ko
kernel/fs/netfs/netfs.ko:
kernel/net/9p/9pnet.ko:
kernel/net/9p/9pnet_virtio.ko: kernel/net/9p/9pnet.ko kernel/drivers/virtio/virtio_ring.ko kernel/drivers/virtio/virtio.ko
kernel/crypto/crc32c_generic.ko:
kernel/drivers/virtio/virtio.ko:
kernel/drivers/virtio/virtio_ring.ko:
kernel/drivers/virtio/virtio_pci_legacy_dev.ko:
kernel/drivers/virtio/virtio_pci_modern_dev.ko:
kernel/drivers/virtio/virtio_pci.ko: kernel/drivers/virtio/virtio_pci_legacy_dev.ko kernel/drivers/virtio/virtio_pci_modern_dev.ko kernel/drivers/virtio/virtio_ring.ko kernel/drivers/virtio/virtio.ko
kernel/drivers/block/virtio_blk.ko: kernel/drivers/virtio/virtio_ring.ko kernel/drivers/virtio/virtio.ko
kernel/drivers/net/net_failover.ko: kernel/net/core/failover.ko
kernel/net/core/failover.ko:
kernel/drivers/net/virtio_net.ko: kernel/drivers/net/net_failover.ko kernel/net/core/failover.ko kernel/drivers/virtio/virtio_ring.ko kernel/drivers/virtio/virtio.ko
kernel/drivers/char/hw_random/virtio-rng.ko: kernel/drivers/virtio/virtio_ring.ko kernel/drivers/virtio/virtio.ko
`

describe("the initrd's module order", () => {
  it("loads every module after what it depends on, each once", () => {
    const order = moduleLoadOrder(MODULES_DEP, [
      "virtio_pci",
      "virtio_blk",
      "virtio_net",
      "ext4",
      "crc32c_generic",
      "9pnet_virtio",
      "9p"
    ])
    expect(new Set(order).size).toBe(order.length)
    const at = (name: string) => order.findIndex((path) => path.endsWith(`/${name}.ko`))
    for (const line of MODULES_DEP.trim().split("\n")) {
      const [path, deps] = line.split(":") as [string, string]
      if (!order.includes(path)) continue
      for (const dep of deps.trim().split(/\s+/).filter(Boolean))
        expect(order.indexOf(dep), `${dep} before ${path}`).toBeLessThan(order.indexOf(path))
    }
    expect(at("virtio")).toBe(0)
    expect(order).toHaveLength(MODULES_DEP.trim().split("\n").length - 1) // everything listed but virtio-rng, which nothing here wants
    expect(at("virtio-rng")).toBe(-1)
  })

  it("takes names with dashes or underscores, skips built-in modules, and names what is missing", () => {
    expect(moduleLoadOrder(MODULES_DEP, ["virtio_rng"])).toEqual([
      "kernel/drivers/virtio/virtio.ko",
      "kernel/drivers/virtio/virtio_ring.ko",
      "kernel/drivers/char/hw_random/virtio-rng.ko"
    ])
    expect(moduleLoadOrder(MODULES_DEP, ["crc32c-generic"])).toEqual(["kernel/crypto/crc32c_generic.ko"])
    expect(moduleLoadOrder("", ["ext4"], new Set(["ext4"]))).toEqual([])
    expect(() => moduleLoadOrder(MODULES_DEP, ["nosuch"])).toThrow(/nosuch is neither in modules.dep nor built in/)
    expect(() => moduleLoadOrder("a.ko: b.ko\nb.ko: a.ko\n", ["a"])).toThrow(/cycle: a -> b -> a/)
  })
})

describe("the initrd's /init", () => {
  const init = initScript()

  it("is valid shell", () => {
    expect(() => execFileSync("sh", ["-n"], { input: init })).not.toThrow()
  })

  it("reads the files the per-VM archive writes, and hands them over in /run with sshd's modes", () => {
    for (const path of [GUEST_AUTHORIZED_KEYS, GUEST_OPENSSH_HOST_KEY, GUEST_HOSTNAME])
      expect(init).toContain(`/${path}`)
    expect(init).toContain("mount -t tmpfs -o nosuid,nodev,mode=0755 tmpfs /newroot/run")
    // sshd reads authorized keys as the user: the copy must be readable; the host key must not be.
    expect(init).toContain("chmod 0644 /newroot/run/stoat/authorized_keys/stoat")
    expect(init).toContain("chmod 0600 /newroot/run/stoat/ssh_host_ed25519_key")
    expect(init).toMatch(/exec switch_root \/newroot \/sbin\/init\n$/)
  })

  it("mounts the 9p shares like the tiny guest: host read-only, any other tag read-write, odd tags skipped", () => {
    expect(init).toContain(`case "$tag" in ""|*/*|.|..) continue ;; host) mode=ro ;; *) mode=rw ;; esac`)
    expect(init).toContain(
      `mount -t 9p -o "trans=virtio,version=9p2000.L,msize=262144,$mode" "$tag" "/newroot/mnt/$tag"`
    )
    expect(init).toContain(`[ "$mode" = rw ] && chown 1000:1000 "/newroot/mnt/$tag"`)
  })
})

describe("the build cache", () => {
  /** A build folder with the files a manifest names, at the sizes it records. */
  const fakeBuild = async (outDir: string, version: string, recipe = recipeHash()) => {
    const dir = join(outDir, version)
    await mkdir(dir, { recursive: true })
    await writeFile(join(dir, "vmlinux"), "k")
    await writeFile(join(dir, "initrd.img"), "initrd")
    await writeFile(join(dir, "rootfs.qcow2"), "qcow2-bytes")
    const manifest = {
      version,
      recipe,
      kernel: "vmlinux",
      initrd: "initrd.img",
      rootDisk: "rootfs.qcow2",
      kernelArgs: DEBIAN_MINI_KERNEL_ARGS,
      initrdBytes: 6,
      rootDiskBytes: 11
    }
    await writeFile(join(dir, "manifest.json"), JSON.stringify(manifest))
    return dir
  }
  const point = (outDir: string, version: string) =>
    writeFile(join(outDir, "current.json"), JSON.stringify({ version }))

  it("uses the build current.json names once it is complete and made by this recipe", async () => {
    const out = await tempDir()
    expect(await readDebianMini(out)).toBeUndefined()
    const dir = await fakeBuild(out, "v1")
    // Not current yet: a build folder alone (a build still renaming into place) is never used.
    expect(await readDebianMini(out)).toBeUndefined()
    await point(out, "v1")
    expect(await readDebianMini(out)).toEqual({
      kernel: join(dir, "vmlinux"),
      initrd: join(dir, "initrd.img"),
      rootDisk: join(dir, "rootfs.qcow2"),
      kernelArgs: DEBIAN_MINI_KERNEL_ARGS,
      version: "v1"
    })
  })

  it("ignores a truncated disk, a missing kernel, another recipe's build and a pointer out of the folder", async () => {
    const out = await tempDir()
    const dir = await fakeBuild(out, "v1")
    await point(out, "v1")
    await truncate(join(dir, "rootfs.qcow2"), 3)
    expect(await readDebianMini(out)).toBeUndefined()

    await fakeBuild(out, "v2")
    await rm(join(out, "v2", "vmlinux"))
    await point(out, "v2")
    expect(await readDebianMini(out)).toBeUndefined()

    await fakeBuild(out, "v3", "0000000000000000")
    await point(out, "v3")
    expect(await readDebianMini(out)).toBeUndefined()

    await fakeBuild(join(out, "..", "escaped"), "v4")
    for (const version of ["../escaped/v4", "", 7, null]) {
      await writeFile(join(out, "current.json"), JSON.stringify({ version }))
      expect(await readDebianMini(out)).toBeUndefined()
    }
    await writeFile(join(out, "current.json"), "{not json")
    expect(await readDebianMini(out)).toBeUndefined()
    await rm(join(out, "..", "escaped"), { recursive: true, force: true })
  })

  it("gives a VM the build its root disk came from, even an older recipe's, and nothing once it is gone", async () => {
    const out = await tempDir()
    const old = await fakeBuild(out, "old", "0000000000000000")
    await fakeBuild(out, "new")
    await point(out, "new")
    expect((await readDebianMini(out, join(old, "rootfs.qcow2")))?.kernel).toBe(join(old, "vmlinux"))
    expect((await readDebianMini(out))?.version).toBe("new")
    expect(await readDebianMini(out, join(old, "other.qcow2"))).toBeUndefined()
    await rm(join(old, "initrd.img"))
    expect(await readDebianMini(out, join(old, "rootfs.qcow2"))).toBeUndefined()
  })
})

describe("the build lock", () => {
  it("runs concurrent builds one after the other, and tells the waiting one why", async () => {
    const dir = await tempDir()
    let inside = 0
    let most = 0
    const waits: number[] = []
    const build = (id: number) =>
      withBuildLock(
        dir,
        () => waits.push(id),
        async () => {
          most = Math.max(most, ++inside)
          await new Promise((resolve) => setTimeout(resolve, 50))
          inside--
          return id
        }
      )
    expect(await Promise.all([build(1), build(2), build(3)])).toEqual([1, 2, 3])
    expect(most).toBe(1)
    // Whichever build took the lock first (the file system decides), the other two waited, once each.
    expect(waits).toHaveLength(2)
    expect(new Set(waits).size).toBe(2)
    expect(existsSync(join(dir, ".build.lock"))).toBe(false)
  })

  it("takes over the lock of a build that died, and releases it when the body fails", async () => {
    const dir = await tempDir()
    const dead = Number(execFileSync("sh", ["-c", "sh -c 'echo $$' "], { encoding: "utf8" }).trim())
    await writeFile(join(dir, ".build.lock"), `${dead}\n`)
    const waited: string[] = []
    await expect(
      withBuildLock(
        dir,
        () => waited.push("waited"),
        () => Promise.reject(new Error("boom"))
      )
    ).rejects.toThrow("boom")
    expect(waited).toEqual([])
    expect(existsSync(join(dir, ".build.lock"))).toBe(false)
  })
})

describe("the build host", () => {
  it("names each missing program and the apt command that installs it", async () => {
    const empty = await tempDir()
    const error = await checkBuildHost(empty, 0).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(DebianMiniBuildError)
    expect(error).toMatchObject({ kind: "missing_tool" })
    expect((error as Error).message).toContain("mmdebstrap, mke2fs, qemu-img, chroot, xz")
    expect((error as Error).message).toContain("apt-get install -y mmdebstrap e2fsprogs qemu-utils coreutils xz-utils")
  })

  it("needs root once every program is there", async () => {
    const bin = await tempDir()
    for (const program of ["mmdebstrap", "mke2fs", "qemu-img", "chroot", "xz"])
      await writeFile(join(bin, program), "#!/bin/sh\n", { mode: 0o755 })
    await expect(checkBuildHost(bin, 1000)).rejects.toMatchObject({ kind: "needs_root" })
    await expect(checkBuildHost(bin, 0)).resolves.toBeUndefined()
  })

  it("reaches the caller as typed errors through the image builder: capability_unavailable, invalid_spec, not_found", async () => {
    const root = await tempDir()
    const viaBuilder = (cacheDir: string, rootDisk?: string) =>
      Effect.runPromise(
        Effect.either(
          Effect.flatMap(ImageBuilder, (images) =>
            images.build("debian-12-mini", rootDisk !== undefined ? { rootDisk } : undefined)
          )
        ).pipe(
          Effect.provide(makeQemuImageBuilder({ debianMiniCacheDir: cacheDir }).pipe(Layer.provide(dataRootAt(root))))
        )
      )
    const savedPath = process.env["PATH"]
    process.env["PATH"] = await tempDir()
    try {
      const missing = await viaBuilder(join(root, "cache"))
      expect(Either.isLeft(missing) && missing.left).toMatchObject({
        code: "capability_unavailable",
        reason: "missing_tool"
      })
    } finally {
      process.env["PATH"] = savedPath
    }
    const badPath = await viaBuilder(join(root, "a cache"))
    expect(Either.isLeft(badPath) && badPath.left).toMatchObject({
      code: "invalid_spec",
      subject: "STOAT_DEBIAN_MINI_CACHE"
    })
    const gone = await viaBuilder(join(root, "cache"), join(root, "cache", "image", "vanished", "rootfs.qcow2"))
    expect(Either.isLeft(gone) && gone.left).toMatchObject({ code: "not_found" })
    expect(Either.isLeft(gone) && gone.left.message).toMatch(/delete the VM and create it again/)
  })
})
