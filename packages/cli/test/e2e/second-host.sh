#!/bin/sh
# A second libvirt host on this machine, for the qemu+ssh:// suite: its own network namespace
# (10.77.0.2, reached from here over a veth pair), its own libvirtd and virtlogd (a private
# /run/libvirt, so they are not this machine's daemons) and its own sshd. A guest's forwarded
# port is bound on that host's loopback, so only a connection through it (ssh -W) reaches the
# guest. The file system stays shared: the provider asks of a remote host that it hold the VM
# folder at the same path.
#
#   second-host.sh up NAME SSHD_CONFIG    start it (after taking down one left by an earlier run)
#   second-host.sh down NAME              stop everything in it, its guests included
#   second-host.sh unplug|plug NAME       take its link down or up: a host that does not answer
set -eu
cmd=$1
name=$2
link="${name}0"

case "$cmd" in
up)
  config=$3
  "$0" down "$name"
  ip netns add "$name"
  ip link add "$link" type veth peer name "${name}1"
  ip link set "${name}1" netns "$name"
  ip addr add 10.77.0.1/24 dev "$link"
  ip link set "$link" up
  ip netns exec "$name" ip addr add 10.77.0.2/24 dev "${name}1"
  ip netns exec "$name" ip link set "${name}1" up
  ip netns exec "$name" ip link set lo up
  mkdir -p /run/sshd
  # The daemons hold the private mount of /run/libvirt; sshd runs beside them, so virsh over
  # qemu+ssh:// there reaches this host's libvirtd, not the machine's.
  ip netns exec "$name" unshare --mount --propagation private sh -ec "
    mount -t tmpfs tmpfs /run/libvirt
    virtlogd -d -p /run/libvirt/virtlogd.pid
    libvirtd -d -p /run/libvirt/libvirtd.pid
    /usr/sbin/sshd -f '$config'
    for _ in \$(seq 1 100); do virsh -c qemu:///system list >/dev/null 2>&1 && exit 0; sleep 0.1; done
    echo 'the second host libvirtd did not answer' >&2
    exit 1
  "
  ;;
down)
  if ip netns list | grep -qw "$name"; then
    pids=$(ip netns pids "$name")
    [ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
    ip netns del "$name"
  fi
  ip link del "$link" 2>/dev/null || true
  ;;
unplug) ip link set "$link" down ;;
plug) ip link set "$link" up ;;
*)
  echo "usage: $0 up NAME SSHD_CONFIG | down NAME | unplug NAME | plug NAME" >&2
  exit 2
  ;;
esac
