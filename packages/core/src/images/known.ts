import { Effect } from "effect"
import { adviseLookup, InvalidSpec, NoSuchImage } from "../errors.js"
import { BUNDLED_GUESTS, type GuestDef } from "../guest-definitions/definitions.js"
import { closest } from "../platform/names.js"

/** How a published checksum file is laid out. Informational: the parser accepts every format. */
export type ChecksumFormat = "sha256sums" | "sha512sums" | "bsd" | "sidecar"

/** A fixed URL whose file name is known up front; `checksum` is null when the distro publishes none. */
export interface UrlSource {
  readonly kind: "url"
  readonly url: string
  /** Bare file name under isos/ (the URL's last path segment). */
  readonly file: string
  readonly checksum: { readonly url: string; readonly format: ChecksumFormat } | null
}

/** Built on this machine (the tiny guest); nothing to download. */
export interface LocalSource {
  readonly kind: "local"
  /** Folder under isos/ holding the build (manifest.json, kernel, initrd). */
  readonly dir: string
}

export type ImageSource = UrlSource | LocalSource

export interface KnownImage {
  readonly id: string
  readonly os: string
  readonly variant: string
  readonly backend: "cloudinit" | "direct"
  readonly source: ImageSource
  /** True only for images stoat builds itself (no URL). */
  readonly local: boolean
  readonly sshUser: string
  /** Declared download size, for display only; drifts as distros rebuild images in place. */
  readonly approxBytes: number
  /** Default disk for VMs made from this image; must not be below the image's virtual size. */
  readonly defaultDisk: string
  /** Persisted into vm.toml: these guests need a host CPU with the x86-64-v2 baseline. */
  readonly cpuModel?: "host"
  readonly requiredCpu?: "x86-64-v2"
  /** Defaults for VMs of a locally built image, which know what their guest needs (cloud images take 4096 MiB and 4 vCPUs). */
  readonly defaultRamMb?: number
  readonly defaultCpus?: number
}

const MiB = 1024 * 1024

const url = (href: string, checksum: UrlSource["checksum"]): UrlSource => ({
  kind: "url",
  url: href,
  file: decodeURIComponent(new URL(href).pathname.split("/").pop() ?? ""),
  checksum
})

/** The tiny guest's build folder under isos/ (agreed with the QEMU package's builder). */
export const TINY_DIR = "tiny"
/** The id of the Debian 12 guest built locally with mmdebstrap from the host's Debian mirror. */
export const DEBIAN_MINI_IMAGE = "debian-12-mini"

/**
 * The images Stoat knows, embedded: listing needs no network. Order is deliberate (most useful first within
 * an OS). Only images this build can make VMs of: Alpine's live ISOs need apkovl provisioning, which it lacks.
 * Checksum URLs point at published sums files read at pull time, never frozen digests, because
 * cloud images roll forward in place.
 */
