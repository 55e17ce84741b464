#!/usr/bin/env bash
# The side-by-side run with the peers a user would pick instead (issue 27, item 5): Portkey's
# gateway (npm @portkey-ai/gateway) and LiteLLM's proxy (PyPI litellm[proxy]) in front of the same
# static upstream as the bare relay and tollgate on SQLite and PostgreSQL (examples/relay_bench.rs), base64 and float
# requests, CONNECTIONS connections and then 1. Numbers go to docs/benchmarks.md, "Peers".
#
#   bash bench/peers.sh [SECONDS] [CONNECTIONS] [ROUNDS]     # defaults 6 64 2
#
# The peers are installed once under target/bench-peers (node and python3 are needed; the
# package registries are the only network used). Portkey 1.15.2 from npm answers every request
# with 500 unless @hono/node-server is 1.13.5 (Portkey-AI/gateway#1389); its own lockfile pins
# that, hono 4.9.7 and @hono/node-ws 1.2.0 — npm overrides do the same here. LiteLLM is pinned
# at 1.108.7, the newest whose `proxy` extra resolves (1.109 and later name a litellm-proxy
# package that PyPI does not have).
set -euo pipefail
cd "$(dirname "$0")/.."
peers="$PWD/target/bench-peers"
mkdir -p "$peers/portkey"
if [ ! -f "$peers/portkey/node_modules/@portkey-ai/gateway/build/start-server.js" ]; then
  cat > "$peers/portkey/package.json" <<'JSON'
{
  "private": true,
  "dependencies": { "@portkey-ai/gateway": "1.15.2" },
  "overrides": { "@hono/node-server": "1.13.5", "hono": "4.9.7", "@hono/node-ws": "1.2.0" }
}
JSON
  (cd "$peers/portkey" && npm install --no-audit --no-fund --loglevel=error)
fi
if [ ! -x "$peers/litellm/bin/litellm" ]; then
  python3 -m venv "$peers/litellm"
  "$peers/litellm/bin/pip" install --quiet 'litellm[proxy]==1.108.7'
fi
source bench/relay_bench.sh
export TOLLGATE_BENCH_PORTKEY="$peers/portkey/node_modules/@portkey-ai/gateway/build/start-server.js"
export TOLLGATE_BENCH_LITELLM="$peers/litellm/bin/litellm"
for encoding in base64 float; do
  echo "## $encoding requests"
  TOLLGATE_BENCH_ENCODING=$encoding ./target/release/examples/relay_bench "${1:-6}" "${2:-64}" "${3:-2}"
done
