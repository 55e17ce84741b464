#!/usr/bin/env bash
# Live sessions (/v1/realtime): memory per idle and per active session, and the round trip a
# relayed frame gains through the gateway (examples/realtime_bench.rs says what is measured).
# The simulator and the release gateway run as their own processes, on SQLite.
#
#   bash bench/realtime.sh IDLE                 # IDLE sessions held: memory per idle session
#   bash bench/realtime.sh 0 ACTIVE [ROUNDS]    # ACTIVE sessions talking: memory, added latency
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
cargo build --release --quiet -p tollgate-e2e --example realtime_bench
start_sim
gw_port=$(free_port)
# Enough sessions for one key, and file descriptors for them.
write_config -e 's|^max_sessions_per_key = .*|max_sessions_per_key = 100000|'
db="sqlite://$work/t.db"
key=$("$bin" keys create --name bench --balance 1000000 --database-url "$db")
ulimit -n "$(ulimit -Hn)"
"$bin" serve --config "$work/tollgate.toml" --listen "127.0.0.1:$gw_port" --database-url "$db" 2>"$work/gw.log" &
gw=$!
wait_healthy "$gw_port"
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$sim_port/_sim/knobs" >/dev/null && break; sleep 0.1; done
target/release/examples/realtime_bench "127.0.0.1:$gw_port" "127.0.0.1:$sim_port" "$key" "$gw" \
  "${1:-1000}" "${2:-0}" "${3:-100}"
