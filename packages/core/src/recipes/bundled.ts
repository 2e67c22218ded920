/**
 * The recipes shipped with Stoat, embedded so the bundled CLI carries them. They are written into
 * `<root>/recipes/<name>/` on demand (see store.ts); scripts use the prelude's stoat_* functions.
 */

const ALL = `["alpine", "ubuntu", "debian", "fedora", "almalinux", "rocky", "arch", "opensuse"]`

/** recipe name → file path inside its folder → content. */
export const BUNDLED_RECIPES: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  devtools: {
    "recipe.toml": `schema = 3
name = "devtools"
description = "Everyday command-line tools: git, curl, vim, less, jq, tmux"
version = "1"
os = ${ALL}
script = "install.sh"

[outputs]
git = "path of git"
editor = "path of vim"

[health]
check = "git --version && curl --version >/dev/null"
timeout = "30s"
`,
    "install.sh": `set -e
case "$STOAT_PKGMGR" in
  dnf) editor=vim-enhanced ;;
  *) editor=vim ;;
esac
stoat_pkg_setup
stoat_pkg_install git curl less jq tmux $editor
echo "git=$(command -v git)" >> "$STOAT_OUTPUT"
echo "editor=$(command -v vim)" >> "$STOAT_OUTPUT"
`
  },
  "build-deps": {
    "recipe.toml": `schema = 3
name = "build-deps"
description = "C/C++ compiler, make and pkg-config"
version = "1"
os = ${ALL}
script = "install.sh"

[outputs]
compiler = "path of cc"
make = "path of make"
pkg_config = "path of pkg-config"

[health]
check = "cc --version >/dev/null && make --version >/dev/null && pkg-config --version >/dev/null"
`,
    "install.sh": `set -e
case "$STOAT_PKGMGR" in
  apt-get) pkgs="build-essential pkg-config" ;;
  dnf) pkgs="gcc gcc-c++ make pkgconf-pkg-config" ;;
  zypper) pkgs="gcc gcc-c++ make pkg-config" ;;
  pacman) pkgs="base-devel" ;;
  apk) pkgs="build-base pkgconf" ;;
  *) echo "build-deps: no package list for $STOAT_PKGMGR" >&2; exit 1 ;;
esac
stoat_pkg_setup
stoat_pkg_install $pkgs
echo "compiler=$(command -v cc)" >> "$STOAT_OUTPUT"
echo "make=$(command -v make)" >> "$STOAT_OUTPUT"
echo "pkg_config=$(command -v pkg-config)" >> "$STOAT_OUTPUT"
`
  },
  "pkg-tools": {
    "recipe.toml": `schema = 3
name = "pkg-tools"
description = "Package-manager helpers (repository keys, plugins) and the query tool"
version = "1"
os = ${ALL}
script = "install.sh"

[outputs]
manager = "the package manager"
query_tool = "the tool that lists installed packages"

[health]
check = "command -v dpkg-query || command -v rpm || command -v pacman || command -v apk"
`,
    "install.sh": `set -e
case "$STOAT_PKGMGR" in
  apt-get) pkgs="ca-certificates gnupg apt-transport-https"; query=dpkg-query ;;
  dnf) pkgs="dnf-plugins-core ca-certificates"; query=rpm ;;
  zypper) pkgs="ca-certificates"; query=rpm ;;
  pacman) pkgs="pacman-contrib"; query=pacman ;;
  apk) pkgs="ca-certificates"; query=apk ;;
  *) echo "pkg-tools: no package list for $STOAT_PKGMGR" >&2; exit 1 ;;
esac
stoat_pkg_setup
stoat_pkg_install $pkgs
echo "manager=$STOAT_PKGMGR" >> "$STOAT_OUTPUT"
echo "query_tool=$query" >> "$STOAT_OUTPUT"
`
  },
  "service-tools": {
    "recipe.toml": `schema = 3
name = "service-tools"
description = "Tools for looking at services and processes: lsof, strace, ps"
version = "1"
os = ${ALL}
script = "install.sh"

[outputs]
service_manager = "the guest's init system"
lsof = "path of lsof"
strace = "path of strace"

[health]
check = "command -v lsof >/dev/null && command -v strace >/dev/null"
`,
    "install.sh": `set -e
case "$STOAT_PKGMGR" in
  dnf|pacman) procps=procps-ng ;;
  *) procps=procps ;;
esac
stoat_pkg_setup
stoat_pkg_install lsof strace $procps
echo "service_manager=$STOAT_INIT" >> "$STOAT_OUTPUT"
echo "lsof=$(command -v lsof)" >> "$STOAT_OUTPUT"
echo "strace=$(command -v strace)" >> "$STOAT_OUTPUT"
`
  },
  "python-dev": {
    "recipe.toml": `schema = 3
name = "python-dev"
description = "Python 3 with pip and a virtual environment owned by a user"
version = "1"
os = ${ALL}
script = "install.sh"

[params.user]
type = "string"
default_from = "ssh_user"
help = "who owns the virtual environment"

[params.venv_dir]
type = "string"
default = "/opt/venv"
help = "where the virtual environment is made"

[outputs]
python = "the virtual environment's python"
venv = "the virtual environment's folder"

[health]
check = "python3 --version"
`,
    "install.sh": `set -e
# apt's recommends for pip are a whole C toolchain (~400 MB): build-deps is the recipe for that.
opts=
case "$STOAT_PKGMGR" in
  apt-get) pkgs="python3 python3-pip python3-venv"; opts=--no-install-recommends ;;
  pacman) pkgs="python python-pip" ;;
  apk) pkgs="python3 py3-pip" ;;
  *) pkgs="python3 python3-pip" ;;
esac
stoat_pkg_setup
stoat_pkg_install $opts $pkgs
venv="$STOAT_PARAM_VENV_DIR"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
if id "$STOAT_PARAM_USER" >/dev/null 2>&1; then chown -R "$STOAT_PARAM_USER" "$venv"; fi
echo "python=$venv/bin/python" >> "$STOAT_OUTPUT"
echo "venv=$venv" >> "$STOAT_OUTPUT"
`
  },
  docker: {
    "recipe.toml": `schema = 3
name = "docker"
description = "Docker engine, enabled at boot, usable by one user"
version = "1"
os = ["alpine", "ubuntu", "debian", "fedora", "arch"]
script = "install.sh"

[params.user]
type = "string"
default = "dev"
help = "user added to the docker group (skipped when it does not exist)"

[outputs]
socket = "the Docker socket"

[health]
check = "stoat_escalate docker info >/dev/null"
timeout = "60s"
`,
    "install.sh": `set -e
case "$STOAT_PKGMGR" in
  apt-get) pkg=docker.io ;;
  dnf) pkg=moby-engine ;;
  *) pkg=docker ;;
esac
stoat_pkg_setup
stoat_pkg_install $pkg
stoat_svc_enable docker
stoat_svc_start docker
if id "$STOAT_PARAM_USER" >/dev/null 2>&1; then
  if [ "$STOAT_PKGMGR" = apk ]; then addgroup "$STOAT_PARAM_USER" docker; else usermod -aG docker "$STOAT_PARAM_USER"; fi
fi
echo "socket=/var/run/docker.sock" >> "$STOAT_OUTPUT"
`
  },
  tailscale: {
    "recipe.toml": `schema = 3
name = "tailscale"
description = "Tailscale, joined to your tailnet with an auth key"
version = "1"
os = ["alpine", "ubuntu", "debian", "fedora", "arch"]
script = "install.sh"

[params.authkey]
type = "secret"
required = true
help = "a Tailscale auth key (tskey-...)"

[params.hostname]
type = "string"
default = ""
help = "name in the tailnet (default: the guest's hostname)"

[outputs]
ip = "the guest's tailnet IPv4 address"

[health]
check = "tailscale version"
`,
    "install.sh": `set -e
# Alpine and Arch package it; elsewhere Tailscale's own installer adds its repository.
case "$STOAT_PKGMGR" in
  apk|pacman) stoat_pkg_setup; stoat_pkg_install tailscale ;;
  *) command -v tailscale >/dev/null || curl -fsSL https://tailscale.com/install.sh | sh ;;
esac
stoat_svc_enable tailscaled
stoat_svc_start tailscaled
tailscale up --authkey="$STOAT_PARAM_AUTHKEY" $([ -n "$STOAT_PARAM_HOSTNAME" ] && echo "--hostname=$STOAT_PARAM_HOSTNAME")
echo "ip=$(tailscale ip -4 | head -n 1)" >> "$STOAT_OUTPUT"
`
  },
  xfce: {
    "recipe.toml": `schema = 3
name = "xfce"
description = "Xfce desktop, started automatically for one user on tty1"
version = "1"
os = ["alpine", "ubuntu", "debian", "arch"]
script = "install-systemd.sh"
reboot = true

[scripts]
alpine = "install-alpine.sh"

[params.user]
type = "string"
default_from = "ssh_user"
help = "who is logged in on tty1"

[outputs]
user = "who is logged in on tty1"

[health]
check = "command -v startxfce4 >/dev/null"
`,
    "install-systemd.sh": `set -e
case "$STOAT_PKGMGR" in
  apt-get) pkgs="xfce4 xfce4-terminal xorg dbus-x11" ;;
  pacman) pkgs="xfce4 xorg-server xorg-xinit" ;;
esac
stoat_pkg_setup
stoat_pkg_install $pkgs
user="$STOAT_PARAM_USER"
id "$user" >/dev/null 2>&1 || stoat_useradd "$user"
mkdir -p /etc/systemd/system/getty@tty1.service.d
printf '[Service]\\nExecStart=\\nExecStart=-/sbin/agetty --autologin %s --noclear %%I $TERM\\n' "$user" > /etc/systemd/system/getty@tty1.service.d/autologin.conf
home=$(getent passwd "$user" | cut -d: -f6)
grep -q startx "$home/.bash_profile" 2>/dev/null || echo '[ "$(tty)" = /dev/tty1 ] && exec startx /usr/bin/startxfce4' >> "$home/.bash_profile"
chown "$user" "$home/.bash_profile"
echo "user=$user" >> "$STOAT_OUTPUT"
`,
    "install-alpine.sh": `set -e
stoat_pkg_setup
setup-xorg-base
stoat_pkg_install xfce4 xfce4-terminal xinit dbus
stoat_svc_enable dbus
user="$STOAT_PARAM_USER"
id "$user" >/dev/null 2>&1 || stoat_useradd "$user"
sed -i "s|^tty1::.*|tty1::respawn:/bin/login -f $user|" /etc/inittab
home=$(getent passwd "$user" | cut -d: -f6)
grep -q startx "$home/.profile" 2>/dev/null || echo '[ "$(tty)" = /dev/tty1 ] && exec startx /usr/bin/startxfce4' >> "$home/.profile"
chown "$user" "$home/.profile"
echo "user=$user" >> "$STOAT_OUTPUT"
`
  }
}
