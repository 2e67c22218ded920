/**
 * The tiny guest's own files: init configuration, boot/shutdown scripts, account files.
 * Kept as strings so the builder is one self-contained module tree (tsc does not copy
 * non-TS assets into dist). Shell is busybox ash; `\${` below is a literal shell `${`.
 */
/** Printed on the tiny guest's serial console once sshd accepts connections on port 22 (GuestSignals waits for it). */
export const TINY_SSHD_MARKER = "stoat: sshd listening"

export interface GuestFile {
  readonly path: string
  readonly content: string
  readonly mode: number
}

export interface GuestFilesOptions {
  readonly kernelRelease: string
  readonly version: string
}

/** Paths the per-VM overlay (vm-initrd.ts) writes; rc.sysinit reads them. */
export const GUEST_AUTHORIZED_KEYS = "etc/stoat/authorized_keys"
export const GUEST_HOSTNAME = "etc/stoat/hostname"
export const GUEST_HOST_KEY = "etc/stoat/dropbear_ed25519_host_key"
/** Read by the debian-12-mini initrd (its sshd is OpenSSH); the tiny guest ignores it. */
export const GUEST_OPENSSH_HOST_KEY = "etc/stoat/ssh_host_ed25519_key"

const inittab = `# busybox init: one boot script, two supervised daemons, one shutdown script.
::sysinit:/etc/stoat/rc.sysinit
::respawn:/etc/stoat/dropbear.run
::respawn:/bin/acpid -f
::ctrlaltdel:/bin/reboot
::shutdown:/etc/stoat/rc.shutdown
`

