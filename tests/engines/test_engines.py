"""Real engines end to end (issue 14): Piper speaks ten sentences through `/v1/audio/speech`,
faster-whisper recognises them through `/v1/audio/transcriptions` and `/v1/speech_to_text`,
with tollgate in front of both — driven by OpenAI's own SDK where it has the endpoint.

Required: a word error rate under 20 % over the ten sentences on each recognition endpoint, and
billing exact to the nano-unit: characters at the speech price, and seconds rounded up at the
recognition price, for each of the thirty requests.
"""

import io
import json
import math
import os
import re
import subprocess
import wave
from decimal import Decimal

import httpx
import openai
import pytest

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Please call Stella and ask her to bring these things from the store.",
    "A gateway measures every request and charges each key exactly.",
    "The weather today is sunny with a light breeze from the west.",
    "Open the window and let the fresh air into the room.",
    "Our meeting starts early in the morning on Monday.",
    "Reading books is a wonderful way to learn new ideas.",
    "The train to the city leaves from the second platform.",
    "Music helps many people relax after a long day at work.",
    "Thank you for listening to this short test of speech recognition.",
]
# docs/examples/local-engines.toml
PER_CHARACTER = Decimal("15") / 1_000_000
PER_SECOND = Decimal("0.0001")
OPENAI_PCM_RATE = 24_000


def cli(*args: str) -> str:
    out = subprocess.run(
        [os.environ["TOLLGATE_BIN"], *args, "--config", os.environ["TOLLGATE_CONFIG"],
         "--database-url", os.environ["TOLLGATE_DATABASE_URL"]],
        check=True, capture_output=True, text=True)
    return out.stdout


def words(text: str) -> list[str]:
    return re.sub(r"[^a-z' ]", " ", text.lower()).split()


def errors(reference: str, hypothesis: str) -> int:
    """Word-level edit distance."""
    ref, hyp = words(reference), words(hypothesis)
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[-1]


def wer(pairs: list[tuple[str, str]]) -> float:
    return sum(errors(r, h) for r, h in pairs) / sum(len(words(r)) for r, _ in pairs)


def seconds_of(wav_bytes: bytes) -> int:
    with wave.open(io.BytesIO(wav_bytes)) as w:
        return math.ceil(w.getnframes() / w.getframerate())


def as_wav(pcm: bytes) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(OPENAI_PCM_RATE)
        w.writeframes(pcm)
    return out.getvalue()


def test_ten_sentences_spoken_recognised_and_billed_exactly():
    base = os.environ["TOLLGATE_BASE_URL"]
    key = cli("keys", "create", "--name", "engines-round-trip", "--balance", "10").strip()
    client = openai.OpenAI(base_url=f"{base}/v1", api_key=key, max_retries=0, timeout=300)
    raw = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=300)

    spoken, compat, vendor = [], [], []
    billed_seconds = 0
    for i, sentence in enumerate(SENTENCES):
        # Speak: the whole wav file, or pcm streamed as Piper makes it.
        if i % 2 == 0:
            audio = client.audio.speech.create(model="tts-1", voice="alloy", input=sentence,
                                               response_format="wav").content
        else:
            with client.audio.speech.with_streaming_response.create(
                    model="tts-1", voice="alloy", input=sentence, response_format="pcm") as r:
                assert r.headers["x-audio-sample-rate"] == str(OPENAI_PCM_RATE)
                pieces = list(r.iter_bytes())
            assert len(pieces) >= 1
            audio = as_wav(b"".join(pieces))
        seconds = seconds_of(audio)
        assert 1 <= seconds <= 8, (sentence, seconds)
        spoken.append(audio)

        # Recognise with OpenAI's SDK: verbose_json, json and a stream in turn.
        kind = ("verbose_json", "json", "stream")[i % 3]
        if kind == "stream":
            text, usage = "", None
            for event in client.audio.transcriptions.create(
                    model="whisper-1", file=("speech.wav", audio), stream=True):
                if event.type == "transcript.text.delta":
                    text += event.delta
                elif event.type == "transcript.text.done":
                    usage = event.usage.seconds
                    assert event.text.strip() == text.strip()
        else:
            result = client.audio.transcriptions.create(
                model="whisper-1", file=("speech.wav", audio), response_format=kind)
            text, usage = result.text, result.usage.seconds
        assert usage == seconds, (kind, usage, seconds)
        compat.append((sentence, text))

        # And through the vendor's own format.
        r = raw.post("/v1/speech_to_text", data={"model": "whisper-1"},
                     files={"file": ("speech.wav", audio, "audio/wav")})
        assert r.status_code == 200, r.text
        body = r.json()
        assert math.ceil(body["duration"]) == seconds, body
        vendor.append((sentence, body["text"]))
        billed_seconds += 2 * seconds

    print("\n".join(f"{r!r} -> {h!r}" for r, h in compat + vendor))
    print(f"WER: transcriptions {wer(compat):.1%}, speech_to_text {wer(vendor):.1%}")
    assert wer(compat) < 0.20, wer(compat)
    assert wer(vendor) < 0.20, wer(vendor)

    shown = json.loads(cli("keys", "show", "engines-round-trip", "--json"))
    characters = sum(len(s) for s in SENTENCES)
    expected = PER_CHARACTER * characters + PER_SECOND * billed_seconds
    assert Decimal("10") - Decimal(shown["balance"]) == expected, (shown, expected)
    assert Decimal(shown["held"]) == 0


def test_engine_refusals_reach_the_client_and_charge_nothing():
    base = os.environ["TOLLGATE_BASE_URL"]
    key = cli("keys", "create", "--name", "engines-refusal", "--balance", "1").strip()
    client = openai.OpenAI(base_url=f"{base}/v1", api_key=key, max_retries=0)
    # The Piper server makes only wav and pcm: its 400 names the field, and nothing is charged.
    with pytest.raises(openai.BadRequestError) as refused:
        client.audio.speech.create(model="tts-1", voice="alloy", input="Hello.",
                                   response_format="flac")
    assert "response_format" in str(refused.value)
    shown = json.loads(cli("keys", "show", "engines-refusal", "--json"))
    assert Decimal(shown["balance"]) == Decimal("1")
    assert Decimal(shown["held"]) == 0
