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
# A TLS listener with a certificate made here: google-genai's Live client connects with wss://
# whenever a key is set (test_live.py), and trusts the certificate through SSL_CERT_FILE.
tls_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$venv/bin/python" - "$work" <<'PY'
import datetime, ipaddress, sys
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

key = ec.generate_private_key(ec.SECP256R1())
name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
now = datetime.datetime.now(datetime.timezone.utc)
cert = (
    x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
    .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
    .not_valid_after(now + datetime.timedelta(days=1))
    .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
    .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
    .sign(key, hashes.SHA256())
)
open(f"{sys.argv[1]}/tls.crt", "wb").write(cert.public_bytes(serialization.Encoding.PEM))
open(f"{sys.argv[1]}/tls.key", "wb").write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
PY
printf '\n[tls]\nlisten = "127.0.0.1:%s"\ncert_file = "%s/tls.crt"\nkey_file = "%s/tls.key"\n' "$tls_port" "$work" "$work" >>"$work/sdk.toml"
gateway_args=(--config "$work/sdk.toml")
export TOLLGATE_SDK_ALERT_SECRET="whsec_$(python3 -c 'import base64, os; print(base64.b64encode(os.urandom(32)).decode())')"
start_gateway

export TOLLGATE_BASE_URL="http://127.0.0.1:$port"
export TOLLGATE_TLS_URL="https://127.0.0.1:$tls_port"
export TOLLGATE_TLS_CA="$work/tls.crt"
export TOLLGATE_KEY="$key"
export TOLLGATE_BIN="$bin"
export TOLLGATE_DATABASE_URL="$db"
status=0
"$venv/bin/pytest" -q -p no:cacheprovider "$here" "$@" || status=$?
[ "$status" = 0 ] || keep_log=1
exit "$status"
