#!/usr/bin/env bash
# The web console in a real browser: Debian's Chromium (installed when missing) driven by
# playwright-core from npm. Starts the gateway on a free port with a temporary SQLite database
# and the embedded default configuration, makes an admin token with the CLI, runs
# console.test.mjs. Screenshots land in $SHOTS (default target/console-shots): look at them.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"

if ! command -v chromium >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
(cd "$here" && npm ci --silent --no-audit --no-fund)

target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
cargo build --quiet -p tollgate
bin="$target/debug/tollgate"

work=$(mktemp -d)
db="sqlite://$work/tollgate.db"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
token=$("$bin" admin token create --name console-test --database-url "$db" 2>/dev/null)
"$bin" serve --listen "127.0.0.1:$port" --database-url "$db" >"$work/gateway.log" 2>&1 &
pid=$!
cleanup() {
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  if [ "${keep_log:-0}" = 1 ]; then
    echo "--- gateway log (warnings and errors) ---"
    grep -E 'WARN|ERROR' "$work/gateway.log" | tail -n 50 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done

export GATEWAY="http://127.0.0.1:$port" ADMIN_TOKEN="$token" CHROMIUM=$(command -v chromium)
export SHOTS=${SHOTS:-$target/console-shots}
node "$here/console.test.mjs" || { keep_log=1; exit 1; }