export const KNOWN_IMAGES: ReadonlyArray<KnownImage> = [
  {
    id: "ubuntu-24.04",
    os: "ubuntu",
    variant: "24.04 LTS",
    backend: "cloudinit",
    source: url("https://cloud-images.ubuntu.com/releases/24.04/release/ubuntu-24.04-server-cloudimg-amd64.img", {
      url: "https://cloud-images.ubuntu.com/releases/24.04/release/SHA256SUMS",
      format: "sha256sums"
    }),
    local: false,
    sshUser: "stoat",
    approxBytes: 595 * MiB,
    defaultDisk: "8G"
  },
  {
    id: "debian-13",
    os: "debian",
    variant: "13 (trixie)",
    backend: "cloudinit",
    source: url("https://cloud.debian.org/images/cloud/trixie/latest/debian-13-genericcloud-amd64.qcow2", {
      url: "https://cloud.debian.org/images/cloud/trixie/latest/SHA512SUMS",
      format: "sha512sums"
    }),
    local: false,
    sshUser: "stoat",
    approxBytes: 328 * MiB,
    defaultDisk: "8G"
  },
  {
    // Fedora has no "latest" alias for cloud images: the release and compose are pinned here and
    // in the checksum URL, and both need a bump when Fedora 44 ages out of releases/.
    id: "fedora-cloud",
    os: "fedora",
    variant: "44",
    backend: "cloudinit",
    source: url(
      "https://download.fedoraproject.org/pub/fedora/linux/releases/44/Cloud/x86_64/images/Fedora-Cloud-Base-Generic-44-1.7.x86_64.qcow2",
      {
        url: "https://download.fedoraproject.org/pub/fedora/linux/releases/44/Cloud/x86_64/images/Fedora-Cloud-44-1.7-x86_64-CHECKSUM",
        format: "bsd"
      }
    ),
    local: false,
    sshUser: "stoat",
    approxBytes: 557 * MiB,
    defaultDisk: "8G"
  },
  {
    id: "arch-cloud",
    os: "arch",
    variant: "rolling",
    backend: "cloudinit",
    source: url("https://geo.mirror.pkgbuild.com/images/latest/Arch-Linux-x86_64-cloudimg.qcow2", {
      url: "https://geo.mirror.pkgbuild.com/images/latest/Arch-Linux-x86_64-cloudimg.qcow2.SHA256",
      format: "sidecar"
    }),
    local: false,
    sshUser: "stoat",
    approxBytes: 530 * MiB,
    defaultDisk: "8G"
  },
  {
    // The bios + cloud-init flavour (not tiny-cloud, not UEFI). Alpine publishes only a bare-hex
    // sidecar for it and prunes old point releases, so the entry is pinned and unverified.
    id: "alpine-cloud",
    os: "alpine",
    variant: "3.24 cloud",
    backend: "cloudinit",
    source: url(
      "https://dl-cdn.alpinelinux.org/alpine/latest-stable/releases/cloud/generic_alpine-3.24.1-x86_64-bios-cloudinit-r0.qcow2",
      null
    ),
    local: false,
    sshUser: "stoat",
    approxBytes: 175 * MiB,
    defaultDisk: "8G"
  },
  {
    // The GenericCloud image's virtual disk is 10G, hence the 12G default.
    id: "almalinux-9",
    os: "almalinux",
    variant: "9",
    backend: "cloudinit",
    source: url(
      "https://repo.almalinux.org/almalinux/9/cloud/x86_64/images/AlmaLinux-9-GenericCloud-latest.x86_64.qcow2",
      {
        url: "https://repo.almalinux.org/almalinux/9/cloud/x86_64/images/CHECKSUM",
        format: "sha256sums"
      }
    ),
    local: false,
    sshUser: "stoat",
    approxBytes: 560 * MiB,
    defaultDisk: "12G",
    cpuModel: "host",
    requiredCpu: "x86-64-v2"
  },
  {
    id: "rocky-9",
    os: "rocky",
    variant: "9",
    backend: "cloudinit",
    source: url("https://dl.rockylinux.org/pub/rocky/9/images/x86_64/Rocky-9-GenericCloud-Base.latest.x86_64.qcow2", {
      url: "https://dl.rockylinux.org/pub/rocky/9/images/x86_64/CHECKSUM",
      format: "bsd"
    }),
    local: false,
    sshUser: "stoat",
    approxBytes: 610 * MiB,
    defaultDisk: "12G",
    cpuModel: "host",
    requiredCpu: "x86-64-v2"
  },
  {
    // The Minimal-VM image carries a larger virtual disk than the other cloud images.
    id: "opensuse-leap-16.0",
    os: "opensuse",
    variant: "Leap 16.0",
    backend: "cloudinit",
    source: url(
      "https://download.opensuse.org/distribution/leap/16.0/appliances/openSUSE-Leap-16.0-Minimal-VM.x86_64-Cloud.qcow2",
      {
        url: "https://download.opensuse.org/distribution/leap/16.0/appliances/openSUSE-Leap-16.0-Minimal-VM.x86_64-Cloud.qcow2.sha256",
        format: "sidecar"
      }
    ),
    local: false,
    sshUser: "stoat",
    approxBytes: 330 * MiB,
    defaultDisk: "24G",
    cpuModel: "host",
    requiredCpu: "x86-64-v2"
  },
  {
    // Busybox + dropbear on a Debian kernel, assembled locally by the QEMU package; boots in seconds.
    id: "tiny",
    os: "tiny",
    variant: "local",
    backend: "direct",
    source: { kind: "local", dir: TINY_DIR },
    local: true,
    sshUser: "root",
    approxBytes: 12 * MiB,
    defaultDisk: "1G",
    defaultRamMb: 256,
    defaultCpus: 1
  },
  {
    // Debian 12 minbase with systemd, apt, journald, sudo and OpenSSH, built locally with mmdebstrap
    // (root, the host's Debian mirror); boots its own kernel directly, SSH in ~15-25 s under TCG.
    // One vCPU: under TCG a second one slows boot down.
    id: DEBIAN_MINI_IMAGE,
    os: "debian",
    variant: "12 (bookworm) mini, local",
    backend: "direct",
    source: { kind: "local", dir: DEBIAN_MINI_IMAGE },
    local: true,
    sshUser: "stoat",
    approxBytes: 420 * MiB,
    defaultDisk: "4G",
    defaultRamMb: 1024,
    defaultCpus: 1
  }
]

