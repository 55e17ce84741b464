#!/usr/bin/env bash
# The billed relay side by side with a bare hyper relay of the same static upstream
# (examples/relay_bench.rs): SQLite and, when reachable, PostgreSQL; 1 account and 8; then the
# same on a ledger pre-filled with a million rows. Numbers go to docs/benchmarks.md.
#
#   bash bench/ledger.sh [SECONDS_PER_ROUND] [CONNECTIONS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-5}
connections=${2:-64}
rounds=${3:-2}
source bench/relay_bench.sh
echo "== empty ledger"
./target/release/examples/relay_bench "$seconds" "$connections" "$rounds"
echo "== SQLite ledger with 1,000,000 rows"
TOLLGATE_BENCH_POSTGRES_URL= TOLLGATE_BENCH_LEDGER_ROWS=1000000 \
  ./target/release/examples/relay_bench "$seconds" "$connections" "$rounds"
