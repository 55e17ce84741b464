# Shared by the scripts that run examples/relay_bench.rs (sourced, after `cd` to the repository
# root): the release gateway and the bench built, and PostgreSQL used when it answers.
cargo build --release -p tollgate
cargo build --release -p tollgate-e2e --example relay_bench
pg=${TOLLGATE_BENCH_POSTGRES_URL:-${TOLLGATE_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test}}
if pg_isready -q -d "$pg" 2>/dev/null; then
  export TOLLGATE_BENCH_POSTGRES_URL=$pg
else
  echo "PostgreSQL not reachable at $pg: SQLite only" >&2
fi
