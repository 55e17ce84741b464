# Shared by the suites that drive a running gateway (tests/sdk, tests/api, tests/console), sourced
# after `cd` to the repository root: the debug binary, a scratch folder with an SQLite database,
# a free port, a virtual environment per suite, and the gateway started and stopped.
#
#   venv_for DIR NAME        # $venv: a virtual environment with DIR/requirements.txt, reused
#   (make keys and tokens with "$bin" … --database-url "$db")
#   start_gateway            # serves the embedded default (plus "${gateway_args[@]}", e.g.
#                            # --config FILE) on $port; stopped on exit
#   keep_log=1               # print the gateway's log (filtered by $log_filter) on exit
#   tls_listener CONFIG      # a [tls] listener in CONFIG with a certificate made here;
#                            # exports TOLLGATE_TLS_URL and TOLLGATE_TLS_CA (its certificate)
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

# A TLS listener for the clients that insist on wss:// (google-genai's Live client, the OpenAI
# Node SDK's Realtime client): a self-signed certificate for localhost and 127.0.0.1, which the
# clients trust as an operator's private CA (SSL_CERT_FILE, NODE_EXTRA_CA_CERTS).
tls_listener() {
  local tls_port
  tls_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=localhost \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -addext "basicConstraints=critical,CA:TRUE" \
    -keyout "$work/tls.key" -out "$work/tls.crt" 2>/dev/null
  printf '\n[tls]\nlisten = "127.0.0.1:%s"\ncert_file = "%s/tls.crt"\nkey_file = "%s/tls.key"\n' \
    "$tls_port" "$work" "$work" >>"$1"
  export TOLLGATE_TLS_URL="https://127.0.0.1:$tls_port" TOLLGATE_TLS_CA="$work/tls.crt"
}

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
