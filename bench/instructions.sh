#!/usr/bin/env bash
# CPU instructions per billed request, counted by callgrind (valgrind): the bare hyper relay and
# tollgate on SQLite with 1 key and with 8, float and base64 embeddings requests, against the
# same static upstream (examples/relay_bench.rs, --instructions). Deterministic where time on a
# shared machine is not: runs agree within about 1 %. Numbers go to docs/benchmarks.md,
# "Instructions per request".
#
#   bash bench/instructions.sh [FEW] [MANY] [CONNECTIONS]     # defaults 200 1200 8
#   TOLLGATE_BENCH_KEEP=1 bash bench/instructions.sh          # keep the files for callgrind_annotate
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind is needed (apt-get install valgrind)" >&2; exit 1; }
cargo build --release -p tollgate
cargo build --release -p tollgate-e2e --example relay_bench
./target/release/examples/relay_bench --instructions "${1:-200}" "${2:-1200}" "${3:-8}" 2>/dev/null
