#!/usr/bin/env bash
# What one call of the journal's batch function (`tollgate_charge_batch_v4`, crates/store/src/schema.rs)
# costs PostgreSQL, by batch size, with pgbench at one client: the database's own share of a billed
# request (docs/benchmarks.md, "Issue 47"). A scratch database is made and dropped.
#
#   bash bench/charge_batch.sh [SECONDS]        # default 5; TOLLGATE_BENCH_POSTGRES_URL picks the server
set -euo pipefail
cd "$(dirname "$0")/.."
server=${TOLLGATE_BENCH_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}
base=${server%/*}
db=tollgate_charge_batch_bench
url=$base/$db
cargo build --release -p tollgate
psql -q "$base/postgres" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db"
trap 'psql -q "$base/postgres" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)"' EXIT
./target/release/tollgate --database-url "$url" audit > /dev/null  # makes the schema
psql -q "$url" -f bench/charge_batch/setup.sql
mean() {  # mean() SCRIPT N: the mean latency in ms of one transaction
  pgbench -n -c 1 -T "${SECONDS_EACH}" -D "n=$2" -f "bench/charge_batch/$1" "$url" 2>/dev/null \
    | awk '/latency average/ {print $4}'
}
SECONDS_EACH=${1:-5}
echo "| charges a call | call ms | making its arguments ms | the function ms | ms a charge |"
echo "|---|---|---|---|---|"
for n in 1 8 32 64; do
  call=$(mean call.pgbench "$n")
  make=$(mean make.pgbench "$n")
  awk -v n="$n" -v c="$call" -v m="$make" \
    'BEGIN { printf "| %d | %.3f | %.3f | %.3f | %.3f |\n", n, c, m, c - m, (c - m) / n }'
done