const rcSysinit = `#!/bin/sh
# Stoat tiny guest boot script (busybox init ::sysinit). Runs once, before the daemons.
export PATH=/bin
umask 022

mount -t proc -o nosuid,nodev,noexec proc /proc
mount -t sysfs -o nosuid,nodev,noexec sysfs /sys
mount -t devtmpfs -o nosuid,mode=0755 devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts -o nosuid,noexec,gid=5,mode=0620,ptmxmode=0666 devpts /dev/pts
mount -t tmpfs -o nosuid,nodev,mode=1777 tmpfs /dev/shm
mount -t tmpfs -o nosuid,nodev,mode=0755 tmpfs /run
mount -t tmpfs -o nosuid,nodev,mode=1777 tmpfs /tmp
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
mkdir -p /run/stoat /var/lib/stoat /var/log /root/.ssh
chmod 0700 /root /root/.ssh

KVER=$(uname -r)
# Module lists are in dependency order (computed at build time); insmod is cheaper than modprobe.
load() {
  [ -f "/etc/stoat/modules/$1" ] || return 0
  while read -r m; do insmod "/lib/modules/$KVER/$m" 2>/dev/null; done < "/etc/stoat/modules/$1"
}
load base

# Hostname: kernel command line (stoat.hostname=NAME) wins over the per-VM file.
HN=
for arg in $(cat /proc/cmdline); do
  case "$arg" in stoat.hostname=*) HN="\${arg#stoat.hostname=}" ;; esac
done
[ -n "$HN" ] || HN=$(cat /etc/stoat/hostname 2>/dev/null)
[ -n "$HN" ] || HN=stoat
hostname "$HN"
echo "$HN" > /etc/hostname
printf '127.0.0.1\\tlocalhost\\n127.0.1.1\\t%s\\n::1\\tlocalhost ip6-localhost ip6-loopback\\n' "$HN" > /etc/hosts

# Network: the first non-loopback interface gets the address QEMU's user-mode network always
# hands out (10.0.2.15/24, gateway .2, DNS .3). Static, because a DHCP exchange costs boot time
# and a host connection that arrives before the address is set waits out slirp's SYN back-off.
ip link set lo up
IF=
for n in /sys/class/net/*; do
  n=\${n##*/}
  [ "$n" = lo ] || { IF=$n; break; }
done
if [ -n "$IF" ]; then
  ip link set "$IF" up
  ip addr add 10.0.2.15/24 dev "$IF"
  ip route add default via 10.0.2.2 dev "$IF"
  echo "nameserver 10.0.2.3" > /etc/resolv.conf
fi

# SSH keys: the per-VM overlay carries authorized_keys and, normally, a stable host key.
if [ -s /etc/stoat/authorized_keys ]; then
  cp /etc/stoat/authorized_keys /root/.ssh/authorized_keys
  chmod 0600 /root/.ssh/authorized_keys
fi
HK=/etc/stoat/dropbear_ed25519_host_key
if [ ! -s "$HK" ]; then
  HK=/var/lib/stoat/dropbear_ed25519_host_key
  [ -s "$HK" ] || dropbearkey -t ed25519 -f "$HK" >/dev/null 2>&1
fi
chmod 0600 "$HK"
echo "$HK" > /run/stoat/hostkey

# Note: busybox ash runs its own applets in preference to PATH, so programs that shadow an
# applet (mke2fs from e2fsprogs, the poweroff/reboot/halt wrappers) are called by absolute path.

# Persistent disk: /dev/vda holds an ext4 file system mounted at /data. A blank disk (first
# 64 KiB all zero) is formatted; anything else unrecognised is left alone. Lazy inode-table
# init keeps formatting instant whatever the size (a fresh disk reads as zeros anyway).
if [ -b /dev/vda ]; then
  load ext4
  magic=$(hexdump -s 1080 -n 2 -e '1/2 "%04x"' /dev/vda 2>/dev/null)
  if [ "$magic" != ef53 ]; then
    if [ -z "$(dd if=/dev/vda bs=65536 count=1 2>/dev/null | tr -d '\\000' | head -c 1)" ]; then
      echo "stoat: formatting blank /dev/vda"
      /bin/mke2fs -q -F -t ext4 -L stoat-data -E lazy_itable_init=1,lazy_journal_init=1 /dev/vda >/dev/null 2>&1 \
        && magic=ef53 || echo "stoat: mke2fs /dev/vda failed"
    else
      echo "stoat: /dev/vda has an unknown format; not mounting it"
    fi
  fi
  if [ "$magic" = ef53 ]; then
    mkdir -p /data
    if mount -t ext4 -o noatime,noinit_itable /dev/vda /data 2>/dev/null; then
      # Grow the file system online when the disk was enlarged (qemu-img resize) since the last boot.
      blocks=$(hexdump -s 1028 -n 4 -e '1/4 "%u"' /dev/vda)
      logbs=$(hexdump -s 1048 -n 4 -e '1/4 "%u"' /dev/vda)
      fsbytes=$((blocks << (10 + logbs)))
      devbytes=$(($(cat /sys/block/vda/size) * 512))
      if [ $((devbytes - fsbytes)) -gt 4194304 ]; then
        /bin/resize2fs /dev/vda >/dev/null 2>&1 && echo "stoat: grew /data to the disk size"
      fi
    else
      echo "stoat: cannot mount /dev/vda"
    fi
  fi
fi

# 9p shares: tag "host" read-only at /mnt/host, every other tag (e.g. "work") read-write at /mnt/TAG.
has9p=
for d in /sys/bus/virtio/devices/*; do
  [ "$(cat "$d/device" 2>/dev/null)" = 0x0009 ] && has9p=1
done
if [ -n "$has9p" ]; then
  load 9p
  for t in /sys/bus/virtio/drivers/9pnet_virtio/*/mount_tag; do
    [ -f "$t" ] || continue
    tag=$(tr -d '\\000\\n' < "$t")
    case "$tag" in ""|*/*|.|..) continue ;; host) mode=ro ;; *) mode=rw ;; esac
    mkdir -p "/mnt/$tag"
    mount -t 9p -o "trans=virtio,version=9p2000.L,msize=262144,$mode" "$tag" "/mnt/$tag" 2>/dev/null \\
      || echo "stoat: cannot mount 9p tag $tag"
  done
fi

[ -x /etc/stoat/rc.local ] && /etc/stoat/rc.local
echo "stoat: boot script done (uptime $(cut -d" " -f1 /proc/uptime) s)"
`

