#!/bin/sh
# Runs the official MCP conformance suite against `stoat mcp --http` on a fresh data root.
# Needs the npm registry (npx) and a built tree. Exit 0 when only the baseline's fixture
# scenarios fail. PORT picks the port (default: any free one, read back from the server).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
home=$(mktemp -d)
STOAT_HOME=$home node "$here/../cli/bin/run.js" mcp --http "127.0.0.1:${PORT:-0}" 2>"$home/server.log" &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$home"' EXIT
url=
for _ in $(seq 1 100); do
  url=$(sed -n 's/.*serving Streamable HTTP at \([^ ]*\).*/\1/p' "$home/server.log" 2>/dev/null)
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { cat "$home/server.log" >&2; echo "stoat mcp --http did not start" >&2; exit 1; }
npx -y @modelcontextprotocol/conformance@0.1.13 server --url "$url" \
  --expected-failures "$here/conformance-baseline.yml" -o "$home/results"
