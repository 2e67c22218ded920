#!/usr/bin/env bash
# Installs what Stoat needs on a fresh Debian/Ubuntu machine, then installs and builds the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."

# mmdebstrap + e2fsprogs build the debian-12-mini guest (stoat pull debian-12-mini).
# libvirt-daemon-system + libvirt-clients run the libvirt provider's suites; openssh-server and iproute2 its qemu+ssh:// one (a second host in a network namespace).
APT_PACKAGES=(qemu-system-x86 qemu-utils busybox-static dropbear-bin openssh-client openssh-sftp-server cpio xz-utils git gcc genisoimage mmdebstrap e2fsprogs libvirt-daemon-system libvirt-clients openssh-server iproute2)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# libvirtd for the libvirt provider: systemd starts it where there is one; a container has none.
if ! virsh -c qemu:///system list >/dev/null 2>&1; then
  if [ -d /run/systemd/system ]; then
    $SUDO systemctl start virtlogd libvirtd
  else
    pgrep -x virtlogd >/dev/null || $SUDO virtlogd -d
    pgrep -x libvirtd >/dev/null || $SUDO libvirtd -d
  fi
  for _ in $(seq 1 50); do virsh -c qemu:///system list >/dev/null 2>&1 && break; sleep 0.2; done
fi

if ! command -v pnpm >/dev/null 2>&1 || [ "$(pnpm --version)" != "12.4.2" ]; then
  npm i -g pnpm@12.4.2 >/dev/null 2>&1
fi

# better-sqlite3 builds from source against the local Node headers (no prebuilt download here).
export npm_config_nodedir=/usr
export TURBO_TELEMETRY_DISABLED=1
pnpm install --frozen-lockfile
pnpm build