// Dropbear runs under init (respawned); the sleep keeps a failing dropbear from respawning in a
// tight loop. The console line tells the host that port 22 accepts (it polls for it, see
// TINY_SSHD_MARKER), so the host's first connection already finds sshd: /proc/net/tcp{,6} list
// the listening socket as local port 0016 in state 0A.
const dropbearRun = `#!/bin/sh
/bin/dropbear -F -E -s -p 22 -r "$(cat /run/stoat/hostkey)" &
pid=$!
i=0
while [ $i -lt 250 ] && ! grep -q ':0016 [0-9A-F]*:0000 0A' /proc/net/tcp /proc/net/tcp6 2>/dev/null; do
  usleep 20000
  i=$((i + 1))
done
echo "${TINY_SSHD_MARKER}" > /dev/console
wait $pid
sleep 1
`

const rcShutdown = `#!/bin/sh
# busybox init ::shutdown. Stops everything, syncs and unmounts /data and 9p shares. When the
# poweroff/reboot/halt wrappers recorded the request, finish it here directly: init's own
# path after this script sleeps a fixed ~2 s.
export PATH=/bin
action=$(cat /run/stoat/shutdown-action 2>/dev/null)
kill -TERM -1 2>/dev/null
usleep 100000
kill -KILL -1 2>/dev/null
sync
grep ' 9p ' /proc/mounts | while read -r _ mp _; do umount "$mp" 2>/dev/null; done
if grep -q ' /data ' /proc/mounts; then
  umount /data 2>/dev/null || mount -o remount,ro /data 2>/dev/null
fi
sync
case "$action" in
  poweroff|reboot|halt) exec /bin/busybox "$action" -f ;;
esac
`

// Replaces busybox's poweroff/reboot/halt applets; see rc.shutdown.
const shutdownWrapper = `#!/bin/sh
cmd=\${0##*/}
case " $* " in *" -f "*) exec /bin/busybox "$cmd" "$@" ;; esac
echo "$cmd" > /run/stoat/shutdown-action 2>/dev/null
exec /bin/busybox "$cmd" "$@"
`

// busybox acpid maps the ACPI power button (QMP system_powerdown) to PWRF/00000080.
const acpiPower = `#!/bin/sh
exec /bin/poweroff
`

// Login shells only. busybox ash runs its own poweroff/reboot/halt applets ahead of PATH;
// these functions route interactive use through the fast wrappers (see rc.shutdown).
const profile = `export PATH=/bin
export PS1='\\h:\\w\\$ '
poweroff() { /bin/poweroff "$@"; }
reboot() { /bin/reboot "$@"; }
halt() { /bin/halt "$@"; }
`

export function guestFiles(opts: GuestFilesOptions): GuestFile[] {
  return [
    { path: "etc/inittab", content: inittab, mode: 0o644 },
    { path: "etc/stoat/rc.sysinit", content: rcSysinit, mode: 0o755 },
    { path: "etc/stoat/rc.shutdown", content: rcShutdown, mode: 0o755 },
    { path: "etc/stoat/dropbear.run", content: dropbearRun, mode: 0o755 },
    { path: "etc/acpi/PWRF/00000080", content: acpiPower, mode: 0o755 },
    { path: "bin/poweroff", content: shutdownWrapper, mode: 0o755 },
    { path: "bin/reboot", content: shutdownWrapper, mode: 0o755 },
    { path: "bin/halt", content: shutdownWrapper, mode: 0o755 },
    {
      path: "etc/passwd",
      content: "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
      mode: 0o644
    },
    // "*" rather than empty: dropbear rejects accounts whose password field is blank, even for key logins.
    { path: "etc/shadow", content: "root:*:19000:0:99999:7:::\nnobody:*:19000:0:99999:7:::\n", mode: 0o600 },
    { path: "etc/group", content: "root:x:0:\ntty:x:5:\nnogroup:x:65534:\n", mode: 0o644 },
    { path: "etc/shells", content: "/bin/sh\n/bin/ash\n", mode: 0o644 },
    {
      path: "etc/nsswitch.conf",
      content: "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n",
      mode: 0o644
    },
    { path: "etc/profile", content: profile, mode: 0o644 },
    { path: "etc/hostname", content: "stoat\n", mode: 0o644 },
    { path: "etc/resolv.conf", content: "", mode: 0o644 },
    {
      path: "etc/os-release",
      content: `NAME="Stoat tiny guest"\nID=stoat-tiny\nVERSION_ID="${opts.version}"\nPRETTY_NAME="Stoat tiny guest ${opts.version} (Linux ${opts.kernelRelease})"\n`,
      mode: 0o644
    }
  ]
}
