#!/usr/bin/env bash
# The operator's side on a big usage log (issue 13): a million usage records — all of them one
# account's, the worst case for its pages — then the admin API's usage queries timed (median of
# five) and the console's largest pages loaded in Chromium (sign-in to the page drawn).
#
#   bash bench/admin.sh [RECORDS]            # SQLite (default 1000000)
#   BENCH_POSTGRES_URL=postgres://…/db bash bench/admin.sh   # PostgreSQL (a scratch database)
#
# The records are written straight into usage_log, and a charge row for each answered one
# straight into the ledger — of a scratch database: the balance is not kept in step with them.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
records=${1:-1000000}

if [ -n "${BENCH_POSTGRES_URL:-}" ]; then
  db=$BENCH_POSTGRES_URL
else
  db="sqlite://$work/tollgate.db"
fi
"$bin" keys create --name big --balance 1000 --database-url "$db" >/dev/null 2>&1
for i in 1 2 3; do "$bin" keys create --name "small-$i" --balance 10 --database-url "$db" >/dev/null 2>&1; done
token=$("$bin" admin token create --name "bench-$$" --database-url "$db" 2>/dev/null)
account=$("$bin" keys show big --json --database-url "$db" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')

echo "writing $records usage records (and their ledger rows) of one account over 30 days…"
started=$(date +%s.%N)
python3 - "$db" "$account" "$records" <<'PY'
import os, random, sys, time
db, account, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
models = [("text-embedding-3-small", "embeddings", "tokens"), ("speech-2.8-hd", "speech", "characters"),
          ("asr-1.0", "transcriptions", "audio_seconds"), ("gen-2.5-flash", "native", "tokens"),
          ("clipgen-cn-2.0-260128", "clip_tasks", "video_tokens")]
now = int(time.time() * 1000)
span = 30 * 86_400_000
rng = random.Random(7)
def rows():
    for i in range(n):
        at = now - span + (span * i) // n
        model, endpoint, meter = models[i % len(models)]
        status = 200 if rng.random() > 0.05 else rng.choice([400, 429, 502])
        charge = rng.randrange(1, 50_000_000) if status == 200 else 0
        rid = os.urandom(6).hex()
        yield (f"use_{at:012x}{rid}", at, "request", account, f"key_{account[5:]}", None, endpoint, model,
               "sim-openai", status, meter, None, rng.randrange(1, 5000), charge, charge, rng.randrange(5, 900),
               None, "req_" + rid, None, 0, None, 1, rng.choice(["vendor", "local_count"]), "twice the hold")
cols = "(id, created_at, kind, account_id, key_id, price_group, endpoint, model, channel, status, meter, quantity, units, charge_nanos, hold_nanos, latency_ms, upstream_ms, request_id, task_id, estimated, note, price_version, measured, bound_basis)"
ledger_cols = "(id, account_id, kind, amount_nanos, balance_after_nanos, model, request_id, estimated, created_at, price_version, bound_nanos, hash)"
records = list(rows())
# A charge row as the journal writes it: its price version, its bound and its link in the
# account's chain (a random hash of the real length; this bench does not audit the chain).
charges = [("led" + r[0][3:], account, "charge", -r[13], 0, r[7], r[17], 0, r[1], 1, 2 * r[13], os.urandom(32).hex())
           for r in records if r[9] == 200]
if db.startswith("sqlite://"):
    import sqlite3
    con = sqlite3.connect(db[len("sqlite://"):])
    con.executemany(f"INSERT INTO usage_log {cols} VALUES ({','.join('?' * 24)})", records)
    con.executemany(f"INSERT INTO ledger {ledger_cols} VALUES ({','.join('?' * 12)})", charges)
    con.commit()
    con.execute("ANALYZE")
else:
    import subprocess, io, csv
    for table, columns, data in (("usage_log", cols, records), ("ledger", ledger_cols, charges)):
        buf = io.StringIO()
        w = csv.writer(buf)
        for r in data:
            w.writerow(["\\N" if v is None else v for v in r])
        subprocess.run(["psql", db, "-q", "-c", f"COPY {table} {columns} FROM STDIN WITH (FORMAT csv, NULL '\\N')"],
                       input=buf.getvalue().encode(), check=True)
    subprocess.run(["psql", db, "-q", "-c", "ANALYZE"], check=True)
PY
echo "written in $(python3 -c "import time; print(round(time.time() - $started, 1))") s"

port=$(free_port)
"$bin" serve --listen "127.0.0.1:$port" --database-url "$db" >"$work/gateway.log" 2>&1 &
pid=$!
wait_healthy "$port"
# The gateway rolls the finished hours up at start (a week per pass): wait for it, timed.
started=$(date +%s.%N)
python3 - "$db" <<'PY'
import subprocess, sys, time
db = sys.argv[1]
def rolled():
    sql = "SELECT value FROM settings WHERE name = 'usage_rolled_until'"
    if db.startswith("sqlite://"):
        import sqlite3
        row = sqlite3.connect(db[len("sqlite://"):]).execute(sql).fetchone()
        return int(row[0]) if row else 0
    out = subprocess.run(["psql", db, "-Atc", sql], capture_output=True, text=True).stdout.strip()
    return int(out) if out else 0
deadline = time.time() + 300
while rolled() < time.time() * 1000 - 2 * 3600_000 and time.time() < deadline:
    time.sleep(0.2)
PY
echo "rolled up 30 days of hours in $(python3 -c "import time; print(round(time.time() - $started, 1))") s"

echo "gateway resident memory before the queries: $(( $(ps -o rss= -p "$pid") / 1024 )) MiB"
python3 - "$port" "$token" "$account" <<'PY'
import json, statistics, sys, time, urllib.request
port, token, account = sys.argv[1:4]
base = f"http://127.0.0.1:{port}/admin/v1"
def get(path):
    req = urllib.request.Request(base + path, headers={"authorization": "Bearer " + token})
    t = time.perf_counter()
    with urllib.request.urlopen(req) as r:
        body = r.read()
    return time.perf_counter() - t, body
def bench(label, path, runs=5):
    times = []
    for _ in range(runs):
        t, body = get(path)
        times.append(t)
    print(f"| {label} | {statistics.median(times) * 1000:.1f} ms | {len(body):,} B |")
    return body
_, first = get(f"/usage?account={account}&limit=50")
cursor = json.loads(first)["next_cursor"]
print("| query | median of 5 | answer |")
print("|---|---|---|")
bench("usage records, newest 50", "/usage?limit=50")
bench("usage records of the account, newest 50", f"/usage?account={account}&limit=50")
bench("…the next page (cursor)", f"/usage?account={account}&limit=50&before={cursor}")
bench("…of one model, 1000", f"/usage?account={account}&model=asr-1.0&limit=1000")
bench("totals per day, 30 days (all records)", "/usage/summary?group_by=day")
bench("totals per model, the account, 30 days", f"/usage/summary?account={account}&group_by=model")
bench("totals per hour, last 24 h", f"/usage/summary?group_by=hour&since={time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(time.time() - 86400))}")
bench("overview, 24 h", "/overview?hours=24")
bench("overview, 30 days", "/overview?hours=720")
bench("the account (keys, usage by model, policy)", f"/accounts/{account}")
bench("the account's ledger, newest 50", f"/accounts/{account}/ledger?limit=50")
t, body = get(f"/usage.csv?account={account}")
print(f"| CSV export of all records (streamed) | {t * 1000:.0f} ms | {len(body):,} B |")
PY
rss=$(ps -o rss= -p "$pid")
echo "gateway resident memory after the CSV export: $((rss / 1024)) MiB"

if [ -d tests/console/node_modules ] && command -v chromium >/dev/null; then
  GATEWAY="http://127.0.0.1:$port" ADMIN_TOKEN="$token" ACCOUNT="$account" node bench/console-load.mjs
fi
