#!/usr/bin/env bash
# The real-client suite: drives a running gateway with the vendors' own Python SDKs.
#
# It makes (or reuses) a virtual environment with tests/sdk/requirements.txt, builds the
# `tollgate` binary, starts it on a free port with a temporary SQLite database and the embedded
# default configuration (the in-process simulator as every upstream), creates a key with the CLI,
# runs pytest, and stops the gateway. Extra arguments go to pytest.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."
source tests/gateway.sh
venv_for "$here" "${TOLLGATE_SDK_VENV:-$target/sdk-venv}"

key=$("$bin" keys create --name sdk --balance 10 --database-url "$db")
# The embedded default, with alert rules judged every second (test_alerts.py) and the signing
# secret they name.
"$bin" config default >"$work/sdk.toml"
printf '\n[alerting]\nevaluate_seconds = 1\nretry_seconds = [1, 1]\n' >>"$work/sdk.toml"
# The test's webhook receiver listens on loopback: listed, as an operator lists an internal one.
sed -i 's/^trusted_hosts = \[\]$/trusted_hosts = ["127.0.0.1"]/' "$work/sdk.toml"
# A TLS listener: google-genai's Live client connects with wss:// whenever a key is set
# (test_live.py).
tls_listener "$work/sdk.toml"
gateway_args=(--config "$work/sdk.toml")
export TOLLGATE_SDK_ALERT_SECRET="whsec_$(python3 -c 'import base64, os; print(base64.b64encode(os.urandom(32)).decode())')"
start_gateway

export TOLLGATE_BASE_URL="http://127.0.0.1:$port"
export TOLLGATE_KEY="$key"
export TOLLGATE_BIN="$bin"
export TOLLGATE_DATABASE_URL="$db"
status=0
"$venv/bin/pytest" -q -p no:cacheprovider "$here" "$@" || status=$?
[ "$status" = 0 ] || keep_log=1
exit "$status"
