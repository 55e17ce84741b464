"""`openai` SDK → tollgate `/v1/audio/transcriptions`, and raw HTTP → `/v1/speech_to_text`."""

import io
import itertools
import json
import pathlib
import time
from decimal import Decimal

import httpx
import openai
import pytest

from conftest import balance, new_key

SENTENCE = "Hello there. This is a round trip through the gateway."
FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "crates" / "probe" / "tests" / "fixtures"
_names = itertools.count()


def client(base_url: str, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{base_url}/v1", api_key=key, max_retries=0)


def synthesize(c: openai.OpenAI, text: str, fmt: str = "wav") -> bytes:
    return c.audio.speech.create(model="tts-1", voice="alloy", input=text, response_format=fmt).read()


def test_round_trip_speech_to_transcription_returns_the_sentence(base_url):
    name = f"sdk-asr-{next(_names)}"
    key = new_key(name, "1")
    c = client(base_url, key)
    audio = synthesize(c, SENTENCE, "mp3")
    before = balance(name)
    result = c.audio.transcriptions.create(model="whisper-1", file=("speech.mp3", audio))
    assert result.text == SENTENCE
    # Billed by seconds, rounded up, at 0.0001 a second; the simulator makes len/15 + 0.3 s of audio.
    seconds = -(-(len(SENTENCE) / 15 + 0.3) // 1)
    assert before - balance(name) == Decimal(int(seconds)) * Decimal("0.0001")


@pytest.mark.parametrize("fmt", ["json", "verbose_json", "srt", "vtt", "text"])
def test_every_response_format(base_url, key, fmt):
    c = client(base_url, key)
    audio = synthesize(c, SENTENCE)
    result = c.audio.transcriptions.create(model="whisper-1", file=("a.wav", audio), response_format=fmt)
    if fmt == "json":
        assert result.text == SENTENCE
    elif fmt == "verbose_json":
        assert result.text == SENTENCE
        assert result.language == "unknown" or isinstance(result.language, str)
        assert len(result.segments) == 2
        assert result.segments[0].start < result.segments[0].end <= result.segments[1].start
        assert result.model_extra.get("n_speakers") == 1
        assert result.segments[0].model_extra.get("speaker") == "S1"
    elif fmt == "srt":
        assert result.startswith("1\n00:00:00,")
        assert "-->" in result and "\n\n2\n" in result
    elif fmt == "vtt":
        assert result.startswith("WEBVTT\n\n")
    else:
        assert result.strip() == SENTENCE


def test_word_timestamps_and_language(base_url, key):
    c = client(base_url, key)
    audio = synthesize(c, "Hello there world.")
    result = c.audio.transcriptions.create(
        model="whisper-1",
        file=("a.wav", audio),
        response_format="verbose_json",
        timestamp_granularities=["word"],
        language="en",
    )
    assert [w.word for w in result.words] == ["Hello", "there", "world"]
    assert all(w.start < w.end for w in result.words)
    assert result.language == "english"


def test_stream_events_arrive_one_by_one(base_url, key):
    c = client(base_url, key)
    text = " ".join(f"Sentence number {i} is here." for i in range(12))
    audio = synthesize(c, text)
    times, events = [], []
    started = time.monotonic()
    for event in c.audio.transcriptions.create(model="whisper-1", file=("a.wav", audio), stream=True):
        times.append(time.monotonic() - started)
        events.append(event)
    assert [e.type for e in events[:-1]] == ["transcript.text.delta"] * (len(events) - 1)
    done = events[-1]
    assert done.type == "transcript.text.done"
    assert done.text == text
    usage = done.usage.model_dump() if hasattr(done.usage, "model_dump") else done.usage
    assert usage["type"] == "duration" and isinstance(usage["seconds"], int)
    # The done event says what the stream was charged (docs/api.md §8.1).
    assert Decimal(done.model_extra["tollgate"]["charge"]) > 0
    # Twelve deltas 20 ms apart: the first came well before the last.
    assert times[-1] - times[0] > 0.15, times


def test_every_container_is_accepted(base_url, key):
    c = client(base_url, key)
    for name, truth in [("tone.wav", 1.7), ("tone.aiff", 1.5), ("tone.flac", 2.5), ("tone_faststart.m4a", 2.5),
                        ("tone_vbr_xing.mp3", 2.3), ("tone.aac", 2.2), ("tone.opus", 2.7), ("tone.ogg", 2.1)]:
        result = c.audio.transcriptions.create(model="whisper-1", file=(name, (FIXTURES / name).read_bytes()), response_format="verbose_json")
        assert abs(result.duration - truth) < 0.1, (name, result.duration)


def test_bad_uploads_name_the_file(base_url, key):
    c = client(base_url, key)
    with pytest.raises(openai.BadRequestError) as caught:
        c.audio.transcriptions.create(model="whisper-1", file=("notes.mp3", b"just some text, not audio\n" * 40))
    assert caught.value.param == "file"
    # Unsupported, answered with a 4xx the SDK does not retry: one round trip, no back-off.
    def translations_seen():
        text = httpx.get(f"{base_url}/metrics").text
        return sum(int(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith('tollgate_requests_total{endpoint="translations"'))
    before = translations_seen()
    with pytest.raises(openai.NotFoundError) as caught:
        c.audio.translations.create(model="whisper-1", file=("a.wav", b"RIFF"))
    assert caught.value.code == "unsupported_endpoint"
    assert translations_seen() - before == 1, "the SDK retried"


def stt(base_url, key, fields, audio, headers=None, stream=False):
    files = {"file": ("a.wav", audio, "audio/wav")}
    h = {"Authorization": f"Bearer {key}"} | (headers or {})
    return httpx.post(f"{base_url}/v1/speech_to_text", data=fields, files=files, headers=h, timeout=30)


@pytest.mark.parametrize("fmt", ["json", "verbose_json", "srt", "vtt"])
def test_speech_to_text_every_mode(base_url, key, fmt):
    audio = synthesize(client(base_url, key), SENTENCE)
    r = stt(base_url, key, {"model": "asr-1.0", "response_format": fmt, "timestamp_level": "word"}, audio, {"language": "en"})
    assert r.status_code == 200, r.text
    if fmt == "json":
        assert r.json()["text"] == SENTENCE and r.json()["duration"] > 0
    elif fmt == "verbose_json":
        body = r.json()
        assert body["n_speakers"] == 1 and body["segments"][0]["speaker"] == "0"
    elif fmt == "srt":
        assert r.text.startswith("1\n00:00:00,")
    else:
        assert r.text.startswith("WEBVTT")


def test_speech_to_text_stream(base_url, key):
    audio = synthesize(client(base_url, key), SENTENCE)
    r = stt(base_url, key, {"model": "asr-1.0", "stream": "true"}, audio)
    frames = [json.loads(line[6:]) for line in r.text.split("\n") if line.startswith("data: ")]
    assert "".join(f["delta"] for f in frames) == SENTENCE
    assert frames[-1]["finish"] is True and frames[-1]["duration"] > 0
