#!/usr/bin/env bash
# The OpenAPI document against the running gateway (issue 13, `docs/decisions.md`, "The OpenAPI
# document"): the document is validated as OpenAPI 3.1 (openapi-spec-validator), then
# schemathesis sends generated requests to the admin API (with an admin token) and to the
# JSON client endpoints (with a client key) and fails on any 5xx and on any answer the document
# does not allow (status, content type, body schema).
#
# It makes (or reuses) a virtual environment with tests/api/requirements.txt, builds the
# `tollgate` binary, starts it on a free port with a temporary SQLite database and the embedded
# default configuration (the in-process simulator as every upstream). Extra arguments go to
# schemathesis (e.g. --max-examples 20).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"

target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
venv=${TOLLGATE_API_VENV:-$target/api-venv}
if [ ! -x "$venv/bin/schemathesis" ] || ! cmp -s "$here/requirements.txt" "$venv/requirements.txt"; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
  cp "$here/requirements.txt" "$venv/requirements.txt"
fi

cargo build --quiet -p tollgate
bin="$target/debug/tollgate"

work=$(mktemp -d)
db="sqlite://$work/tollgate.db"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
key=$("$bin" keys create --name schemathesis --balance 1000000 --database-url "$db" 2>/dev/null)
admin=$("$bin" admin token create --name schemathesis --database-url "$db" 2>/dev/null)

"$bin" serve --listen "127.0.0.1:$port" --database-url "$db" >"$work/gateway.log" 2>&1 &
pid=$!
cleanup() {
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  if [ "${keep_log:-0}" = 1 ]; then
    echo "--- gateway log: answers of 5xx, warnings and errors ---"
    grep -E 'status=5|WARN|ERROR' "$work/gateway.log" | tail -n 100 || true
  fi
  if [ -n "${SAVE_LOG:-}" ]; then cp "$work/gateway.log" "$SAVE_LOG"; fi
  rm -rf "$work"
}
trap cleanup EXIT
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done

curl -fsS "http://127.0.0.1:$port/openapi.json" -o "$work/openapi.json"
"$venv/bin/openapi-spec-validator" "$work/openapi.json"

checks=not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance
run() {
  "$venv/bin/schemathesis" run "http://127.0.0.1:$port/openapi.json" \
    --checks "$checks" --phases examples,coverage,fuzzing --workers "${WORKERS:-1}" \
    --max-examples "${MAX_EXAMPLES:-25}" --request-timeout 30 --suppress-health-check all \
    --warnings off "$@"
}
status=0
# The JSON client endpoints, with a client key (multipart uploads are tested by tests/sdk).
run --include-path-regex '^/(v1/(embeddings|audio/speech|t2a_v2|video/|models|chat/|responses)|v1beta/|api/v3/)' \
  -H "Authorization: Bearer $key" -H "x-vendor-api-key: $key" "$@" || status=1
# The admin API, with an admin token — after the client endpoints: it learns names from its own
# answers and switches channels off, disables accounts and revokes keys with them.
run --include-path-regex '^/admin/' -H "Authorization: Bearer $admin" "$@" || status=1
[ "$status" -eq 0 ] || keep_log=1
exit "$status"
