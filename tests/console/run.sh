#!/usr/bin/env bash
# The web console in a real browser: Debian's Chromium (installed when missing) driven by
# playwright-core from npm. Starts the gateway (tests/gateway.sh), makes an admin token with the
# CLI, runs console.test.mjs. Screenshots land in $SHOTS (default target/console-shots): look
# at them.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."
if ! command -v chromium >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
(cd "$here" && npm ci --silent --no-audit --no-fund)
log_filter='WARN|ERROR'
source tests/gateway.sh

token=$("$bin" admin token create --name console-test --database-url "$db" 2>/dev/null)
# The embedded default, with alert rules judged every second and a failed webhook retried after
# one (the alerts step).
"$bin" config default >"$work/console.toml"
printf '\n[alerting]\nevaluate_seconds = 1\nretry_seconds = [1, 1]\n' >>"$work/console.toml"
# The test's webhook receiver listens on loopback: listed, as an operator lists an internal one.
sed -i 's/^trusted_hosts = \[\]$/trusted_hosts = ["127.0.0.1"]/' "$work/console.toml"
# The ledger's checkpoints signed (the portal's statement is verified offline with its public
# key), and top-ups through the simulated Stripe this process starts (the payments step).
"$bin" ledger keygen --out "$work/ledger.key" >"$work/ledger.pub" 2>&1
ledger_key=$(sed -n 's/^public key  *//p' "$work/ledger.pub")
printf '\n[ledger]\nsigning_key_file = "%s"\ncheckpoint_every_seconds = 1\n' "$work/ledger.key" >>"$work/console.toml"
printf '\n[payments.stripe]\nbase_url = "sim"\n' >>"$work/console.toml"
export STRIPE_SECRET_KEY=sk_test_console STRIPE_WEBHOOK_SECRET=whsec_tollgate_simulator_0123456789abcdef
gateway_args=(--config "$work/console.toml")
start_gateway
sim=$(grep -oE 'simulator listening addr=[0-9.:]+' "$work/gateway.log" | head -n 1 | sed 's/.*addr=//')
export SIM="http://$sim" TOLLGATE_BIN="$bin" LEDGER_KEY="$ledger_key" DATABASE_URL="$db"
export GATEWAY="http://127.0.0.1:$port" ADMIN_TOKEN="$token" CHROMIUM=$(command -v chromium)
export SHOTS=${SHOTS:-$target/console-shots}
node "$here/console.test.mjs" || { keep_log=1; exit 1; }
