#!/usr/bin/env bash
# What one charge takes in the database: a ledger row and a usage record, each with its indexes
# (docs/benchmarks.md). Usage: bash bench/rowsize.sh BIN PORT N — BIN a release tollgate, N requests.
set -euo pipefail
BIN=$1; PORT=$2; N=$3
D=$(mktemp -d); DB="sqlite://$D/t.db"
KEY=$($BIN keys create --name size --balance 100 --database-url $DB 2>/dev/null)
$BIN serve --database-url $DB --listen 127.0.0.1:$PORT >$D/log 2>&1 &
PID=$!
for i in $(seq 1 50); do curl -sf http://127.0.0.1:$PORT/healthz >/dev/null && break; sleep 0.2; done
python3 - "$PORT" "$KEY" "$N" <<'PY'
import http.client, json, sys
port, key, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
c = http.client.HTTPConnection("127.0.0.1", port)
for i in range(n):
    c.request("POST", "/v1/embeddings", json.dumps({"model": "text-embedding-3-small", "input": f"request number {i}"}),
              {"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    r = c.getresponse(); r.read(); assert r.status == 200, r.status
PY
kill $PID; wait $PID 2>/dev/null || true
sqlite3 $D/t.db "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
sqlite3 $D/t.db "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY name;" > $D/sizes
LROWS=$(sqlite3 $D/t.db "SELECT COUNT(*) FROM ledger"); UROWS=$(sqlite3 $D/t.db "SELECT COUNT(*) FROM usage_log")
python3 - $D/sizes $LROWS $UROWS <<'PY'
import sys
sizes = dict(l.strip().split("|") for l in open(sys.argv[1]) if "|" in l)
lrows, urows = int(sys.argv[2]), int(sys.argv[3])
ledger = sum(int(v) for k, v in sizes.items() if k == "ledger" or k.startswith("ledger_") or k.startswith("sqlite_autoindex_ledger"))
usage = sum(int(v) for k, v in sizes.items() if k == "usage_log" or k.startswith("usage_log_"))
print(f"ledger rows {lrows}: {ledger/lrows:.0f} bytes/row (table+indexes); usage records {urows}: {usage/urows:.0f} bytes/record")
for k in sorted(sizes):
    if k.startswith(("ledger", "usage_log", "sqlite_autoindex_ledger")): print("  ", k, sizes[k])
PY
rm -rf $D
