#!/usr/bin/env bash
# The official MCP Inspector's command-line mode (npm @modelcontextprotocol/inspector, pinned below),
# installed on first use into .tools/mcp-inspector (git-ignored), then run with the arguments given:
#
#   scripts/mcp_inspector.sh <command or URL> ... --method tools/list
#   scripts/mcp_inspector.sh --install-only
#
# tests/test_mcp_inspector.py drives it against the stdio and the streamable-HTTP server (CI runs it
# in the suite). 0.21.2 declares node >= 22.7.5 but its CLI runs on the machine's node 20.
set -euo pipefail
VERSION="0.21.2"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIR="$ROOT/.tools/mcp-inspector"
PACKAGE="$DIR/node_modules/@modelcontextprotocol/inspector"
CLI="$PACKAGE/cli/build/cli.js"

installed() { [ -f "$CLI" ] && grep -q "\"version\": \"$VERSION\"" "$PACKAGE/package.json"; }
if ! installed; then
  mkdir -p "$DIR"
  exec 9>"$DIR.lock"
  flock 9  # test workers started side by side install it once
fi
if ! installed; then
  echo '{"private": true}' > "$DIR/package.json"
  npm install --prefix "$DIR" --no-audit --no-fund --silent --save-exact \
    "@modelcontextprotocol/inspector@$VERSION" >&2
fi
if [ "${1:-}" = "--install-only" ]; then
  exit 0
fi
exec node "$CLI" --cli "$@"
