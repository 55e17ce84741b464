#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 30) with libFuzzer through cargo-fuzz, on the
# nightly toolchain it needs (installing cargo-fuzz when missing). New inputs go to a scratch
# directory; the committed seeds in fuzz/corpus/TARGET are read, never written. A crash stops
# the run: its input is in fuzz/artifacts/TARGET — fix the bug and keep the input as a test.
#
#   bash fuzz/run.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-30}
shift || true
if ! rustup toolchain list | grep -q '^nightly'; then
  # rustup's own server may be out of reach (CI reaches only the package registries): then the
  # fuzz run cannot happen here, which is said loudly rather than failing everything before it.
  if ! rustup toolchain install nightly --profile minimal; then
    echo "fuzz: no nightly toolchain and none can be installed here; fuzz targets NOT run" >&2
    exit 0
  fi
fi
if ! command -v cargo-fuzz >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(cargo +nightly fuzz list)
fi
cargo +nightly fuzz build -O
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for target in "${targets[@]}"; do
  mkdir -p "$scratch/$target"
  echo "== $target (${seconds} s)"
  cargo +nightly fuzz run -O "$target" "$scratch/$target" "corpus/$target" -- \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 2>&1 \
    | grep -E '^(#[0-9]+.*DONE|stat::number_of_executed_units|stat::peak_rss_mb|==[0-9]+==|SUMMARY|Done)' || true
  # libFuzzer exits non-zero on a crash, a timeout or an out-of-memory: pipefail fails the run.
  if [ -n "$(ls -A "artifacts/$target" 2>/dev/null)" ]; then
    echo "fuzz target $target failed; inputs in fuzz/artifacts/$target" >&2
    exit 1
  fi
done
