"""`openai` SDK's Realtime client → tollgate `/v1/realtime` (a WebSocket), unmodified.

The client speaks a real voice (the gateway's own speech endpoint, PCM16 at 24 kHz), decodes the
voice it gets back, and the account is charged each response's claim at the embedded default's
`gpt-realtime` prices, to the nano-unit (docs/api.md §2.11).
"""

import base64
import itertools
import json
import time
from decimal import Decimal

import openai
import pytest

from conftest import balance, cli, new_key

_names = itertools.count()

# The embedded default's gpt-realtime prices, per million tokens.
PRICES = {
    "text_in": Decimal("4"),
    "cached_text_in": Decimal("0.40"),
    "audio_in": Decimal("32"),
    "cached_audio_in": Decimal("0.40"),
    "text_out": Decimal("16"),
    "audio_out": Decimal("64"),
}


def client(base_url: str, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{base_url}/v1", api_key=key, max_retries=0)


def price(usage) -> Decimal:
    """What a `response.done` usage costs, class by class."""
    i = usage.input_token_details
    cached = i.cached_tokens_details
    o = usage.output_token_details
    tokens = {
        "text_in": i.text_tokens - cached.text_tokens,
        "cached_text_in": cached.text_tokens,
        "audio_in": i.audio_tokens - cached.audio_tokens,
        "cached_audio_in": cached.audio_tokens,
        "text_out": o.text_tokens,
        "audio_out": o.audio_tokens,
    }
    total = sum(Decimal(n) * PRICES[c] for c, n in tokens.items()) / Decimal(1_000_000)
    return total.quantize(Decimal("0.000000001"))


def spoken(base_url: str, key: str, text: str) -> bytes:
    """A real voice saying `text`: raw PCM16 at 24 kHz, the session's input format."""
    response = client(base_url, key).audio.speech.create(
        model="tts-1", voice="alloy", input=text, response_format="pcm"
    )
    return response.read()


def test_a_spoken_turn_is_answered_with_audio_and_billed_per_response(base_url):
    name = f"sdk-realtime-{next(_names)}"
    key = new_key(name, "5")
    voice = spoken(base_url, key, "What is the weather like on the coast today?")
    assert len(voice) > 48_000
    after_speech = balance(name)
    claims = []
    audio = bytearray()
    with client(base_url, key).realtime.connect(model="gpt-realtime") as connection:
        created = connection.recv()
        assert created.type == "session.created"
        assert created.session.model == "gpt-realtime"
        connection.session.update(
            session={"type": "realtime", "instructions": "Answer in one sentence."}
        )
        for _ in range(2):
            for at in range(0, len(voice), 9_600):
                connection.input_audio_buffer.append(
                    audio=base64.b64encode(voice[at : at + 9_600]).decode()
                )
            connection.input_audio_buffer.commit()
            connection.response.create()
            for event in connection:
                if event.type == "response.output_audio.delta":
                    audio += base64.b64decode(event.delta)
                elif event.type == "error":
                    pytest.fail(f"error event: {event.error}")
                elif event.type == "response.done":
                    claims.append(price(event.response.usage))
                    break
    # Seconds of PCM16 came back, whole samples.
    assert len(audio) > 2 * 48_000 and len(audio) % 2 == 0
    # The session closes as the socket does; its hold is then gone.
    deadline = time.monotonic() + 10
    while Decimal(json.loads(cli("keys", "show", name, "--json"))["held"]) != 0:
        assert time.monotonic() < deadline, "the session's hold stayed"
        time.sleep(0.05)
    # Each response one charge, at its claim; nothing else taken.
    rows = json.loads(cli("keys", "ledger", name, "--json"))["rows"]
    charges = [Decimal(r["amount"]) for r in rows if r["kind"] == "charge" and r["model"] == "gpt-realtime"]
    assert sorted(-c for c in charges) == sorted(claims)
    assert balance(name) == after_speech - sum(claims)


def test_a_wrong_key_is_refused_before_the_upgrade(base_url):
    with pytest.raises(Exception) as refused:
        with client(base_url, "tg-not-a-key").realtime.connect(model="gpt-realtime") as connection:
            connection.recv()
    assert "401" in str(refused.value)
