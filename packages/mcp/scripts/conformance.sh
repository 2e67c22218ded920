#!/bin/sh
# Runs the official MCP conformance suite against `stoat mcp --http` on a fresh data root.
# Needs the npm registry (npx) and a built tree. Exit 0 when only the baseline's fixture
# scenarios fail.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
port=${PORT:-3401}
home=$(mktemp -d)
STOAT_HOME=$home node "$here/../cli/bin/run.js" mcp --http "127.0.0.1:$port" 2>"$home/server.log" &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$home"' EXIT
for _ in $(seq 1 100); do grep -q "serving" "$home/server.log" 2>/dev/null && break; sleep 0.1; done
npx -y @modelcontextprotocol/conformance@0.1.13 server --url "http://127.0.0.1:$port/mcp" \
  --expected-failures "$here/conformance-baseline.yml" -o "$home/results"
