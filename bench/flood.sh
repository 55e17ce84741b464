#!/usr/bin/env bash
# The connection flood (docs/benchmarks.md, docs/decisions.md "Connection hygiene"): 25,000
# sockets from 127.0.0.1 that connect and never send a request, against the release gateway
# (SQLite, the simulated vendors as their own process). Side by side in one run: the time to
# serve /healthz (from 127.0.0.2) and a billed embeddings request (from 127.0.0.3), each on a
# new connection, with no flood, while the flood is opening its sockets, and once it holds
# them all; and the gateway's RSS and open descriptors. Twice: with the default cap per source
# (1,024), and with no cap per source and max_connections = 2,000 (the flood fills the gateway
# and its longest-idle sockets give way).
#
#   bash bench/flood.sh [SOCKETS]
set -euo pipefail
cd "$(dirname "$0")/.."
sockets=${1:-25000}
ulimit -n "$(ulimit -Hn)"
source bench/lib.sh
start_sim
export OPENAI_API_KEY=bench  # the simulator wants a key, any key

run() {
  local label=$1
  shift
  local gw_port
  gw_port=$(free_port)
  write_config -e "s|^# api_key_env = \"OPENAI_API_KEY\"|api_key_env = \"OPENAI_API_KEY\"|" "$@"
  local db="sqlite://$work/$label.db"
  local key
  key=$("$bin" keys create --name flood --balance 1000 --database-url "$db" 2>/dev/null)
  "$bin" serve --config "$work/tollgate.toml" --listen "127.0.0.1:$gw_port" --database-url "$db" 2>"$work/gw-$label.log" &
  local gw=$!
  wait_healthy "$gw_port"
  echo
  echo "### $label"
  echo
  python3 - "$gw" "$gw_port" "$key" "$sockets" <<'PY'
import os, socket, statistics, subprocess, sys, threading, time

pid, port, key, sockets = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
HOLDER = """
import socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
print("open", flush=True)
sys.stdin.read()
"""

def sample():
    rss = next(l.split()[1] for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS"))
    return int(rss), len(os.listdir(f"/proc/{pid}/fd"))

body = b'{"model":"text-embedding-3-small","input":"served during a flood"}'
billed = (
    f"POST /v1/embeddings HTTP/1.1\r\nhost: b\r\nauthorization: Bearer {key}\r\n"
    f"content-type: application/json\r\ncontent-length: {len(body)}\r\nconnection: close\r\n\r\n"
).encode() + body
healthz = b"GET /healthz HTTP/1.1\r\nhost: b\r\nconnection: close\r\n\r\n"

def exchange(source, request):
    """Milliseconds to a complete 200 on a new connection from `source`."""
    started = time.perf_counter()
    s = socket.socket()
    s.settimeout(10)
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    s.sendall(request)
    seen = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        seen += chunk
    s.close()
    assert seen.startswith(b"HTTP/1.1 200"), seen[:200]
    return (time.perf_counter() - started) * 1000

def probes(n):
    h, b = [], []
    for _ in range(n):
        h.append(exchange("127.0.0.2", healthz))
        b.append(exchange("127.0.0.3", billed))
    return h, b

def row(label, h, b, mem):
    q = lambda xs: (statistics.median(xs), max(xs))
    (hm, hx), (bm, bx) = q(h), q(b)
    print(f"| {label} | {len(h)} | {hm:.1f} / {hx:.1f} | {bm:.1f} / {bx:.1f} | {mem[0]:,} KiB | {mem[1]:,} |", flush=True)

print("| phase | probes | /healthz ms, median / max | billed ms, median / max | gateway RSS | open fds |")
print("|---|---|---|---|---|---|")
h, b = probes(50)
row("no flood", h, b, sample())

holders = [subprocess.Popen([sys.executable, "-c", HOLDER, str(port), str(sockets // 2)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE) for _ in range(2)]
opened = []
for p in holders:
    threading.Thread(target=lambda p=p: opened.append(p.stdout.readline()), daemon=True).start()
started = time.perf_counter()
h, b, peak = [], [], (0, 0)
while len(opened) < 2:
    hh, bb = probes(1)
    h += hh; b += bb
    now = sample()
    peak = max(peak, now)
row(f"while {sockets:,} sockets open ({time.perf_counter() - started:.1f} s)", h, b, peak)
assert all(line.strip() == b"open" for line in opened), opened
h, b = probes(50)
row(f"{sockets:,} sockets held", h, b, sample())
for p in holders:
    p.kill(); p.wait()
PY
  curl -s "http://127.0.0.1:$gw_port/metrics" | grep -E '^tollgate_connections_(evicted|refused)_total' | sed 's/^/    /'
  kill "$gw"
  wait "$gw" 2>/dev/null || true
}

run "cap per source (default: 1,024)" -e "s|^max_connections_per_source = .*|max_connections_per_source = 1024|"
run "no cap per source, max_connections = 2,000" \
  -e "s|^max_connections = .*|max_connections = 2000|" \
  -e "s|^max_connections_per_source = .*|max_connections_per_source = 0|"
