# Shared by the suites that drive a running gateway (tests/sdk, tests/api, tests/console), sourced
# after `cd` to the repository root: the debug binary, a scratch folder with an SQLite database,
# a free port, a virtual environment per suite, and the gateway started and stopped.
#
#   venv_for DIR NAME        # $venv: a virtual environment with DIR/requirements.txt, reused
#   (make keys and tokens with "$bin" … --database-url "$db")
#   start_gateway            # serves the embedded default (plus "${gateway_args[@]}", e.g.
#                            # --config FILE) on $port; stopped on exit
#   keep_log=1               # print the gateway's log (filtered by $log_filter) on exit
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
cargo build --quiet -p tollgate
bin="$target/debug/tollgate"
work=$(mktemp -d)
db="sqlite://$work/tollgate.db"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
pid=
gateway_args=()
log_filter=${log_filter:-.}

venv_for() {
  venv=$2
  if [ ! -x "$venv/bin/python" ] || ! cmp -s "$1/requirements.txt" "$venv/requirements.txt"; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$1/requirements.txt"
    cp "$1/requirements.txt" "$venv/requirements.txt"
  fi
}

cleanup() {
  if [ -n "$pid" ]; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  if [ "${keep_log:-0}" = 1 ]; then
    echo "--- gateway log ---"
    grep -E "$log_filter" "$work/gateway.log" | tail -n 300 || true
  fi
  if [ -n "${SAVE_LOG:-}" ]; then cp "$work/gateway.log" "$SAVE_LOG"; fi
  rm -rf "$work"
}
trap cleanup EXIT

start_gateway() {
  "$bin" serve --listen "127.0.0.1:$port" --database-url "$db" "${gateway_args[@]}" >"$work/gateway.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 100); do
    if python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/healthz', timeout=1)" 2>/dev/null; then
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      keep_log=1
      echo "the gateway exited before it was ready" >&2
      exit 1
    fi
    sleep 0.1
  done
  echo "the gateway did not become ready" >&2
  keep_log=1
  exit 1
}
