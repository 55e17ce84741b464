#!/usr/bin/env bash
# Measures the gateway's peak memory while it accepts a large upload for recognition.
#
# Builds the release binary, runs the simulated vendors as their own process (so that what the
# simulator buffers is not counted), starts the gateway with its stt channel pointed at it, sends
# a ~49 MB WAV (255 s of 48 kHz stereo) to /v1/audio/transcriptions with curl, and reads the
# gateway's VmHWM (peak resident set) from /proc before and after. Prints both and the growth.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
start_sim
gw_port=$(free_port)
write_config
db="sqlite://$work/t.db"
key=$("$bin" keys create --name mem --balance 100 --database-url "$db")
"$bin" serve --config "$work/tollgate.toml" --listen "127.0.0.1:$gw_port" --database-url "$db" 2>"$work/gw.log" &
gw=$!
wait_healthy "$gw_port"

python3 - "$work/big.wav" <<'PY'
import struct, sys, random
rate, channels, seconds = 48000, 2, 255
n = rate * channels * seconds * 2
with open(sys.argv[1], "wb") as f:
    f.write(b"RIFF" + struct.pack("<I", 36 + n) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 1, channels, rate, rate * channels * 2, channels * 2, 16))
    f.write(b"data" + struct.pack("<I", n))
    block = bytes(random.getrandbits(8) for _ in range(1 << 16))
    for _ in range(n // len(block)):
        f.write(block)
    f.write(block[: n % len(block)])
PY
size=$(stat -c %s "$work/big.wav")
hwm() { awk '/VmHWM/ {print $2}' "/proc/$gw/status"; }
# Warm up: one small request so that lazily initialised parts are counted before the upload.
curl -s -o /dev/null "http://127.0.0.1:$gw_port/v1/embeddings" -H "Authorization: Bearer $key" \
  -H 'Content-Type: application/json' -d '{"model":"text-embedding-3-small","input":"warm"}'
before=$(hwm)
status=$(curl -s -o "$work/out.json" -w '%{http_code}' "http://127.0.0.1:$gw_port/v1/audio/transcriptions" \
  -H "Authorization: Bearer $key" -F model=whisper-1 -F "file=@$work/big.wav;type=audio/wav")
after=$(hwm)
echo "upload: $size bytes, HTTP $status, $(head -c 120 "$work/out.json")"
echo "gateway peak RSS (VmHWM): before ${before} KiB, after ${after} KiB, growth $((after - before)) KiB"
