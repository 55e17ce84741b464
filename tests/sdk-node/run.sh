#!/usr/bin/env bash
# The OpenAI Node SDK and @google/genai, unmodified, against a running gateway (the embedded
# default, the simulator as every upstream, a TLS listener for the OpenAI SDK's wss://): npm ci,
# a key made with the CLI, then videos.test.mjs, live.test.mjs, images.test.mjs and
# native_images.test.mjs.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."
source tests/gateway.sh
(cd "$here" && npm ci --silent --no-audit --no-fund)
key=$("$bin" keys create --name node-sdk --balance 10 --database-url "$db")
"$bin" config default >"$work/node.toml"
tls_listener "$work/node.toml"
gateway_args=(--config "$work/node.toml")
start_gateway
export TOLLGATE_BASE_URL="http://127.0.0.1:$port" TOLLGATE_KEY="$key"
export TOLLGATE_BIN="$bin" TOLLGATE_DATABASE_URL="$db" NODE_EXTRA_CA_CERTS="$TOLLGATE_TLS_CA"
node "$here/videos.test.mjs" || { keep_log=1; exit 1; }
node "$here/live.test.mjs" || { keep_log=1; exit 1; }
node "$here/images.test.mjs" || { keep_log=1; exit 1; }
node "$here/native_images.test.mjs" || { keep_log=1; exit 1; }
