#!/usr/bin/env bash
# Sets up a fresh machine, builds, and runs every test: unit tests, then the e2e suites that boot real VMs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export TURBO_TELEMETRY_DISABLED=1
# The sources and the tests, type-checked (setup.sh built the packages the tests reference).
pnpm typecheck
# Formatting (biome.json); `pnpm format` rewrites the tree to it.
pnpm format:check
pnpm test
pnpm test:e2e
