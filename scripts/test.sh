#!/usr/bin/env bash
# Sets up a fresh machine, builds, and runs every test: unit tests, then the e2e suites that boot real VMs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export TURBO_TELEMETRY_DISABLED=1
pnpm test
pnpm test:e2e
