#!/usr/bin/env bash
# Memory and file descriptors of the gateway holding 10,000 idle client connections, then 1,000
# concurrent streams, with their time to the first byte (docs/benchmarks.md).
#
# Builds the release binary, runs the simulated vendors as their own process (so that their
# memory is not counted) with a slow frame interval so that streams stay open, starts the gateway
# with room for the connections, and from one Python process (asyncio) opens the idle
# connections, then the streams (t2a_v2 speech, SSE, a frame every 2 s). It reads the gateway's
# VmRSS and open file descriptors from /proc at each step.
#
#   bash bench/connections.sh [IDLE] [STREAMS] [FRAME_INTERVAL_MS]
#
# A longer frame interval (say 20000 for 10,000 streams) keeps the frames' total rate within
# what one machine's client, simulator and gateway move, so that what is measured is what a
# stream holds, not a backlog behind a client that cannot keep up.
set -euo pipefail
cd "$(dirname "$0")/.."
idle=${1:-10000}
streams=${2:-1000}
interval=${3:-2000}
ulimit -n "$(ulimit -Hn)"
source bench/lib.sh
# The simulator (the default), or with TOLLGATE_BENCH_UPSTREAM=static a static upstream that holds
# one frame for every stream, for counts whose audio the simulator cannot hold (10,000 streams).
upstream=${TOLLGATE_BENCH_UPSTREAM:-sim}
if [ "$upstream" = static ]; then
  sim_port=$(free_port)
  python3 bench/t2a_upstream.py "$sim_port" "$interval" &
else
  start_sim
fi
gw_port=$(free_port)
write_config \
  -e "s|^max_connections = .*|max_connections = $((idle + streams + 100))|" \
  -e "s|^max_connections_per_source = [0-9]*|max_connections_per_source = 0|" \
  -e "s|^header_read_timeout_seconds = .*|header_read_timeout_seconds = 600|" \
  -e "s|^max_concurrency = .*|max_concurrency = $((streams + 100))|" \
  -e "s|^# api_key_env = \"MINIMAX_API_KEY\"|api_key_env = \"MINIMAX_API_KEY\"|"
export MINIMAX_API_KEY=bench  # the simulator wants a key, any key
db="sqlite://$work/t.db"
key=$("$bin" keys create --name conns --balance 1000 --database-url "$db" 2>/dev/null)
"$bin" serve --config "$work/tollgate.toml" --listen "127.0.0.1:$gw_port" --database-url "$db" 2>"$work/gw.log" &
gw=$!
wait_healthy "$gw_port"
# Streams that last: a frame every $interval ms.
[ "$upstream" = static ] || curl -sf -X PUT "http://127.0.0.1:$sim_port/_sim/knobs" -d "{\"frame_interval_ms\": $interval}" >/dev/null

python3 - "$gw" "$gw_port" "$key" "$idle" "$streams" "$interval" <<'PY'
import asyncio, os, sys, time

pid, port, key, idle, streams = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
interval = int(sys.argv[6]) / 1000

def sample(label):
    rss = next(l.split()[1] for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS"))
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    print(f"| {label} | {int(rss):,} KiB | {fds:,} |", flush=True)
    return int(rss), fds

async def main():
    print("| state | gateway RSS | open fds |")
    print("|---|---|---|")
    # One request first, so that lazily built parts are counted in the baseline.
    r, w = await asyncio.open_connection("127.0.0.1", port)
    w.write(b"GET /healthz HTTP/1.1\r\nhost: b\r\nconnection: close\r\n\r\n")
    await r.read()
    w.close()
    base = sample("started, one request served")
    conns = []
    for i in range(idle):
        conns.append(await asyncio.open_connection("127.0.0.1", port))
    await asyncio.sleep(2)
    held = sample(f"{idle:,} idle connections open")
    print(f"\nper idle connection: {(held[0] - base[0]) * 1024 / idle:,.0f} bytes, "
          f"{(held[1] - base[1]) / idle:.2f} fds\n", flush=True)
    for _, w in conns:
        w.close()
    await asyncio.sleep(2)
    after_idle = sample("idle connections closed")

    text = "The lighthouse keeper climbed the stairs again. " * 12
    body = ('{"model":"speech-2.8-turbo","stream":true,"text":"%s","voice_setting":{"voice_id":"v"},'
            '"audio_setting":{"format":"pcm"}}' % text).encode()
    request = (
        f"POST /v1/t2a_v2 HTTP/1.1\r\nhost: b\r\nauthorization: Bearer {key}\r\n"
        f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
    ).encode() + body
    open_streams = []
    readers = []
    async def drain(r):
        # A client that keeps reading, as players do: what the gateway holds is then what is in
        # flight, not frames piling up behind a reader that stopped.
        while await r.read(65536):
            pass
    first_bytes = []
    async def start():
        r, w = await asyncio.open_connection("127.0.0.1", port)
        asked = time.perf_counter()
        w.write(request)
        head = await r.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            raise SystemExit(f"a stream was refused: {head[:200]!r} {await r.read(400)!r}")
        await r.read(1)  # the first piece of the stream
        first_bytes.append(time.perf_counter() - asked)
        open_streams.append((r, w))
        readers.append(asyncio.create_task(drain(r)))
    for i in range(0, streams, 100):
        await asyncio.gather(*(start() for _ in range(min(100, streams - i))))
    await asyncio.sleep(1)
    flowing = sample(f"{streams:,} streams open (a frame every {interval:g} s)")
    first_bytes.sort()
    at = lambda q: first_bytes[min(len(first_bytes) - 1, int(q * len(first_bytes)))] * 1000
    print(f"\ntime to the first byte, opened 100 at a time: p50 {at(0.5):.1f} ms, "
          f"p99 {at(0.99):.1f} ms, max {first_bytes[-1] * 1000:.1f} ms", flush=True)
    print(f"\nper open stream: {(flowing[0] - after_idle[0]) * 1024 / streams:,.0f} bytes, "
          f"{(flowing[1] - after_idle[1]) / streams:.2f} fds (its client and upstream connections)\n", flush=True)
    for _, w in open_streams:
        w.close()
    for reader in readers:
        reader.cancel()
    await asyncio.sleep(3)
    sample("streams hung up (3 s later; upstreams are drained to their end)")

asyncio.run(main())
PY
