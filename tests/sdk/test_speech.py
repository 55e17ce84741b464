"""`openai` SDK → tollgate `/v1/audio/speech`, and raw HTTP → `/v1/t2a_v2` (speech synthesis)."""

import base64
import io
import itertools
import json
import time
import wave
from decimal import Decimal

import httpx
import openai
import pytest

from conftest import balance, new_key

TEXT = "The quick brown fox jumps over the lazy dog."
_names = itertools.count()


def client(base_url: str, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{base_url}/v1", api_key=key, max_retries=0)


def is_mp3(data: bytes) -> bool:
    return data[:3] == b"ID3" or (data[0] == 0xFF and data[1] & 0xE0 == 0xE0)


@pytest.mark.parametrize("fmt", ["mp3", "wav", "flac", "pcm", "opus", "aac"])
def test_each_format_is_real_audio(base_url, key, fmt):
    response = client(base_url, key).audio.speech.create(
        model="tts-1", voice="alloy", input=TEXT, response_format=fmt
    )
    data = response.read()
    content_type = response.response.headers["content-type"]
    if fmt in ("mp3", "opus", "aac"):
        assert content_type == "audio/mpeg"
        assert is_mp3(data)
    elif fmt == "wav":
        assert content_type == "audio/wav"
        assert data[:4] == b"RIFF" and data[8:12] == b"WAVE"
        with wave.open(io.BytesIO(data)) as w:
            seconds = w.getnframes() / w.getframerate()
            assert w.getnchannels() == 1 and w.getsampwidth() == 2
        # The simulator speaks about 15 characters a second plus 0.3 s.
        assert abs(seconds - (len(TEXT) / 15 + 0.3)) < 0.1
    elif fmt == "flac":
        assert content_type == "audio/flac"
        assert data[:4] == b"fLaC"
    else:
        assert content_type == "audio/pcm"
        rate = int(response.response.headers["x-audio-sample-rate"])
        assert rate == 24000
        assert len(data) == round((len(TEXT) / 15 + 0.3) * rate) * 2


def test_aliases_and_a_stock_voice_are_billed_under_the_public_model(base_url):
    name = f"sdk-speech-{next(_names)}"
    key = new_key(name, "1")
    c = client(base_url, key)
    assert is_mp3(c.audio.speech.create(model="tts-1", voice="shimmer", input="hi").read())
    assert is_mp3(c.audio.speech.create(model="tts-1-hd", voice="echo", input="hi").read())
    assert is_mp3(c.audio.speech.create(model="gpt-4o-mini-tts", voice="coral", input="hi", instructions="cheerful").read())
    # tts-1 and the mini alias → speech-2.8-turbo at 60/M; tts-1-hd → speech-2.8-hd at 100/M.
    assert balance(name) == Decimal(1) - Decimal(2 * 2 * 60 + 2 * 100) / Decimal(1_000_000)


def test_mixed_chinese_and_english_counts_cjk_twice(base_url):
    name = f"sdk-cjk-{next(_names)}"
    key = new_key(name, "1")
    client(base_url, key).audio.speech.create(model="tts-1-hd", voice="alloy", input="你好, world").read()
    # 2 + 2 + 1 + 1 + 5 = 11 characters at 100 per million.
    assert balance(name) == Decimal(1) - Decimal(11 * 100) / Decimal(1_000_000)


def test_streaming_response_delivers_bytes_before_the_synthesis_ends(base_url, key):
    long_text = TEXT * 8
    c = client(base_url, key)
    started = time.monotonic()
    first = None
    data = b""
    with c.audio.speech.with_streaming_response.create(
        model="tts-1", voice="alloy", input=long_text, response_format="pcm"
    ) as response:
        for chunk in response.iter_bytes():
            if first is None:
                first = time.monotonic() - started
            data += chunk
    ended = time.monotonic() - started
    # The simulator sends its frames 20 ms apart: many frames, so the first arrives well before the end.
    assert ended - first > 0.2, (first, ended)
    assert len(data) == round((len(long_text) / 15 + 0.3) * 24000) * 2


def test_sse_stream_format(base_url, key):
    with client(base_url, key).audio.speech.with_streaming_response.create(
        model="tts-1", voice="alloy", input="你好, world", stream_format="sse"
    ) as response:
        assert response.headers["content-type"] == "text/event-stream"
        events = [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: ")]
    *deltas, done = events
    assert all(e["type"] == "speech.audio.delta" for e in deltas)
    assert done["type"] == "speech.audio.done"
    assert done["usage"]["input_tokens"] == 11
    # The final event says what the stream was charged (docs/api.md §8.1), as its charge record does.
    request_id = response.headers["x-request-id"]
    record = httpx.get(f"{base_url}/v1/charges/{request_id}", headers={"Authorization": f"Bearer {key}"}).json()
    assert Decimal(done["tollgate"]["charge"]) == Decimal(record["charged"]) > 0
    audio = b"".join(base64.b64decode(e["audio"]) for e in deltas)
    assert is_mp3(audio)


def test_limits_are_refused_naming_the_field(base_url, key):
    c = client(base_url, key)
    cases = [
        (dict(input="a" * 10_001), "input"),
        (dict(input="a" * 2_001, response_format="wav"), "input"),
        (dict(input="hi", speed=0.4), "speed"),
        (dict(input="hi", speed=2.1), "speed"),
        (dict(input="hi", model="tts-9"), "model"),
    ]
    for extra, field in cases:
        args = dict(model="tts-1", voice="alloy") | extra
        with pytest.raises(openai.BadRequestError) as caught:
            c.audio.speech.create(**args)
        assert caught.value.param == field


def t2a(base_url: str, key: str, body: dict) -> httpx.Response:
    return httpx.post(f"{base_url}/v1/t2a_v2", json=body, headers={"Authorization": f"Bearer {key}"}, timeout=30)


T2A_BODY = {
    "model": "speech-2.8-hd",
    "text": TEXT,
    "voice_setting": {"voice_id": "English_Graceful_Lady", "speed": 1.0},
    "audio_setting": {"format": "wav", "sample_rate": 16000},
}


def test_t2a_non_stream_returns_hex_audio_and_usage(base_url, key):
    r = t2a(base_url, key, T2A_BODY)
    assert r.status_code == 200
    body = r.json()
    assert body["base_resp"]["status_code"] == 0
    assert body["extra_info"]["usage_characters"] == len(TEXT)
    audio = bytes.fromhex(body["data"]["audio"])
    with wave.open(io.BytesIO(audio)) as w:
        assert w.getframerate() == 16000
        assert abs(w.getnframes() / 16000 - (len(TEXT) / 15 + 0.3)) < 0.1


def test_t2a_stream_frames_end_with_status_2_and_usage(base_url, key):
    body = T2A_BODY | {"stream": True, "audio_setting": {"format": "mp3"}, "stream_options": {"exclude_aggregated_audio": True}}
    with httpx.stream("POST", f"{base_url}/v1/t2a_v2", json=body, headers={"Authorization": f"Bearer {key}"}, timeout=30) as r:
        assert r.headers["content-type"] == "text/event-stream"
        frames = [json.loads(line[6:]) for line in r.iter_lines() if line.startswith("data: ")]
    assert len(frames) > 2
    assert all(f["data"]["status"] == 1 for f in frames[:-1])
    assert frames[-1]["data"]["status"] == 2
    assert frames[-1]["extra_info"]["usage_characters"] == len(TEXT)
    audio = b"".join(bytes.fromhex(f["data"]["audio"]) for f in frames)
    assert is_mp3(audio)


def test_t2a_errors_are_base_resp(base_url, key):
    # Like the vendor: HTTP 200 and a non-zero base_resp, so that raise_for_status() lets a
    # vendor-SDK-style client read the code.
    r = t2a(base_url, "tg-wrong", T2A_BODY)
    r.raise_for_status()
    assert r.status_code == 200 and r.json()["base_resp"]["status_code"] == 1004
    r = t2a(base_url, key, T2A_BODY | {"output_format": "url"})
    assert r.status_code == 200 and r.json()["base_resp"]["status_code"] == 2013
    assert "output_format" in r.json()["base_resp"]["status_msg"]
