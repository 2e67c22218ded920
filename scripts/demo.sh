#!/usr/bin/env bash
# Sets up a fresh machine, then boots the tiny guest through stoat and runs a command in it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
stoat() { node packages/cli/bin/run.js "$@"; }
export STOAT_HOME="${STOAT_HOME:-$HOME/.stoat}"
name="demo-$$"
trap 'stoat down "$name" >/dev/null 2>&1 || true; stoat rm -y "$name" >/dev/null 2>&1 || true' EXIT
stoat doctor || true
stoat create "$name" --image tiny
stoat up "$name" --wait
stoat exec "$name" -- sh -c 'echo "hello from $(hostname): $(uname -sr)"; cat /proc/cpuinfo | grep -m1 "model name"'
stoat ls
stoat down "$name"
