"""`google-genai`'s Live client → tollgate's Gemini Live socket (docs/api.md §2.12), unmodified.

With a key set, google-genai connects with `wss://` to `{base_url}/ws/…BidiGenerateContent`, so
the client is pointed at the gateway's TLS listener (run.sh makes its certificate; the client
trusts it through `SSL_CERT_FILE`, as an operator's private CA would be trusted). It speaks a real
voice (the gateway's own speech endpoint, PCM16 at 24 kHz), decodes the voice it gets back, asks
in text, answers a tool call, and the account is charged each turn's `usageMetadata` at the
embedded default's `gemini-live-2.5-flash` prices, to the nano-unit.
"""

import asyncio
import itertools
import json
import os
import time
from decimal import Decimal

import openai
import pytest
from google import genai
from google.genai import types

from conftest import balance, cli, new_key

_names = itertools.count()
MODEL = "gemini-live-2.5-flash"
# The embedded default's prices for it, per million tokens, by modality.
PRICES_IN = {"TEXT": Decimal("0.50"), "AUDIO": Decimal("3"), "IMAGE": Decimal("3")}
PRICES_OUT = {"TEXT": Decimal("2"), "AUDIO": Decimal("12")}


@pytest.fixture
def live(monkeypatch):
    """A google-genai client for the TLS listener, trusting its certificate."""
    monkeypatch.setenv("SSL_CERT_FILE", os.environ["TOLLGATE_TLS_CA"])

    def client(key: str, api_version: str | None = None) -> genai.Client:
        return genai.Client(
            api_key=key,
            http_options=types.HttpOptions(
                base_url=os.environ["TOLLGATE_TLS_URL"], api_version=api_version
            ),
        )

    return client


def price(usage: types.UsageMetadata) -> Decimal:
    """What a turn's usage costs: its counts by modality (thinking as text out)."""
    total = Decimal(0)
    for d in usage.prompt_tokens_details or []:
        total += Decimal(d.token_count or 0) * PRICES_IN[d.modality.value]
    for d in usage.response_tokens_details or []:
        total += Decimal(d.token_count or 0) * PRICES_OUT[d.modality.value]
    total += Decimal(usage.thoughts_token_count or 0) * PRICES_OUT["TEXT"]
    return (total / Decimal(1_000_000)).quantize(Decimal("0.000000001"))


def spoken(base_url: str, key: str, text: str) -> bytes:
    """A real voice saying `text`: raw PCM16 at 24 kHz."""
    speech = openai.OpenAI(base_url=f"{base_url}/v1", api_key=key, max_retries=0)
    return speech.audio.speech.create(
        model="tts-1", voice="alloy", input=text, response_format="pcm"
    ).read()


def charges(name: str) -> list[Decimal]:
    """The account's live charges, once its session's hold is gone."""
    deadline = time.monotonic() + 10
    while Decimal(json.loads(cli("keys", "show", name, "--json"))["held"]) != 0:
        assert time.monotonic() < deadline, "the session's hold stayed"
        time.sleep(0.05)
    rows = json.loads(cli("keys", "ledger", name, "--json"))["rows"]
    return [-Decimal(r["amount"]) for r in rows if r["kind"] == "charge" and r["model"] == MODEL]


def test_a_spoken_turn_and_a_question_are_answered_and_billed_per_turn(base_url, live):
    name = f"sdk-live-{next(_names)}"
    key = new_key(name, "5")
    voice = spoken(base_url, key, "What is the weather like on the coast today?")
    assert len(voice) > 48_000
    after_speech = balance(name)

    async def converse():
        claims, audio = [], bytearray()
        config = types.LiveConnectConfig(
            response_modalities=[types.Modality.AUDIO],
            system_instruction="Answer in one sentence.",
        )
        async with live(key).aio.live.connect(model=MODEL, config=config) as session:
            for at in range(0, len(voice), 9_600):
                await session.send_realtime_input(
                    audio=types.Blob(data=voice[at : at + 9_600], mime_type="audio/pcm;rate=24000")
                )
            await session.send_realtime_input(audio_stream_end=True)
            async for message in session.receive():
                if message.data:
                    audio.extend(message.data)
                if message.usage_metadata:
                    claims.append(price(message.usage_metadata))
            await session.send_client_content(
                turns=types.Content(role="user", parts=[types.Part(text="And tomorrow?")]),
                turn_complete=True,
            )
            async for message in session.receive():
                if message.data:
                    audio.extend(message.data)
                if message.usage_metadata:
                    claims.append(price(message.usage_metadata))
        return claims, audio

    claims, audio = asyncio.run(converse())
    # Seconds of PCM16 came back, whole samples, a turn each.
    assert len(claims) == 2
    assert len(audio) > 2 * 48_000 and len(audio) % 2 == 0
    assert sorted(charges(name)) == sorted(claims)
    assert balance(name) == after_speech - sum(claims)