export const IMAGE_IDS: ReadonlyArray<string> = KNOWN_IMAGES.map((entry) => entry.id)

const IMAGE_ID = /^[A-Za-z0-9][A-Za-z0-9._-]*$/

/** The image id grammar (also the MCP guard): no path separators or `~`, so an id never names a path. */
export const validateImageId = (id: string): InvalidSpec | undefined =>
  IMAGE_ID.test(id) && !/[/\\~]/.test(id)
    ? undefined
    : new InvalidSpec({
        message: `invalid image id "${id}": use letters, digits, '.', '_' or '-', starting with a letter or digit`,
        subject: id
      })

export const findImage = (id: string): KnownImage | undefined => KNOWN_IMAGES.find((entry) => entry.id === id)

/** The known image for `id`, or `no_such_image` naming the closest id and `stoat images`. */
export const lookupImage = (id: string): Effect.Effect<KnownImage, InvalidSpec | NoSuchImage> => {
  const invalid = validateImageId(id)
  if (invalid) return Effect.fail(invalid)
  const entry = findImage(id)
  if (entry) return Effect.succeed(entry)
  const hint = closest(id, IMAGE_IDS)
  return Effect.fail(
    new NoSuchImage({
      message: `no image "${id}"${hint ? ` (did you mean "${hint}"?)` : ""}`,
      subject: id,
      hint: adviseLookup("image.list")
    })
  )
}

export type ByoBackend = "apkovl" | "cloudinit" | "ssh"

/**
 * Guesses OS and backend for a bring-your-own image from its file name. Guest `filename_hints`
 * decide the OS (the longest matching hint wins, so "almalinux" beats a shorter hint); the
 * extension decides only the backend. No hint ⇒ os "" rather than a wrong guess.
 */
export const inferByo = (
  filename: string,
  guests: ReadonlyArray<Pick<GuestDef, "name" | "filename_hints">> = BUNDLED_GUESTS
): { readonly os: string; readonly backend: ByoBackend } => {
  const lower = (filename.split(/[/\\]/).pop() ?? filename).toLowerCase()
  let os = ""
  let bestLength = 0
  for (const guest of guests) {
    for (const hint of guest.filename_hints) {
      const needle = hint.toLowerCase()
      if (needle.length > bestLength && lower.includes(needle)) {
        os = guest.name
        bestLength = needle.length
      }
    }
  }
  if (os === "alpine" && lower.endsWith(".iso")) return { os, backend: "apkovl" }
  if (
    lower.includes("cloudimg") ||
    lower.includes("genericcloud") ||
    lower.endsWith(".qcow2") ||
    lower.endsWith(".img")
  ) {
    return { os, backend: "cloudinit" }
  }
  return { os, backend: "ssh" }
}
