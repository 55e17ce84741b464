#!/usr/bin/env bash
# Real engines end to end (docs/local-engines.md): Piper behind a minimal OpenAI-speech server and
# faster-whisper behind a minimal OpenAI-transcription server, tollgate in front of both with
# docs/examples/local-engines.toml, and OpenAI's SDK as the client. Extra arguments go to pytest.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."
source tests/gateway.sh
venv_for "$here" "${TOLLGATE_ENGINES_VENV:-$target/engines-venv}"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
engines=()
stop_engines() {
  for p in "${engines[@]}"; do kill "$p" 2>/dev/null || true; done
  if [ "${keep_log:-0}" = 1 ]; then tail -n 50 "$work"/piper.log "$work"/whisper.log || true; fi
  cleanup
}
trap stop_engines EXIT

# The speech server checks the key tollgate sends (the channel's api_key_env).
export PIPER_KEY=engines-suite-secret
# Each engine holds its port before the next is picked, and the gateway's is picked last.
start_engine() { # NAME SCRIPT [ENV=VALUE...]
  local name=$1 script=$2 engine_port
  shift 2
  engine_port=$(free_port)
  env "$@" "$venv/bin/python" "$here/$script" "$engine_port" >"$work/$name.log" 2>&1 &
  engines+=($!)
  for _ in $(seq 1 600); do
    python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$engine_port/health', timeout=1)" 2>/dev/null && break
    kill -0 "${engines[-1]}" 2>/dev/null || { keep_log=1; echo "the $name server exited" >&2; exit 1; }
    sleep 0.2
  done
  printf -v "${name}_port" '%s' "$engine_port"
}
start_engine piper speech_server.py ENGINE_KEY="$PIPER_KEY"
start_engine whisper transcription_server.py
port=$(free_port)

config="$work/tollgate.toml"
sed -e "s#PIPER_URL#http://127.0.0.1:$piper_port#" -e "s#WHISPER_URL#http://127.0.0.1:$whisper_port#" \
  docs/examples/local-engines.toml >"$config"
echo "engines: piper on $piper_port, whisper on $whisper_port; the gateway on $port"
gateway_args=(--config "$config")
start_gateway

export TOLLGATE_BASE_URL="http://127.0.0.1:$port"
export TOLLGATE_BIN="$bin"
export TOLLGATE_CONFIG="$config"
export TOLLGATE_DATABASE_URL="$db"
status=0
"$venv/bin/pytest" -q -s -p no:cacheprovider "$here" "$@" || status=$?
[ "$status" = 0 ] || keep_log=1
exit "$status"