def test_a_tool_call_is_answered_and_both_turns_billed(live):
    name = f"sdk-live-tool-{next(_names)}"
    key = new_key(name, "5")
    lights = types.FunctionDeclaration(name="turn_on_the_lights", description="Turns the lights on.")

    async def converse():
        claims, calls, text = [], [], []
        config = types.LiveConnectConfig(
            response_modalities=[types.Modality.TEXT],
            tools=[types.Tool(function_declarations=[lights])],
        )
        async with live(key).aio.live.connect(model=MODEL, config=config) as session:
            await session.send_realtime_input(text="Please turn_on_the_lights in the hall.")
            async for message in session.receive():
                if message.tool_call:
                    calls.extend(message.tool_call.function_calls)
                if message.usage_metadata:
                    claims.append(price(message.usage_metadata))
                if calls and message.usage_metadata:
                    break
            await session.send_tool_response(
                function_responses=[
                    types.FunctionResponse(id=calls[0].id, name=calls[0].name, response={"result": "on"})
                ]
            )
            async for message in session.receive():
                if message.text:
                    text.append(message.text)
                if message.usage_metadata:
                    claims.append(price(message.usage_metadata))
        return claims, calls, text

    claims, calls, text = asyncio.run(converse())
    assert [c.name for c in calls] == ["turn_on_the_lights"]
    assert "".join(text)
    assert sorted(charges(name)) == sorted(claims)


def test_a_wrong_key_and_an_unknown_model_are_refused(live):
    async def connect(key: str, model: str):
        async with live(key).aio.live.connect(model=model) as session:
            async for _ in session.receive():
                pass

    with pytest.raises(Exception) as refused:
        asyncio.run(connect("tg-not-a-key", MODEL))
    assert "400" in str(refused.value)
    key = new_key(f"sdk-live-refused-{next(_names)}", "1")
    with pytest.raises(Exception) as refused:
        asyncio.run(connect(key, "no-such-live-model"))
    assert "not found" in str(refused.value)


def test_an_ephemeral_token_opens_one_session_billed_to_the_key_that_minted_it(live):
    """The server mints with its key (`client.auth_tokens.create`); the browser connects with
    the token's name in place of the key (google-genai: the `BidiGenerateContentConstrained`
    socket, `Authorization: Token auth_tokens/…`), its setup locked to the token's."""
    name = f"sdk-live-token-{next(_names)}"
    key = new_key(name, "5")
    server = live(key, "v1alpha")
    token = server.auth_tokens.create(
        config=types.CreateAuthTokenConfig(
            uses=1,
            live_connect_constraints=types.LiveConnectConstraints(
                model=MODEL,
                config=types.LiveConnectConfig(response_modalities=[types.Modality.TEXT]),
            ),
        )
    )
    assert token.name.startswith("auth_tokens/")

    async def ask(token_name: str):
        claims, text = [], []
        browser = live(token_name, "v1alpha")
        async with browser.aio.live.connect(model=MODEL) as session:
            await session.send_realtime_input(text="Say hello in a short sentence.")
            async for message in session.receive():
                if message.text:
                    text.append(message.text)
                if message.usage_metadata:
                    claims.append(price(message.usage_metadata))
                    break
        return claims, text

    claims, text = asyncio.run(ask(token.name))
    assert "".join(text)
    # The session was the minting key's: its account paid each turn's usage.
    assert charges(name) == claims
    # One use: the second connection is refused as a wrong key is.
    with pytest.raises(Exception) as refused:
        asyncio.run(ask(token.name))
    assert "400" in str(refused.value) or "401" in str(refused.value), refused.value
