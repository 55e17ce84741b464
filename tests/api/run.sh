#!/usr/bin/env bash
# The OpenAPI document against the running gateway (issue 13, `docs/decisions.md`, "The OpenAPI
# document"): the document the gateway builds (in Rust, from the route table: crates/admin/src/
# openapi/) is valid OpenAPI 3.1 (openapi-spec-validator); then schemathesis sends generated requests to the JSON client
# endpoints (with a client key) and to the admin API (with an admin token) and fails on any 5xx
# and on any answer the document does not allow (status, content type, body schema).
#
# Gateway: the embedded default on a temporary SQLite database (tests/gateway.sh). Extra
# arguments go to schemathesis; MAX_EXAMPLES (default 25) and WORKERS (default 1) tune it.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."
log_filter='status=5|WARN|ERROR'
source tests/gateway.sh
venv_for "$here" "${TOLLGATE_API_VENV:-$target/api-venv}"

key=$("$bin" keys create --name schemathesis --balance 1000000 --database-url "$db" 2>/dev/null)
admin=$("$bin" admin token create --name schemathesis --database-url "$db" 2>/dev/null)
start_gateway
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
# The JSON client endpoints, with a client key (multipart uploads are tested by tests/sdk);
# `/v1/redemptions` answers 404 to codes no batch holds, then 429 once the key has guessed ten.
run --include-path-regex '^/(v1/(embeddings|audio/speech|t2a_v2|video/|videos|models|chat/|responses|redemptions)|v1beta/|api/v3/)' \
  -H "Authorization: Bearer $key" -H "x-vendor-api-key: $key" "$@" || status=1
# Images, fewer examples: each answer is drawn for real (the simulator's PNGs), and its links
# (`response_format: "url"`) are the gateway's own.
run --include-path-regex '^/v1/(images/generations|media/images/)' --max-examples "${IMAGE_EXAMPLES:-10}" \
  -H "Authorization: Bearer $key" "$@" || status=1
# The customer portal's JSON API, signed out: sign-ins and invitations refused (then throttled),
# every session's route 401; the payment webhook (no provider in the embedded default: 404).
run --include-path-regex '^/(portal|webhooks/)' "$@" || status=1
# The admin API, with an admin token — after the client endpoints: it learns names from its own
# answers and switches channels off, disables accounts and revokes keys with them.
run --include-path-regex '^/admin/' -H "Authorization: Bearer $admin" "$@" || status=1
[ "$status" -eq 0 ] || keep_log=1
exit "$status"
