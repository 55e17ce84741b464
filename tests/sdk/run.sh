#!/usr/bin/env bash
# The real-client suite: drives a running gateway with the vendors' own Python SDKs.
#
# It makes (or reuses) a virtual environment with tests/sdk/requirements.txt, builds the
# `tollgate` binary, starts it on a free port with a temporary SQLite database and the embedded
# default configuration (the in-process simulator as every upstream), creates a key with the CLI,
# runs pytest, and stops the gateway. Extra arguments go to pytest.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"

target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
venv=${TOLLGATE_SDK_VENV:-$target/sdk-venv}
if [ ! -x "$venv/bin/pytest" ] || ! cmp -s "$here/requirements.txt" "$venv/requirements.txt"; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
  cp "$here/requirements.txt" "$venv/requirements.txt"
fi

cargo build --quiet -p tollgate
bin="$target/debug/tollgate"

work=$(mktemp -d)
db="sqlite://$work/tollgate.db"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
key=$("$bin" keys create --name sdk --balance 10 --database-url "$db")

"$bin" serve --listen "127.0.0.1:$port" --database-url "$db" >"$work/gateway.log" 2>&1 &
pid=$!
cleanup() {
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  if [ "${keep_log:-0}" = 1 ]; then
    echo "--- gateway log ---"
    cat "$work/gateway.log"
  fi
  rm -rf "$work"
}
trap cleanup EXIT

for _ in $(seq 1 100); do
  if python3 -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$port/healthz', timeout=1)" 2>/dev/null; then
    break
  fi
  if ! kill -0 "$pid" 2>/dev/null; then
    keep_log=1
    echo "the gateway exited before it was ready" >&2
    exit 1
  fi
  sleep 0.1
done

export TOLLGATE_BASE_URL="http://127.0.0.1:$port"
export TOLLGATE_KEY="$key"
export TOLLGATE_BIN="$bin"
export TOLLGATE_DATABASE_URL="$db"
status=0
"$venv/bin/pytest" -q -p no:cacheprovider "$here" "$@" || status=$?
[ "$status" = 0 ] || keep_log=1
exit "$status"
