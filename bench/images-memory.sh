#!/usr/bin/env bash
# Memory per image request (docs/benchmarks.md, "Images"): the gateway's peak resident set while
# it relays C requests at once for N images of SIZE each (PNG, drawn by the simulator as its own
# process, so what the simulator holds is not counted), streamed (each image its own event,
# vetted and relayed one by one) and whole (the answer parsed, every image vetted, then sent);
# then C requests for ten 1024x1024 pictures of dall-e-2 answered by link (every image vetted,
# kept in the database a chunk at a time and linked) — the sizes of that family are its own.
#
#   bash bench/images-memory.sh [C] [N] [SIZE]      # defaults: 8 requests, 4 images, 2048x2048
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
concurrent=${1:-8}
images=${2:-4}
size=${3:-2048x2048}
start_sim
gw_port=$(free_port)
write_config
db="sqlite://$work/t.db"
key=$("$bin" keys create --name mem --balance 100000 --database-url "$db")
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$sim_port/_sim/knobs" >/dev/null && break; sleep 0.1; done
hwm() { awk '/VmHWM/ {print $2}' "/proc/$gw/status"; }
request() { # $1: true (streamed), false (whole) or linked; $2: output file
  local body="{\"model\":\"gpt-image-2\",\"prompt\":\"memory\",\"size\":\"$size\",\"quality\":\"low\",\"n\":$images,\"stream\":$1}"
  [ "$1" = linked ] && body='{"model":"dall-e-2","prompt":"memory","size":"1024x1024","n":10,"response_format":"url"}'
  curl -s -o "$2" -w '%{http_code}\n' "http://127.0.0.1:$gw_port/v1/images/generations" \
    -H "Authorization: Bearer $key" -H 'Content-Type: application/json' -d "$body"
}
# Each way in a gateway of its own (the peak resident set only rises), warmed up first with one
# request of each kind, so that lazily made parts are counted before.
for mode in true false linked; do
  "$bin" serve --config "$work/tollgate.toml" --listen "127.0.0.1:$gw_port" --database-url "$db" 2>"$work/gw.log" &
  gw=$!
  wait_healthy "$gw_port"
  request false "$work/warm.json" >/dev/null
  request true "$work/warm.sse" >/dev/null
  request linked "$work/warm.linked" >/dev/null
  before=$(hwm)
  for i in $(seq 1 "$concurrent"); do request "$mode" "$work/out-$mode-$i" >"$work/status-$mode-$i" & done
  wait $(jobs -p | grep -v "^$gw$" | grep -v "^$(pgrep -f "sim --listen 127.0.0.1:$sim_port" || true)$") 2>/dev/null || true
  for i in $(seq 1 "$concurrent"); do while [ ! -s "$work/status-$mode-$i" ]; do sleep 0.1; done; done
  after=$(hwm)
  bytes=$(stat -c %s "$work/out-$mode-1")
  statuses=$(cat "$work"/status-"$mode"-* | sort | uniq -c | tr -s ' ' | tr '\n' ' ')
  case $mode in true) label=streamed ;; false) label=whole ;; *) label=linked ;; esac
  what="$images images $size"
  [ "$mode" = linked ] && what="10 dall-e-2 pictures 1024x1024"
  echo "$label: $concurrent requests of $what at once (HTTP:$statuses), $bytes bytes each answer; peak RSS before ${before} KiB, after ${after} KiB: $(( (after - before) / concurrent )) KiB a request"
  kill "$gw" && wait "$gw" 2>/dev/null || true
done
