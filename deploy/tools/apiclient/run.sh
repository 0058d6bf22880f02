#!/usr/bin/env bash
# make api-client-test: lint the OpenAPI 3.1 document with Redocly (zero
# errors), generate a TypeScript client from it with openapi-typescript,
# compile it, and run propose -> approve -> read against a real memoryd
# started here on loopback with a throw-away data dir.
# Needs node 20+ and npm, and bin/memoryd (make build).
set -euo pipefail
cd "$(dirname "$0")"
root=$(cd ../../.. && pwd)
memoryd=${MEMORYD_BIN:-$root/bin/memoryd}

echo "== npm ci (pinned in package-lock.json)"
npm ci --no-audit --no-fund --loglevel=error
echo "== redocly lint gen/openapi/memory.openapi.json"
npm run --silent lint
echo "== openapi-typescript + tsc"
npm run --silent generate
npm run --silent build

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

echo "== memoryd on 127.0.0.1:$http_port (data in $tmp)"
"$memoryd" --data-dir "$tmp/data" --http-addr "127.0.0.1:$http_port" --grpc-addr "127.0.0.1:$grpc_port" >"$tmp/memoryd.log" 2>&1 &
pid=$!
url="http://127.0.0.1:$http_port"
for _ in $(seq 1 100); do
  if node -e 'fetch(process.argv[1]).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))' "$url/health"; then break; fi
  if ! kill -0 "$pid" 2>/dev/null; then echo "memoryd exited:"; cat "$tmp/memoryd.log"; exit 1; fi
  sleep 0.2
done
# Minted once memoryd has created its signing key in the data dir.
token=$("$memoryd" token --data-dir "$tmp/data" --sub apiclient-test --role admin --role reviewer --role service --agent '*' --ttl 10m)

echo "== propose -> approve -> read"
if ! MEMORYD_URL="$url" MEMORYD_TOKEN="$token" npm run --silent roundtrip; then
  echo "--- memoryd log"; tail -50 "$tmp/memoryd.log"; exit 1
fi
