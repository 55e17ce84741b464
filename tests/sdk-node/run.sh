#!/usr/bin/env bash
# The OpenAI Node SDK, unmodified, against a running gateway (the embedded default, the
# simulator as every upstream): npm ci, a key made with the CLI, then videos.test.mjs.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."
source tests/gateway.sh
(cd "$here" && npm ci --silent --no-audit --no-fund)
key=$("$bin" keys create --name node-sdk --balance 10 --database-url "$db")
start_gateway
export TOLLGATE_BASE_URL="http://127.0.0.1:$port" TOLLGATE_KEY="$key"
node "$here/videos.test.mjs" || { keep_log=1; exit 1; }
