#!/usr/bin/env bash
# make mcp-client-test: drive memoryd's MCP server with the official
# TypeScript SDK client (@modelcontextprotocol/sdk, pinned in
# package-lock.json) over streamable HTTP (/mcp on the edge) and over stdio
# (bin/memctl mcp), against a real memoryd started here on loopback with a
# throw-away data dir and tokens. Needs node 20+ and npm, bin/memoryd and
# bin/memctl (make build). MEMORYD_BIN / MEMCTL_BIN override the binaries.
set -euo pipefail
cd "$(dirname "$0")"
root=$(cd ../../.. && pwd)
memoryd=${MEMORYD_BIN:-$root/bin/memoryd}
memctl=${MEMCTL_BIN:-$root/bin/memctl}
for bin in "$memoryd" "$memctl"; do
  [ -x "$bin" ] || { echo "$bin not found: run make build first"; exit 1; }
done

echo "== npm ci (pinned in package-lock.json)"
npm ci --no-audit --no-fund --loglevel=error

tmp=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
http_port=$(free_port)
grpc_port=$(free_port)
while [ "$grpc_port" = "$http_port" ]; do grpc_port=$(free_port); done

echo "== memoryd on 127.0.0.1:$http_port (gRPC $grpc_port, data in $tmp)"
# --rate-limit=0: the test makes many calls with few tokens.
"$memoryd" --data-dir "$tmp/data" --http-addr "127.0.0.1:$http_port" --grpc-addr "127.0.0.1:$grpc_port" \
  --rate-limit=0 >"$tmp/memoryd.log" 2>&1 &
pid=$!
url="http://127.0.0.1:$http_port"
for _ in $(seq 1 100); do
  if node -e 'fetch(process.argv[1]).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))' "$url/health"; then break; fi
  if ! kill -0 "$pid" 2>/dev/null; then echo "memoryd exited:"; cat "$tmp/memoryd.log"; exit 1; fi
  sleep 0.2
done
# Minted once memoryd has created its signing key in the data dir.
admin=$("$memoryd" token --data-dir "$tmp/data" --sub mcpclient-admin --role admin --role reviewer --role service --agent '*' --ttl 10m)
alpha=$("$memoryd" token --data-dir "$tmp/data" --sub mcpclient-alpha --role agent --agent alpha --ttl 10m)

echo "== MCP over streamable HTTP ($url/mcp) and stdio ($memctl mcp)"
if ! MEMORYD_URL="$url" MEMORYD_GRPC="127.0.0.1:$grpc_port" MEMCTL_BIN="$memctl" ADMIN_TOKEN="$admin" ALPHA_TOKEN="$alpha" \
  npm test --silent; then
  echo "--- memoryd log"; tail -50 "$tmp/memoryd.log"; exit 1
fi
