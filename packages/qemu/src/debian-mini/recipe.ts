/**
 * What the debian-12-mini guest is made of, as data and pure functions: the mmdebstrap command
 * line, the files written into the root file system, the commands run in its chroot, the
 * initrd's /init and module list. build.ts carries them out; tests read them directly.
 */
import { createHash } from "node:crypto"
import { TINY_SSHD_MARKER } from "../tiny/guest-files.js"
import { TINY_KERNEL_ARGS } from "../tiny/build.js"
import { GUEST_AUTHORIZED_KEYS, GUEST_HOSTNAME, GUEST_OPENSSH_HOST_KEY } from "../tiny/guest-files.js"

export const DEBIAN_SUITE = "bookworm"
export const DEFAULT_MIRROR = "http://deb.debian.org/debian"

/** The login user of the bundled `debian` guest definition (default_ssh_user), with passwordless sudo. */
export const GUEST_USER = { name: "stoat", uid: 1000, groups: ["sudo", "adm", "systemd-journal"] } as const

/**
 * On top of minbase: systemd as init (udev for devices, dbus so logind handles the ACPI power
 * button and non-root systemctl works), apt, sudo, OpenSSH (openssh-sftp-server comes with it),
 * the generic kernel (9p as a module, unlike the cloud kernel), busybox-static for the initrd,
 * curl for the guest definition's download command.
 */
export const PACKAGES = [
  "systemd",
  "systemd-sysv",
  "udev",
  "dbus",
  "apt",
  "sudo",
  "openssh-server",
  "linux-image-amd64",
  "kmod",
  "iproute2",
  "procps",
  "busybox-static",
  "curl",
  "ca-certificates"
] as const

/**
 * Kernel module trees a QEMU guest never loads (sound, GPUs, wireless, physical NICs, …):
 * ~200 MB of the kernel's 395 MB. Excluded at unpack time (dpkg path-exclude), so depmod in the
 * package's postinst already sees the trimmed tree.
 */
export const EXCLUDED_MODULE_TREES = [
  "sound",
  "drivers/gpu",
  "drivers/media",
  "drivers/net/wireless",
  "drivers/net/ethernet",
  "drivers/net/can",
  "drivers/infiniband",
  "drivers/iio",
  "drivers/staging",
  "drivers/comedi",
  "drivers/mtd",
  "drivers/bluetooth",
  "drivers/isdn",
  "net/wireless",
  "net/bluetooth"
] as const

/**
 * Units that would cost boot time or act behind a test's back: apt's timers take the dpkg lock
 * minutes after boot, the e2scrub/fstrim timers scan disks, tty1 and the static gettys serve a
 * screen nobody reads (the serial console keeps its getty), pstore has nothing to collect. The
 * journal lives in /run (no /var/log/journal), so its flush has nothing to move, and utmp
 * bookkeeping (`who`, `last`) is not worth its ~2 s ahead of sysinit.target under TCG.
 */
export const MASKED_UNITS = [
  "apt-daily.timer",
  "apt-daily-upgrade.timer",
  "dpkg-db-backup.timer",
  "e2scrub_all.timer",
  "e2scrub_reap.service",
  "fstrim.timer",
  "getty@tty1.service",
  "getty-static.service",
  "systemd-pstore.service",
  "systemd-journal-flush.service",
  "systemd-update-utmp.service",
  "systemd-update-utmp-runlevel.service",
  // Debian's packages create their users in maintainer scripts; the boot-time pass repeats that work.
  "systemd-sysusers.service"
] as const

export const STOAT_UNITS = ["stoat-hostkey.service", "stoat-growfs.service", "stoat-ready.service"] as const

/**
 * Modules the initrd loads to reach the root file system, the network and the 9p shares, by
 * name (modules.dep resolves the rest). Mounting the shares here costs a fraction of what
 * modprobe under systemd costs while everything else starts.
 */
export const INITRD_MODULES = [
  "virtio_pci",
  "virtio_blk",
  "virtio_net",
  "ext4",
  "crc32c_generic",
  "9pnet_virtio",
  "9p"
] as const

/** Busybox applets /init uses; each becomes a symlink in the initrd. */
export const INITRD_APPLETS = [
  "sh",
  "mount",
  "umount",
  "insmod",
  "mkdir",
  "cat",
  "cp",
  "chmod",
  "chown",
  "tr",
  "ip",
  "usleep",
  "printf",
  "echo",
  "switch_root"
] as const

/** Size of the ext4 file system in the image; a VM's disk (an overlay, default 4G) is grown into at boot. */
export const ROOT_FS_SIZE = "2G"

/**
 * The tiny guest's TCG-friendly arguments, plus `net.ifnames=0` (the initrd configures eth0) and
 * the root device for anyone reading /proc/cmdline; the initrd mounts /dev/vda itself.
 */
export const DEBIAN_MINI_KERNEL_ARGS = `${TINY_KERNEL_ARGS} net.ifnames=0 root=/dev/vda rw`

/** Bump when the guest changes in a way the hashed recipe below would not notice. */
const BUILDER_REVISION = 1

/** One Debian archive the host's apt uses: where and which suites and components. */
export interface AptSource {
  readonly uri: string
  readonly suites: readonly string[]
  readonly components: readonly string[]
}

/**
 * The Debian archives (the main one and debian-security) among the host's apt sources, in order.
 * Reads both deb822 `.sources` stanzas and one-line `deb` entries; third-party repositories (a
 * cloud SDK, nodesource) and other releases are left out, since the guest is bookworm.
 */
export function debianSources(files: ReadonlyArray<{ readonly name: string; readonly text: string }>): AptSource[] {
  const found: AptSource[] = []
  const add = (uri: string, suites: readonly string[], components: readonly string[]) => {
    const clean = uri.replace(/\/+$/, "")
    const ours = suites.filter(
      (suite) => suite === DEBIAN_SUITE || suite.startsWith(`${DEBIAN_SUITE}-`) || suite.startsWith(`${DEBIAN_SUITE}/`)
    )
    if (ours.length === 0 || !/^https?:\/\//.test(clean) || !/\/debian(-security)?$/.test(clean)) return
    const existing = found.find((source) => source.uri === clean)
    if (existing) {
      found[found.indexOf(existing)] = {
        uri: clean,
        suites: [...new Set([...existing.suites, ...ours])],
        components: [...new Set([...existing.components, ...components])]
      }
    } else {
      found.push({ uri: clean, suites: ours, components: components.length > 0 ? [...components] : ["main"] })
    }
  }
  for (const file of files) {
    if (file.name.endsWith(".sources")) {
      for (const stanza of file.text.split(/\n\s*\n/)) {
        const fields = new Map<string, string>()
        for (const line of stanza.split("\n")) {
          const match = /^([A-Za-z-]+):\s*(.*)$/.exec(line)
          if (match && !line.startsWith("#")) fields.set(match[1]!.toLowerCase(), match[2]!.trim())
        }
        if (!(fields.get("types") ?? "").split(/\s+/).includes("deb") || fields.get("enabled")?.toLowerCase() === "no")
          continue
        const words = (key: string) => (fields.get(key) ?? "").split(/\s+/).filter(Boolean)
        for (const uri of words("uris")) add(uri, words("suites"), words("components"))
      }
    } else {
      for (const raw of file.text.split("\n")) {
        const line = raw.replace(/#.*$/, "").trim()
        // deb [options] uri suite component...
        const match = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)\s*(.*)$/.exec(line)
        if (match) add(match[1]!, [match[2]!], match[3]!.split(/\s+/).filter(Boolean))
      }
    }
  }
  return found
}

/** The archive mmdebstrap installs from: the host's main Debian mirror, else deb.debian.org. */
export function primaryMirror(sources: readonly AptSource[]): string {
  return sources.find((source) => !source.uri.endsWith("-security"))?.uri ?? DEFAULT_MIRROR
}

/** The guest's /etc/apt/sources.list.d/debian.sources: the host's Debian archives, or the default mirror and security. */
export function guestAptSources(sources: readonly AptSource[]): string {
  const list =
    sources.length > 0
      ? sources
      : [
          { uri: DEFAULT_MIRROR, suites: [DEBIAN_SUITE, `${DEBIAN_SUITE}-updates`], components: ["main"] },
          { uri: "http://deb.debian.org/debian-security", suites: [`${DEBIAN_SUITE}-security`], components: ["main"] }
        ]
  return list
    .map((source) =>
      [
        "Types: deb",
        `URIs: ${source.uri}`,
        `Suites: ${source.suites.join(" ")}`,
        `Components: ${source.components.join(" ")}`,
        "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
      ].join("\n")
    )
    .join("\n\n")
    .concat("\n")
}

export interface MmdebstrapOptions {
  readonly mirror: string
  readonly target: string
  /** Downloaded .debs are kept here between builds (mmdebstrap's sync-in/sync-out hooks). */
  readonly debCache: string
}

/**
 * mmdebstrap in root mode into a directory (mke2fs -d copies it with owners and modes, so no
 * loop mount is needed). Docs, man pages and translations are not unpacked. The kernel hook of
 * initramfs-tools is excluded: the guest boots Stoat's own small initrd, and update-initramfs
 * would add ~20 s to the build for a file nothing reads. Essential .debs are kept
 * (essential/unlink skipped) so the cache holds every package for the next build.
 */
export function mmdebstrapArgs(o: MmdebstrapOptions): string[] {
  const moduleExcludes = EXCLUDED_MODULE_TREES.flatMap((tree) => [
    `/lib/modules/*/kernel/${tree}/*`,
    `/usr/lib/modules/*/kernel/${tree}/*`
  ])
  return [
    "--variant=minbase",
    "--mode=root",
    "--format=directory",
    `--include=${PACKAGES.join(",")}`,
    ...[
      "/usr/share/doc/*",
      "/usr/share/man/*",
      "/usr/share/info/*",
      "/usr/share/locale/*",
      ...moduleExcludes,
      "/etc/kernel/postinst.d/initramfs-tools"
    ].map((path) => `--dpkgopt=path-exclude=${path}`),
    ...["/usr/share/doc/*/copyright", "/usr/share/locale/locale.alias"].map((path) => `--dpkgopt=path-include=${path}`),
    "--skip=essential/unlink",
    // The package lists stay in the image: the guest's first `apt-get update` then only checks
    // them (minutes less under TCG than fetching bookworm's lists through user-mode networking).
    "--skip=cleanup/apt/lists",
    `--setup-hook=mkdir -p "$1/var/cache/apt/archives"`,
    `--setup-hook=sync-in ${o.debCache} /var/cache/apt/archives/`,
    `--customize-hook=sync-out /var/cache/apt/archives ${o.debCache}`,
    DEBIAN_SUITE,
    o.target,
    o.mirror
  ]
}

export interface GuestFile {
  /** Relative to the root file system. */
  readonly path: string
  readonly content: string
  readonly mode: number
}

/** Where the initrd leaves this boot's identity; /run is the tmpfs it mounts and systemd keeps. */
export const RUN_DIR = "/run/stoat"

const hostkeyUnit = `[Unit]
Description=Stoat: an SSH host key for a boot that brought none
ConditionPathExists=!${RUN_DIR}/ssh_host_ed25519_key
Before=ssh.service

[Service]
Type=oneshot
ExecStart=/bin/mkdir -p ${RUN_DIR}
ExecStart=/usr/bin/ssh-keygen -q -t ed25519 -N "" -f ${RUN_DIR}/ssh_host_ed25519_key

[Install]
WantedBy=ssh.service
`

// A VM's disk is an overlay larger than the image's file system; growing online is a no-op once
// done. After the ready line, so it does not compete with sshd for the one vCPU.
const growfsUnit = `[Unit]
Description=Stoat: grow the root file system to the size of the disk
After=local-fs.target stoat-ready.service

[Service]
Type=oneshot
ExecStart=/sbin/resize2fs /dev/vda

[Install]
WantedBy=multi-user.target
`

const readyUnit = `[Unit]
Description=Stoat: tell the host that sshd listens
After=ssh.service
Requires=ssh.service

[Service]
Type=oneshot
ExecStart=/bin/sh -c 'echo "${TINY_SSHD_MARKER}" > /dev/console'

[Install]
WantedBy=multi-user.target
`

// Type=notify: sshd is listening once the unit is active. The config test (sshd -t) before
// every start costs a second under TCG and the image's config is fixed.
const sshDropIn = `[Service]
ExecStartPre=
`

const sshdConfig = `# Stoat: the per-VM host key and authorized keys come from the initrd, in ${RUN_DIR}.
HostKey ${RUN_DIR}/ssh_host_ed25519_key
AuthorizedKeysFile .ssh/authorized_keys ${RUN_DIR}/authorized_keys/%u
# QEMU's user-mode network is IPv4; the kernel runs with ipv6.disable=1.
AddressFamily inet
UseDNS no
`

/** Files written into the root file system after mmdebstrap (paths relative to it). */
export function guestFiles(sources: readonly AptSource[]): GuestFile[] {
  return [
    { path: "etc/apt/sources.list.d/debian.sources", content: guestAptSources(sources), mode: 0o644 },
    { path: "etc/resolv.conf", content: "nameserver 10.0.2.3\n", mode: 0o644 },
    // Translations are megabytes of lists nothing in a test VM reads.
    { path: "etc/apt/apt.conf.d/90stoat", content: 'Acquire::Languages "none";\n', mode: 0o644 },
    {
      path: "etc/fstab",
      content:
        "# Mounted read-write by the initrd; no fsck at boot (pass 0).\n/dev/vda / ext4 rw,errors=remount-ro 0 0\n",
      mode: 0o644
    },
    { path: "etc/default/locale", content: "LANG=C.UTF-8\n", mode: 0o644 },
    { path: "etc/hostname", content: "debian\n", mode: 0o644 },
    { path: `etc/sudoers.d/${GUEST_USER.name}`, content: `${GUEST_USER.name} ALL=(ALL) NOPASSWD:ALL\n`, mode: 0o440 },
    { path: "etc/ssh/sshd_config.d/stoat.conf", content: sshdConfig, mode: 0o644 },
    { path: "etc/systemd/system/ssh.service.d/stoat.conf", content: sshDropIn, mode: 0o644 },
    { path: "etc/systemd/system/stoat-hostkey.service", content: hostkeyUnit, mode: 0o644 },
    { path: "etc/systemd/system/stoat-growfs.service", content: growfsUnit, mode: 0o644 },
    { path: "etc/systemd/system/stoat-ready.service", content: readyUnit, mode: 0o644 }
  ]
}

/** Commands run with chroot in the root file system after the files are written; each is an argv. */
export function chrootCommands(): string[][] {
  return [
    [
      "useradd",
      "--create-home",
      "--uid",
      String(GUEST_USER.uid),
      "--user-group",
      "--groups",
      GUEST_USER.groups.join(","),
      "--shell",
      "/bin/bash",
      GUEST_USER.name
    ],
    ["systemctl", "enable", ...STOAT_UNITS],
    ["systemctl", "mask", ...MASKED_UNITS]
  ]
}

/**
 * Paths removed from the root file system: host keys made by openssh-server's postinst would
 * be shared by every VM (each boot gets its own from the initrd), and the sources.list that
 * mmdebstrap wrote is replaced by debian.sources.
 */
export const REMOVED_PATHS = [
  "etc/ssh/ssh_host_rsa_key",
  "etc/ssh/ssh_host_rsa_key.pub",
  "etc/ssh/ssh_host_ecdsa_key",
  "etc/ssh/ssh_host_ecdsa_key.pub",
  "etc/ssh/ssh_host_ed25519_key",
  "etc/ssh/ssh_host_ed25519_key.pub",
  "etc/apt/sources.list"
] as const

/**
 * Load order for `wanted` from a modules.dep (paths relative to lib/modules/<release>): every
 * module after the modules it depends on, each once. A wanted name missing from modules.dep is
 * an error unless `builtin` lists it.
 */
export function moduleLoadOrder(
  modulesDep: string,
  wanted: readonly string[],
  builtin: ReadonlySet<string> = new Set()
): string[] {
  const norm = (name: string) => name.replace(/-/g, "_")
  const nameOf = (path: string) =>
    norm(
      path
        .split("/")
        .pop()!
        .replace(/\.ko(\.(xz|zst|gz))?$/, "")
    )
  const deps = new Map<string, { path: string; deps: string[] }>()
  for (const line of modulesDep.split("\n")) {
    const colon = line.indexOf(":")
    if (colon <= 0) continue
    const path = line.slice(0, colon).trim()
    deps.set(nameOf(path), {
      path,
      deps: line
        .slice(colon + 1)
        .trim()
        .split(/\s+/)
        .filter(Boolean)
    })
  }
  const order: string[] = []
  const placed = new Set<string>()
  const visit = (name: string, chain: readonly string[]) => {
    if (placed.has(name)) return
    if (chain.includes(name)) throw new Error(`module dependency cycle: ${[...chain, name].join(" -> ")}`)
    const entry = deps.get(name)
    if (!entry) {
      if (builtin.has(name)) return
      throw new Error(`kernel module ${name} is neither in modules.dep nor built in`)
    }
    // modprobe loads a line's dependencies from the last to the first.
    for (const dep of [...entry.deps].reverse()) visit(nameOf(dep), [...chain, name])
    placed.add(name)
    order.push(entry.path)
  }
  for (const name of wanted) visit(norm(name), [])
  return order
}

/** The initrd's /init: load the modules, mount the root, hand over this boot's identity and network, switch_root to systemd. */
export function initScript(): string {
  return `#!/bin/sh
# Stoat debian-12-mini initrd. The per-VM archive appended to this initrd puts authorized_keys,
# hostname and the SSH host key in /etc/stoat; they go to ${RUN_DIR} in a /run tmpfs that
# systemd keeps, so the disk never holds a copy.
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
while read -r m; do insmod "/lib/modules/$m"; done < /etc/stoat/modules
i=0
while [ ! -b /dev/vda ] && [ $i -lt 500 ]; do usleep 10000; i=$((i + 1)); done
if ! mount -t ext4 -o rw /dev/vda /newroot; then
  echo "stoat: cannot mount /dev/vda as the root file system"
  exec sh
fi
mount -t tmpfs -o nosuid,nodev,mode=0755 tmpfs /newroot/run
mkdir -p ${"/newroot" + RUN_DIR}/authorized_keys
chmod 0755 ${"/newroot" + RUN_DIR} ${"/newroot" + RUN_DIR}/authorized_keys
# sshd reads authorized keys as the user, so the file (0600 in the archive) must be world-readable.
if [ -s /${GUEST_AUTHORIZED_KEYS} ]; then
  cp /${GUEST_AUTHORIZED_KEYS} ${"/newroot" + RUN_DIR}/authorized_keys/${GUEST_USER.name}
  chmod 0644 ${"/newroot" + RUN_DIR}/authorized_keys/${GUEST_USER.name}
fi
if [ -s /${GUEST_OPENSSH_HOST_KEY} ]; then
  cp /${GUEST_OPENSSH_HOST_KEY} ${"/newroot" + RUN_DIR}/ssh_host_ed25519_key
  chmod 0600 ${"/newroot" + RUN_DIR}/ssh_host_ed25519_key
fi
HN=$(cat /${GUEST_HOSTNAME} 2>/dev/null)
[ -n "$HN" ] || HN=debian
echo "$HN" > /newroot/etc/hostname
printf '127.0.0.1\\tlocalhost\\n127.0.1.1\\t%s\\n' "$HN" > /newroot/etc/hosts
# QEMU's user-mode network always hands out 10.0.2.15/24 (gateway .2, DNS .3). Set statically
# here, before systemd starts: no DHCP wait, and the host's first connection finds the network.
ip link set lo up
for n in /sys/class/net/*; do
  n=\${n##*/}
  [ "$n" = lo ] && continue
  ip link set "$n" up
  ip addr add 10.0.2.15/24 dev "$n"
  ip route add default via 10.0.2.2 dev "$n"
  break
done
# 9p shares, as in the tiny guest: tag "host" read-only at /mnt/host, every other tag (e.g.
# "work") read-write at /mnt/TAG. Mounts under /newroot survive switch_root.
for t in /sys/bus/virtio/drivers/9pnet_virtio/*/mount_tag; do
  [ -f "$t" ] || continue
  tag=$(tr -d '\\000\\n' < "$t")
  case "$tag" in ""|*/*|.|..) continue ;; host) mode=ro ;; *) mode=rw ;; esac
  mkdir -p "/newroot/mnt/$tag"
  mount -t 9p -o "trans=virtio,version=9p2000.L,msize=262144,$mode" "$tag" "/newroot/mnt/$tag" || { echo "stoat: cannot mount 9p tag $tag"; continue; }
  # The login user works in the share: own its top folder (QEMU records that in an xattr on the host, mapped-xattr).
  [ "$mode" = rw ] && chown ${GUEST_USER.uid}:${GUEST_USER.uid} "/newroot/mnt/$tag" 2>/dev/null
done
umount /sys
umount /proc
mount --move /dev /newroot/dev
exec switch_root /newroot /sbin/init
`
}

/** Hash of everything that shapes the image except package versions; a change means a rebuild. */
export function recipeHash(): string {
  return createHash("sha256")
    .update(
      JSON.stringify({
        rev: BUILDER_REVISION,
        suite: DEBIAN_SUITE,
        user: GUEST_USER,
        args: mmdebstrapArgs({ mirror: "", target: "", debCache: "" }),
        files: guestFiles([]),
        commands: chrootCommands(),
        removed: REMOVED_PATHS,
        modules: INITRD_MODULES,
        applets: INITRD_APPLETS,
        init: initScript(),
        kernelArgs: DEBIAN_MINI_KERNEL_ARGS,
        size: ROOT_FS_SIZE
      })
    )
    .digest("hex")
    .slice(0, 16)
}
