"""Native text generation (docs/api.md §2.9, §4.10–4.11, §5; wire-formats §6 and §8):

* the vendor's own SDK, `google-genai` → tollgate `…/models/{model}:generateContent`,
  `:streamGenerateContent?alt=sse`, `:countTokens`, `GET …/models[/{model}]` — under the SDK's
  default API version (`v1` in the pinned release) and under an explicit `v1beta`;
* raw HTTP (httpx) → `/v1beta/…` with `x-vendor-api-key` or `?key=`, both stream framings;
* the `openai` SDK → `/v1/chat/completions` with a native model (docs/api.md §4 rule 4), the bridge of
  wire-formats §8: text, streaming with usage, tool calls and their results;
* the `openai` SDK → `/v1/responses` with a native model (the Responses bridge): `create`, its
  stream, the `responses.stream` helper, function calls fed back with `input += output`.

Every test that checks money has an account of its own, so its balance moves by exactly what the
test did. The charge of a request is worked out here from the usage the client saw:
`(input × input price + output × output price) / 1e6`, rounded up once to the nano-unit, where
input = `promptTokenCount` (+ `toolUsePromptTokenCount`) and output = `candidatesTokenCount` +
`thoughtsTokenCount` (thinking is billed as output, docs/api.md §8 rule 7). The upstream is the
in-process simulator: deterministic answers ("Simulated reply to …"), models from 2.5 think by
default, and its thinking text reads "Thinking about the request. Step 1: weigh …".
"""

import itertools
import json
import time
import tomllib
from decimal import ROUND_CEILING, Decimal
from functools import cache

import httpx
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from conftest import account, cli, new_key

NANO = Decimal("0.000000001")
MODEL = "gen-2.5-flash"
PROMPT = "Why is the sky blue?"
# Long enough for the simulator to answer in many stream chunks (about 600 bytes in 32-byte pieces).
LONG_PROMPT = (
    "Tell me, in plain words and at some length, why the sky looks blue by day, why sunsets turn "
    "red and orange, what Rayleigh scattering has to do with either, why clouds stay white while "
    "the air around them is blue, and whether the sky on Mars looks the same colour to a visitor "
    "standing on its dusty surface at noon."
)
# The simulator's thinking text starts with this, then runs "Step n: weigh <word>." sentences.
THOUGHT_MARKERS = ("Thinking about the request.", "Step 1: weigh")
API_VERSIONS = [None, "v1beta"]  # None: whatever the SDK uses by default (v1 in google-genai 3.4.0)
_names = itertools.count()


# ---- accounts, prices and money ----


def fresh_account(prefix: str, amount: str = "10") -> tuple[str, str]:
    """A new account with its own key: (name, key)."""
    name = f"sdk-{prefix}-{next(_names)}-{time.monotonic_ns()}"
    return name, new_key(name, amount)


@cache
def default_config() -> dict:
    """The embedded default configuration, the one run.sh starts the gateway with."""
    return tomllib.loads(cli("config", "default"))


@cache
def native_models() -> tuple[str, ...]:
    models = default_config().get("models", {})
    return tuple(sorted(m for m, t in models.items() if t.get("kind") == "native-text"))


def text_price(model: str) -> tuple[Decimal, Decimal]:
    """(input, output) price per million tokens of a native model."""
    models = default_config().get("models", {})
    if model not in models:
        pytest.fail(f"the default configuration has no model {model!r}")
    price = models[model]["price"]
    assert price["meter"] == "text_tokens", (model, price)
    return Decimal(price["input_per_million_tokens"]), Decimal(price["output_per_million_tokens"])


def text_charge(model: str, input_tokens: int, output_tokens: int) -> Decimal:
    """`Tariff::charge` for `Usage::TextTokens`: exact, then rounded up once to the nano-unit."""
    per_input, per_output = text_price(model)
    exact = (Decimal(input_tokens) * per_input + Decimal(output_tokens) * per_output) / Decimal(1_000_000)
    return exact.quantize(NANO, rounding=ROUND_CEILING)


def usage_tokens(usage) -> tuple[int, int]:
    """(input, output) of an SDK `usage_metadata`: output counts the thinking."""
    assert usage is not None, "the response has no usage_metadata"
    input_tokens = (usage.prompt_token_count or 0) + (usage.tool_use_prompt_token_count or 0)
    output_tokens = (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0)
    return input_tokens, output_tokens


def raw_usage_tokens(usage: dict) -> tuple[int, int]:
    """(input, output) of a wire `usageMetadata`."""
    input_tokens = usage.get("promptTokenCount", 0) + usage.get("toolUsePromptTokenCount", 0)
    output_tokens = usage.get("candidatesTokenCount", 0) + usage.get("thoughtsTokenCount", 0)
    return input_tokens, output_tokens


def sdk_charge(model: str, usage) -> Decimal:
    return text_charge(model, *usage_tokens(usage))


def chat_charge(model: str, usage) -> Decimal:
    """Chat usage: prompt tokens at the input price, completion tokens (reasoning included) at the
    output price."""
    return text_charge(model, usage.prompt_tokens, usage.completion_tokens)


def settled(name: str, timeout: float = 10.0) -> dict:
    """The account once it holds nothing any more (a stream settles just after its last byte)."""
    deadline = time.monotonic() + timeout
    while True:
        state = account(name)
        if state["open_holds"] == 0 and Decimal(state["held"]) == 0:
            return state
        if time.monotonic() > deadline:
            pytest.fail(f"the account still holds money after {timeout} s: {state}")
        time.sleep(0.05)


def assert_paid(name: str, start: Decimal, charged: Decimal) -> None:
    """The account paid exactly `charged` (0: nothing) and holds nothing."""
    state = settled(name)
    assert Decimal(state["balance"]) == start - charged, (state, start, charged)


# ---- clients ----


def gclient(base_url: str, key: str, api_version: str | None) -> genai.Client:
    """The vendor's client on the gateway. Keep it in a variable while using `.models`: the SDK
    closes its HTTP connection pool when the `Client` object is collected."""
    options = types.HttpOptions(base_url=base_url)
    if api_version is not None:
        options = types.HttpOptions(base_url=base_url, api_version=api_version)
    return genai.Client(api_key=key, http_options=options)


def oclient(base_url: str, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{base_url}/v1", api_key=key, max_retries=0)


def answer_text(parts) -> str:
    """The answer (not the thoughts) of SDK parts."""
    return "".join(p.text for p in parts or [] if p.text and not p.thought)


def thought_parts(parts) -> list:
    return [p for p in parts or [] if p.thought]


def assert_no_thought_text(text: str) -> None:
    for marker in THOUGHT_MARKERS:
        assert marker not in text, f"thinking text leaked into the answer: {text!r}"


# ---- the google-genai SDK ----


@pytest.mark.parametrize("api_version", API_VERSIONS)
def test_what_the_sdk_sends(base_url, key, api_version):
    """Pins down the requests the pinned SDK makes, which the gateway must serve: its default API
    version is `v1` (earlier releases used `v1beta`), the key goes in `x-goog-api-key` (never in
    the query), streams ask for `alt=sse`, and bodies are camelCase at the top level, while the
    members of `thinkingConfig` go out in snake_case (`thinking_budget`, `include_thoughts`)."""
    sent = []
    hooks = {"event_hooks": {"request": [sent.append]}}
    options = types.HttpOptions(base_url=base_url, client_args=hooks)
    if api_version is not None:
        options = types.HttpOptions(base_url=base_url, api_version=api_version, client_args=hooks)
    c = genai.Client(api_key=key, http_options=options)
    config = types.GenerateContentConfig(
        system_instruction="You are terse.",
        thinking_config=types.ThinkingConfig(include_thoughts=True, thinking_budget=64),
    )
    c.models.generate_content(model=MODEL, contents=PROMPT, config=config)
    list(c.models.generate_content_stream(model=MODEL, contents=PROMPT))
    c.models.count_tokens(model=MODEL, contents=PROMPT)
    list(c.models.list())
    c.models.get(model=MODEL)

    version = api_version or "v1"
    seen = [(r.method, r.url.path, dict(r.url.params)) for r in sent]
    assert seen == [
        ("POST", f"/{version}/models/{MODEL}:generateContent", {}),
        ("POST", f"/{version}/models/{MODEL}:streamGenerateContent", {"alt": "sse"}),
        ("POST", f"/{version}/models/{MODEL}:countTokens", {}),
        ("GET", f"/{version}/models", {}),
        ("GET", f"/{version}/models/{MODEL}", {}),
    ], seen
    for request in sent:
        assert request.headers["x-goog-api-key"] == key
        assert "authorization" not in request.headers and "x-vendor-api-key" not in request.headers
    body = json.loads(sent[0].content)
    assert set(body) == {"contents", "systemInstruction", "generationConfig"}, body
    assert body["contents"] == [{"role": "user", "parts": [{"text": PROMPT}]}]
    thinking = body["generationConfig"]["thinkingConfig"]
    assert thinking in (
        {"include_thoughts": True, "thinking_budget": 64},
        {"includeThoughts": True, "thinkingBudget": 64},
    ), thinking


@pytest.mark.parametrize("api_version", API_VERSIONS)
def test_generate_content_text_usage_and_exact_charge(base_url, api_version):
    name, key = fresh_account("native-gen")
    start = account(name)["balance"]
    c = gclient(base_url, key, api_version)
    response = c.models.generate_content(model=MODEL, contents=PROMPT)
    candidate = response.candidates[0]
    text = answer_text(candidate.content.parts)
    assert text.startswith(f'Simulated reply to "{PROMPT}"'), text
    assert response.text == text
    assert candidate.finish_reason == types.FinishReason.STOP
    assert not thought_parts(candidate.content.parts)  # thoughts are shown only on request
    usage = response.usage_metadata
    assert usage.prompt_token_count > 0 and usage.candidates_token_count > 0
    assert usage.thoughts_token_count and usage.thoughts_token_count > 0  # 2.5 thinks by default
    assert usage.total_token_count == (
        usage.prompt_token_count + usage.candidates_token_count + usage.thoughts_token_count
    )
    charged = sdk_charge(MODEL, usage)
    assert charged > 0
    assert_paid(name, Decimal(start), charged)
    used = {u["model"]: u for u in account(name)["usage"]}
    assert Decimal(used[MODEL]["charged"]) == charged and used[MODEL]["requests"] == 1, used


@pytest.mark.parametrize("api_version", API_VERSIONS)
def test_generate_content_with_a_system_instruction(base_url, api_version):
    name, key = fresh_account("native-sys")
    c = gclient(base_url, key, api_version)
    response = c.models.generate_content(
        model="gen-2.0-flash",
        contents=PROMPT,
        config=types.GenerateContentConfig(system_instruction="You are terse.", temperature=0.2, max_output_tokens=500),
    )
    assert response.text.startswith(f'Simulated reply to "{PROMPT}"')
    usage = response.usage_metadata
    assert not usage.thoughts_token_count  # 2.0 does not think
    assert_paid(name, Decimal(10), sdk_charge("gen-2.0-flash", usage))


@pytest.mark.parametrize("api_version", API_VERSIONS)
def test_generate_content_stream_arrives_over_time_and_bills_the_last_usage(base_url, api_version):
    name, key = fresh_account("native-stream")
    c = gclient(base_url, key, api_version)
    started = time.monotonic()
    chunks = []
    for chunk in c.models.generate_content_stream(model=MODEL, contents=LONG_PROMPT):
        chunks.append((time.monotonic() - started, chunk))
    assert len(chunks) >= 5, len(chunks)
    first, last = chunks[0][0], chunks[-1][0]
    # The simulator paces its frames ~20 ms apart and the gateway relays them as they come.
    assert last - first >= 0.04, [round(t, 3) for t, _ in chunks]
    text = "".join(answer_text(ch.candidates[0].content.parts) for _, ch in chunks if ch.candidates and ch.candidates[0].content)
    assert text.startswith("Simulated reply to"), text
    # The same request answered whole gives the same text (the simulator is deterministic).
    whole = c.models.generate_content(model=MODEL, contents=LONG_PROMPT)
    assert text == whole.text
    final = chunks[-1][1]
    assert final.candidates[0].finish_reason == types.FinishReason.STOP
    usages = [ch.usage_metadata for _, ch in chunks if ch.usage_metadata]
    last_usage = final.usage_metadata
    assert usage_tokens(last_usage) == usage_tokens(whole.usage_metadata)
    # Each chunk carries the usage so far: billing must take the last one, not add them up.
    summed = [sum(x) for x in zip(*(usage_tokens(u) for u in usages))]
    assert summed != list(usage_tokens(last_usage))
    assert_paid(name, Decimal(10), sdk_charge(MODEL, last_usage) + sdk_charge(MODEL, whole.usage_metadata))


@pytest.mark.parametrize("api_version", API_VERSIONS)
def test_thoughts_shown_on_request_and_billed_as_output(base_url, api_version):
    name, key = fresh_account("native-think")
    config = types.GenerateContentConfig(
        thinking_config=types.ThinkingConfig(include_thoughts=True, thinking_budget=1024)
    )
    c = gclient(base_url, key, api_version)
    response = c.models.generate_content(model=MODEL, contents=PROMPT, config=config)
    parts = response.candidates[0].content.parts
    thoughts = thought_parts(parts)
    assert thoughts and all(p.text for p in thoughts), parts
    assert thoughts[0].text.startswith(THOUGHT_MARKERS[0])
    answer = answer_text(parts)
    assert answer.startswith("Simulated reply to")
    assert_no_thought_text(answer)
    usage = response.usage_metadata
    assert 0 < usage.thoughts_token_count <= 1024
    charged = sdk_charge(MODEL, usage)
    # Thinking is billed at the output price.
    _, per_output = text_price(MODEL)
    without_thoughts = text_charge(MODEL, usage.prompt_token_count, usage.candidates_token_count)
    assert charged - without_thoughts >= Decimal(usage.thoughts_token_count) * per_output / Decimal(1_000_000) - NANO
    assert_paid(name, Decimal(10), charged)


@pytest.mark.parametrize("api_version", API_VERSIONS)
def test_thoughts_in_a_stream(base_url, api_version):
    name, key = fresh_account("native-think-stream")
    config = types.GenerateContentConfig(
        thinking_config=types.ThinkingConfig(include_thoughts=True, thinking_budget=1024)
    )
    c = gclient(base_url, key, api_version)
    chunks = list(c.models.generate_content_stream(model=MODEL, contents=PROMPT, config=config))
    parts = [p for ch in chunks if ch.candidates and ch.candidates[0].content for p in ch.candidates[0].content.parts or []]
    assert thought_parts(parts), parts
    answer = answer_text(parts)
    assert answer.startswith("Simulated reply to")
    assert_no_thought_text(answer)
    usage = chunks[-1].usage_metadata
    assert 0 < usage.thoughts_token_count <= 1024
    assert_paid(name, Decimal(10), sdk_charge(MODEL, usage))


@pytest.mark.parametrize("api_version", API_VERSIONS)
def test_thinking_budget_zero_means_no_thoughts(base_url, api_version):
    name, key = fresh_account("native-nothink")
    config = types.GenerateContentConfig(
        thinking_config=types.ThinkingConfig(include_thoughts=True, thinking_budget=0)
    )
    c = gclient(base_url, key, api_version)
    response = c.models.generate_content(model=MODEL, contents=PROMPT, config=config)
    assert not thought_parts(response.candidates[0].content.parts)
    usage = response.usage_metadata
    assert not usage.thoughts_token_count
    assert usage.total_token_count == usage.prompt_token_count + usage.candidates_token_count
    assert_paid(name, Decimal(10), sdk_charge(MODEL, usage))


@pytest.mark.parametrize("api_version", API_VERSIONS)
def test_count_tokens_is_free(base_url, api_version):
    name, key = fresh_account("native-count")
    c = gclient(base_url, key, api_version)
    counted = c.models.count_tokens(model=MODEL, contents=PROMPT)
    assert counted.total_tokens > 0
    # The count matches the prompt the generation is billed for.
    generated = c.models.generate_content(
        model=MODEL, contents=PROMPT,
        config=types.GenerateContentConfig(thinking_config=types.ThinkingConfig(thinking_budget=0)),
    )
    assert counted.total_tokens == generated.usage_metadata.prompt_token_count
    assert_paid(name, Decimal(10), sdk_charge(MODEL, generated.usage_metadata))
    # And counting again moves nothing.
    before = account(name)["balance"]
    for _ in range(3):
        assert c.models.count_tokens(model=MODEL, contents=LONG_PROMPT).total_tokens > counted.total_tokens
    assert account(name)["balance"] == before


@pytest.mark.parametrize("api_version", API_VERSIONS)
def test_embed_content_is_served_by_embeddings_channels_and_billed_like_v1_embeddings(base_url, api_version):
    """`models.embed_content` → `…/models/{model}:batchEmbedContents` (the SDK sends every call
    there, without a `model` in its requests): one vector per content, in order, at the asked
    dimensionality — the same vectors `/v1/embeddings` gives for the same texts — charged the
    upstream's tokens × the model's price, exactly what the OpenAI endpoint charges."""
    texts = ["What is your name?", "What is your favorite color?", "Tell me about the sky."]
    name, key = fresh_account("native-embed")
    c = gclient(base_url, key, api_version)
    embedded = c.models.embed_content(
        model="text-embedding-3-small", contents=texts,
        config=types.EmbedContentConfig(output_dimensionality=64, task_type="RETRIEVAL_QUERY"),
    )
    assert [len(e.values) for e in embedded.embeddings] == [64, 64, 64]

    # The OpenAI endpoint on another account: the same vectors, the same charge.
    other, other_key = fresh_account("native-embed-ref")
    reference = oclient(base_url, other_key).embeddings.create(
        model="text-embedding-3-small", input=texts, dimensions=64, encoding_format="float")
    for mine, theirs in zip(embedded.embeddings, reference.data):
        assert mine.values == pytest.approx(theirs.embedding, abs=1e-6)
    price = Decimal(str(default_config()["models"]["text-embedding-3-small"]["price"]["per_million_tokens"]))
    charge = (price * reference.usage.prompt_tokens / Decimal(1_000_000)).quantize(NANO, rounding=ROUND_CEILING)
    assert charge > 0
    assert_paid(name, Decimal(10), charge)
    assert_paid(other, Decimal(10), charge)

    # One string: one vector; a text-generation model is not an embeddings model (404).
    one = c.models.embed_content(model="text-embedding-3-small", contents="hello")
    assert len(one.embeddings) == 1 and len(one.embeddings[0].values) == 1536
    with pytest.raises(genai_errors.ClientError) as caught:
        c.models.embed_content(model=MODEL, contents="hello")
    assert caught.value.code == 404 and caught.value.status == "NOT_FOUND", caught.value.details


@pytest.mark.parametrize("api_version", API_VERSIONS)
def test_list_and_get_models(base_url, key, api_version):
    c = gclient(base_url, key, api_version)
    listed = {m.name: m for m in c.models.list()}
    configured = native_models()
    assert set(configured) >= {"gen-2.0-flash", "gen-2.5-flash-lite", MODEL, "gen-2.5-pro", "gen-3-pro-preview"}
    for model in configured:
        assert f"models/{model}" in listed, sorted(listed)
        assert "generateContent" in (listed[f"models/{model}"].supported_actions or [])
    got = c.models.get(model=MODEL)
    assert got.name == f"models/{MODEL}"
    assert got.input_token_limit and got.input_token_limit > 0
    assert got.output_token_limit and got.output_token_limit > 0
    assert {"generateContent", "streamGenerateContent", "countTokens"} <= set(got.supported_actions or [])
    assert c.models.get(model=f"models/{MODEL}").name == f"models/{MODEL}"


@pytest.mark.parametrize("api_version", API_VERSIONS)
def test_get_an_unknown_model_is_the_vendors_404(base_url, key, api_version):
    """Under the SDK's default version this is `GET /v1/models/{model}` with `x-goog-api-key`: the
    path OpenAI clients use too, so the error must follow the credential, as the answer does."""
    c = gclient(base_url, key, api_version)
    with pytest.raises(genai_errors.ClientError) as caught:
        c.models.get(model="gen-9-nonexistent")
    assert caught.value.code == 404 and caught.value.status == "NOT_FOUND", caught.value.details


@pytest.mark.parametrize("api_version", API_VERSIONS)
def test_sdk_errors_have_the_vendor_codes_and_cost_nothing(base_url, api_version):
    name, key = fresh_account("native-err")
    c = gclient(base_url, key, api_version)

    # A key the gateway does not know: the vendor answers 400 INVALID_ARGUMENT, not 401.
    bad = gclient(base_url, "tg-not-a-real-key-000000000000", api_version)
    with pytest.raises(genai_errors.ClientError) as caught:
        bad.models.generate_content(model=MODEL, contents=PROMPT)
    assert caught.value.code == 400 and caught.value.status == "INVALID_ARGUMENT", caught.value
    details = (caught.value.details or {}).get("error", {}).get("details", [])
    assert any(d.get("reason") == "API_KEY_INVALID" for d in details), caught.value.details
    with pytest.raises(genai_errors.ClientError) as caught:
        list(bad.models.generate_content_stream(model=MODEL, contents=PROMPT))
    assert caught.value.code == 400 and caught.value.status == "INVALID_ARGUMENT"

    # A thinking budget out of the model's range, refused naming the field.
    for budget in (999_999, -2):
        config = types.GenerateContentConfig(thinking_config=types.ThinkingConfig(thinking_budget=budget))
        with pytest.raises(genai_errors.ClientError) as caught:
            c.models.generate_content(model=MODEL, contents=PROMPT, config=config)
        assert caught.value.code == 400 and caught.value.status == "INVALID_ARGUMENT", caught.value
        assert "thinkingBudget" in caught.value.message, caught.value.message
        with pytest.raises(genai_errors.ClientError) as caught:
            list(c.models.generate_content_stream(model=MODEL, contents=PROMPT, config=config))
        assert caught.value.code == 400 and "thinkingBudget" in caught.value.message

    # A model the gateway does not serve.
    for model in ("gen-9-nonexistent", "text-embedding-3-small"):
        with pytest.raises(genai_errors.ClientError) as caught:
            c.models.generate_content(model=model, contents=PROMPT)
        assert caught.value.code == 404 and caught.value.status == "NOT_FOUND", caught.value
        with pytest.raises(genai_errors.ClientError) as caught:
            list(c.models.generate_content_stream(model=model, contents=PROMPT))
        assert caught.value.code == 404 and caught.value.status == "NOT_FOUND", caught.value
        with pytest.raises(genai_errors.ClientError) as caught:
            c.models.count_tokens(model=model, contents=PROMPT)
        assert caught.value.code == 404

    state = settled(name)
    assert Decimal(state["balance"]) == Decimal(10), state
    assert all(Decimal(u["charged"]) == 0 for u in state.get("usage") or []), state


@pytest.mark.parametrize(
    "model,budget,accepted",
    [
        # The vendor's published ranges: 2.5 Flash 0-24576 (0 = off), Flash-Lite 512-24576 or 0,
        # 2.5 Pro and 3 Pro 128-32768 and never off; -1 is dynamic everywhere.
        ("gen-2.5-flash", 0, True),
        ("gen-2.5-flash", 24_576, True),
        ("gen-2.5-flash", 24_577, False),
        ("gen-2.5-flash-lite", 0, True),
        ("gen-2.5-flash-lite", 100, False),
        ("gen-2.5-pro", -1, True),
        ("gen-2.5-pro", 0, False),
        ("gen-2.5-pro", 100, False),
        ("gen-3-pro-preview", 0, False),
    ],
)
def test_thinking_budget_ranges_per_model(base_url, model, budget, accepted):
    name, key = fresh_account("native-range")
    c = gclient(base_url, key, "v1beta")
    config = types.GenerateContentConfig(thinking_config=types.ThinkingConfig(thinking_budget=budget))
    if accepted:
        response = c.models.generate_content(model=model, contents=PROMPT, config=config)
        assert response.text.startswith("Simulated reply to")
        thoughts = response.usage_metadata.thoughts_token_count or 0
        assert thoughts == 0 if budget == 0 else thoughts > 0
        assert_paid(name, Decimal(10), sdk_charge(model, response.usage_metadata))
    else:
        with pytest.raises(genai_errors.ClientError) as caught:
            c.models.generate_content(model=model, contents=PROMPT, config=config)
        assert caught.value.code == 400 and caught.value.status == "INVALID_ARGUMENT"
        assert "thinkingBudget" in caught.value.message, caught.value.message
        assert_paid(name, Decimal(10), Decimal(0))


def test_low_balance_is_refused_before_the_upstream_unless_the_output_is_capped(base_url):
    """The hold covers the prompt and the most the request can produce (thinking included): a
    request without `maxOutputTokens` may produce 65,536 tokens on 2.5 Flash, which 0.01 does not
    cover; the same request capped at 200 tokens fits and is charged what it used."""
    name, key = fresh_account("native-poor", "0.01")
    c = gclient(base_url, key, "v1beta")
    for call in (
        lambda: c.models.generate_content(model=MODEL, contents=PROMPT),
        lambda: list(c.models.generate_content_stream(model=MODEL, contents=PROMPT)),
    ):
        with pytest.raises(genai_errors.ClientError) as caught:
            call()
        assert caught.value.code == 429 and caught.value.status == "RESOURCE_EXHAUSTED", caught.value
    assert_paid(name, Decimal("0.01"), Decimal(0))
    capped = types.GenerateContentConfig(max_output_tokens=200)
    response = c.models.generate_content(model=MODEL, contents=PROMPT, config=capped)
    usage = response.usage_metadata
    assert (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0) <= 200
    assert_paid(name, Decimal("0.01"), sdk_charge(MODEL, usage))
    # counting tokens needs no hold
    assert c.models.count_tokens(model=MODEL, contents=PROMPT).total_tokens > 0


def test_multi_turn_chat_session(base_url):
    """The SDK's chat session sends the whole history (user and model turns, thought signatures
    included) every time; each turn is billed on its own usage."""
    name, key = fresh_account("native-session")
    c = gclient(base_url, key, None)
    chat = c.chats.create(model=MODEL)
    first = chat.send_message("What is the tallest mountain on Earth?")
    second = chat.send_message("And the second tallest?")
    assert first.text.startswith('Simulated reply to "What is the tallest mountain on Earth?"')
    assert second.text.startswith('Simulated reply to "And the second tallest?"')
    assert second.usage_metadata.prompt_token_count > first.usage_metadata.prompt_token_count + 5
    assert len(chat.get_history()) == 4
    assert_paid(name, Decimal(10), sdk_charge(MODEL, first.usage_metadata) + sdk_charge(MODEL, second.usage_metadata))


def test_async_client_stream(base_url):
    """`client.aio`, the SDK's asynchronous client, streams the same answer."""
    import asyncio

    name, key = fresh_account("native-aio")
    c = gclient(base_url, key, None)

    async def run():
        async with c.aio as aio:
            chunks = [chunk async for chunk in await aio.models.generate_content_stream(model=MODEL, contents=PROMPT)]
            whole = await aio.models.generate_content(model=MODEL, contents=PROMPT)
        return chunks, whole

    chunks, whole = asyncio.run(run())
    assert "".join(ch.text or "" for ch in chunks) == whole.text
    assert_paid(name, Decimal(10), sdk_charge(MODEL, chunks[-1].usage_metadata) + sdk_charge(MODEL, whole.usage_metadata))


# ---- raw HTTP ----


BODY = {"contents": [{"role": "user", "parts": [{"text": PROMPT}]}]}
LONG_BODY = {
    "contents": [{"role": "user", "parts": [{"text": LONG_PROMPT}]}],
    "generationConfig": {"thinkingConfig": {"includeThoughts": True, "thinkingBudget": 256}},
}


def native_url(base_url: str, model: str, action: str, version: str = "v1beta") -> str:
    return f"{base_url}/{version}/models/{model}:{action}"


def response_text(response: dict) -> str:
    parts = response["candidates"][0].get("content", {}).get("parts", [])
    return "".join(p.get("text", "") for p in parts if not p.get("thought"))


def assert_google_error(r: httpx.Response, code: int, status: str) -> dict:
    assert r.status_code == code, (r.status_code, r.text)
    assert r.headers["content-type"].startswith("application/json")
    error = r.json()["error"]
    assert error["code"] == code and error["status"] == status and error["message"], error
    return error


@pytest.mark.parametrize("auth", ["header", "query"])
def test_raw_generate_content_with_either_credential(base_url, auth):
    name, key = fresh_account(f"native-raw-{auth}")
    headers, params = ({"x-vendor-api-key": key}, {}) if auth == "header" else ({}, {"key": key})
    r = httpx.post(native_url(base_url, MODEL, "generateContent"), json=BODY, headers=headers, params=params, timeout=30)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert response_text(body).startswith(f'Simulated reply to "{PROMPT}"')
    assert body["candidates"][0]["finishReason"] == "STOP"
    usage = body["usageMetadata"]
    assert usage["thoughtsTokenCount"] > 0
    assert usage["totalTokenCount"] == usage["promptTokenCount"] + usage["candidatesTokenCount"] + usage["thoughtsTokenCount"]
    assert_paid(name, Decimal(10), text_charge(MODEL, *raw_usage_tokens(usage)))


def test_raw_snake_case_body_is_accepted(base_url):
    """Gateways commonly accept the snake_case spelling (wire-formats §6); the SDK itself sends
    `thinkingConfig` with snake_case members."""
    name, key = fresh_account("native-snake")
    body = {
        "system_instruction": {"parts": [{"text": "You are terse."}]},
        "contents": [{"role": "user", "parts": [{"text": PROMPT}]}],
        "generation_config": {"thinking_config": {"include_thoughts": True, "thinking_budget": 64}},
    }
    r = httpx.post(native_url(base_url, MODEL, "generateContent"), json=body, headers={"x-vendor-api-key": key}, timeout=30)
    assert r.status_code == 200, r.text
    parts = r.json()["candidates"][0]["content"]["parts"]
    assert any(p.get("thought") for p in parts), parts
    usage = r.json()["usageMetadata"]
    assert 0 < usage["thoughtsTokenCount"] <= 64
    assert_paid(name, Decimal(10), text_charge(MODEL, *raw_usage_tokens(usage)))


def test_raw_sse_stream_is_relayed_frame_by_frame(base_url):
    name, key = fresh_account("native-sse")
    url = native_url(base_url, MODEL, "streamGenerateContent")
    started = time.monotonic()
    events: list[tuple[float, bytes]] = []
    buffer = b""
    with httpx.stream("POST", url, params={"alt": "sse"}, json=LONG_BODY, headers={"x-vendor-api-key": key}, timeout=30) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream"), r.headers
        for data in r.iter_raw():
            buffer += data
            while b"\r\n\r\n" in buffer:
                event, buffer = buffer.split(b"\r\n\r\n", 1)
                events.append((time.monotonic() - started, event))
    assert buffer == b"", f"bytes after the last CRLF blank line: {buffer!r}"
    assert len(events) >= 5, len(events)
    assert events[-1][0] - events[0][0] >= 0.04, [round(t, 3) for t, _ in events]
    responses = []
    for _, event in events:
        assert event.startswith(b"data: "), event[:80]
        assert b"\n" not in event, "one data line per event, no event: lines"
        payload = event[len(b"data: "):]
        assert payload.strip() != b"[DONE]"
        responses.append(json.loads(payload))
    parts = [p for resp in responses for p in resp["candidates"][0].get("content", {}).get("parts", [])]
    assert any(p.get("thought") for p in parts)
    text = "".join(response_text(resp) for resp in responses)
    assert text.startswith("Simulated reply to")
    assert_no_thought_text(text)
    last = responses[-1]
    assert last["candidates"][0]["finishReason"] == "STOP"
    whole = httpx.post(native_url(base_url, MODEL, "generateContent"), json=LONG_BODY, headers={"x-vendor-api-key": key}, timeout=30).json()
    assert text == response_text(whole)
    assert last["usageMetadata"]["thoughtsTokenCount"] == whole["usageMetadata"]["thoughtsTokenCount"] <= 256
    assert_paid(
        name, Decimal(10),
        text_charge(MODEL, *raw_usage_tokens(last["usageMetadata"])) + text_charge(MODEL, *raw_usage_tokens(whole["usageMetadata"])),
    )


def test_raw_stream_without_alt_sse_is_one_json_array(base_url):
    name, key = fresh_account("native-array")
    url = native_url(base_url, MODEL, "streamGenerateContent")
    r = httpx.post(url, params={"key": key}, json=LONG_BODY, timeout=30)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/json"), r.headers
    responses = r.json()
    assert isinstance(responses, list) and responses, responses
    assert all("candidates" in resp for resp in responses)
    text = "".join(response_text(resp) for resp in responses)
    assert text.startswith("Simulated reply to")
    last = responses[-1]
    assert last["candidates"][0]["finishReason"] == "STOP"
    usage = last["usageMetadata"]
    assert usage["thoughtsTokenCount"] > 0
    whole = httpx.post(native_url(base_url, MODEL, "generateContent"), params={"key": key}, json=LONG_BODY, timeout=30).json()
    assert text == response_text(whole)
    assert_paid(
        name, Decimal(10),
        text_charge(MODEL, *raw_usage_tokens(usage)) + text_charge(MODEL, *raw_usage_tokens(whole["usageMetadata"])),
    )


def test_raw_count_tokens_is_free(base_url):
    name, key = fresh_account("native-raw-count")
    r = httpx.post(native_url(base_url, MODEL, "countTokens"), json=BODY, headers={"x-vendor-api-key": key}, timeout=30)
    assert r.status_code == 200, r.text
    assert r.json()["totalTokens"] > 0
    assert_paid(name, Decimal(10), Decimal(0))


def test_raw_errors(base_url):
    name, key = fresh_account("native-raw-err")
    for action, params in (("generateContent", {}), ("streamGenerateContent", {"alt": "sse"}), ("countTokens", {})):
        url = native_url(base_url, MODEL, action)
        # No key at all: 403 PERMISSION_DENIED.
        assert_google_error(httpx.post(url, params=params, json=BODY, timeout=30), 403, "PERMISSION_DENIED")
        # A wrong key, in either place: 400 INVALID_ARGUMENT (API_KEY_INVALID).
        for headers, query in (({"x-vendor-api-key": "tg-wrong"}, {}), ({}, {"key": "tg-wrong"})):
            assert_google_error(httpx.post(url, params=params | query, headers=headers, json=BODY, timeout=30), 400, "INVALID_ARGUMENT")
        # An unknown model: 404 NOT_FOUND.
        assert_google_error(
            httpx.post(native_url(base_url, "gen-9-nonexistent", action), params=params, headers={"x-vendor-api-key": key}, json=BODY, timeout=30),
            404, "NOT_FOUND",
        )
    # A bad thinking budget, named.
    bad = BODY | {"generationConfig": {"thinkingConfig": {"thinkingBudget": 999_999}}}
    error = assert_google_error(
        httpx.post(native_url(base_url, MODEL, "generateContent"), headers={"x-vendor-api-key": key}, json=bad, timeout=30),
        400, "INVALID_ARGUMENT",
    )
    assert "thinkingBudget" in error["message"]
    # A body that is not JSON.
    assert_google_error(
        httpx.post(native_url(base_url, MODEL, "generateContent"), headers={"x-vendor-api-key": key, "content-type": "application/json"}, content=b"{not json", timeout=30),
        400, "INVALID_ARGUMENT",
    )
    assert_paid(name, Decimal(10), Decimal(0))


def test_raw_array_stream_errors_are_wrapped_in_an_array(base_url, key):
    # wire-formats §6.3: without alt=sse the vendor wraps errors in an array ([{"error":…}]).
    r = httpx.post(native_url(base_url, "gen-9-nonexistent", "streamGenerateContent"), params={"key": key}, json=BODY, timeout=30)
    assert r.status_code == 404
    body = r.json()
    assert isinstance(body, list) and body[0]["error"]["status"] == "NOT_FOUND", body


# ---- the openai SDK: chat completions with a native model ----


MESSAGES = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": PROMPT},
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Looks a fact up.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            },
        },
    }
]


def test_chat_completion_with_a_native_model(base_url):
    name, key = fresh_account("native-chat")
    response = oclient(base_url, key).chat.completions.create(model=MODEL, messages=MESSAGES)
    choice = response.choices[0]
    assert choice.finish_reason == "stop"
    content = choice.message.content
    # The system message went to the system instruction: the reply quotes the user's words.
    assert content.startswith(f'Simulated reply to "{PROMPT}"'), content
    assert_no_thought_text(content)
    usage = response.usage
    reasoning = usage.completion_tokens_details.reasoning_tokens
    assert reasoning and reasoning > 0  # 2.5 thinks by default
    assert usage.completion_tokens > reasoning  # the answer plus the thinking
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert_paid(name, Decimal(10), chat_charge(MODEL, usage))


def test_chat_completion_agrees_with_the_native_usage(base_url):
    """completion_tokens = candidatesTokenCount + thoughtsTokenCount of the same generation."""
    name, key = fresh_account("native-chat-usage")
    chat = oclient(base_url, key).chat.completions.create(model=MODEL, messages=[{"role": "user", "content": PROMPT}])
    c = gclient(base_url, key, "v1beta")
    native = c.models.generate_content(model=MODEL, contents=PROMPT)
    n = native.usage_metadata
    assert chat.choices[0].message.content == native.text
    assert chat.usage.prompt_tokens == n.prompt_token_count
    assert chat.usage.completion_tokens == n.candidates_token_count + n.thoughts_token_count
    assert chat.usage.completion_tokens_details.reasoning_tokens == n.thoughts_token_count
    assert_paid(name, Decimal(10), 2 * chat_charge(MODEL, chat.usage))


def test_chat_completion_stream_with_usage(base_url):
    name, key = fresh_account("native-chat-stream")
    c = oclient(base_url, key)
    chunks = list(
        c.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True, stream_options={"include_usage": True})
    )
    assert len(chunks) >= 3
    *body, last = chunks
    assert last.choices == [] and last.usage is not None
    assert all(ch.usage is None for ch in body)
    content = "".join(ch.choices[0].delta.content or "" for ch in body if ch.choices)
    assert_no_thought_text(content)
    assert [ch.choices[0].finish_reason for ch in body if ch.choices and ch.choices[0].finish_reason] == ["stop"]
    whole = c.chat.completions.create(model=MODEL, messages=MESSAGES)
    assert content == whole.choices[0].message.content
    assert last.usage.completion_tokens_details.reasoning_tokens > 0
    # The usage chunk, the stream's last with a body, says what the stream was charged (docs/api.md
    # §8.1) in a field the SDK keeps as an extra.
    assert Decimal(last.model_extra["tollgate"]["charge"]) == chat_charge(MODEL, last.usage)
    assert (last.usage.prompt_tokens, last.usage.completion_tokens) == (whole.usage.prompt_tokens, whole.usage.completion_tokens)
    assert_paid(name, Decimal(10), chat_charge(MODEL, last.usage) + chat_charge(MODEL, whole.usage))


@pytest.mark.parametrize("keep_extras", [False, True], ids=["plain-history", "history-with-signature"])
def test_chat_tool_call_and_its_result(base_url, keep_extras):
    name, key = fresh_account("native-tools")
    c = oclient(base_url, key)
    messages = [{"role": "user", "content": "Look up the boiling point of water [call]"}]
    first = c.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls
    assert calls and len(calls) == 1, choice.message
    call = calls[0]
    assert call.type == "function" and call.function.name == "lookup" and call.id
    arguments = json.loads(call.function.arguments)
    assert isinstance(arguments, dict) and "boiling point" in arguments.get("query", ""), arguments

    if keep_extras:
        # What the SDK hands back, extensions (the thought signature) included.
        assistant = choice.message.model_dump(exclude_none=True)
    else:
        # What most clients write themselves: only the standard fields.
        assistant = {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": call.id, "type": "function", "function": {"name": "lookup", "arguments": call.function.arguments}}],
        }
    messages += [assistant, {"role": "tool", "tool_call_id": call.id, "content": json.dumps({"celsius": 100})}]
    second = c.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
    answer = second.choices[0]
    assert answer.finish_reason == "stop" and not answer.message.tool_calls
    # The tool message became a functionResponse named after the call it answers.
    assert answer.message.content.startswith('Simulated reply to "the result of lookup"'), answer.message.content
    assert_paid(name, Decimal(10), chat_charge(MODEL, first.usage) + chat_charge(MODEL, second.usage))


def test_chat_two_rounds_of_tool_calls_answer_the_right_function(base_url):
    """Each tool message becomes a functionResponse named after the call it answers, even when a
    later round calls another function."""
    name, key = fresh_account("native-tools-rounds")
    c = oclient(base_url, key)

    def tool(fn: str) -> dict:
        return {"type": "function", "function": {"name": fn, "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}}

    def call_round(messages: list, tools: list):
        response = c.chat.completions.create(model=MODEL, messages=messages, tools=tools)
        (call,) = response.choices[0].message.tool_calls
        assistant = {"role": "assistant", "content": None, "tool_calls": [
            {"id": call.id, "type": "function", "function": {"name": call.function.name, "arguments": call.function.arguments}}
        ]}
        return response, call, messages + [assistant, {"role": "tool", "tool_call_id": call.id, "content": "42"}]

    # The simulator calls the first declared function: swap the order to call the other one.
    first, call1, messages = call_round([{"role": "user", "content": "first [call]"}], [tool("lookup"), tool("weather")])
    assert call1.function.name == "lookup"
    second, call2, messages = call_round(messages + [{"role": "user", "content": "second [call]"}], [tool("weather"), tool("lookup")])
    assert call2.function.name == "weather"
    third = c.chat.completions.create(model=MODEL, messages=messages, tools=[tool("weather"), tool("lookup")])
    assert third.choices[0].message.content.startswith('Simulated reply to "the result of weather"')
    assert_paid(name, Decimal(10), sum((chat_charge(MODEL, r.usage) for r in (first, second, third)), Decimal(0)))


def test_chat_tool_call_streamed(base_url):
    name, key = fresh_account("native-tools-stream")
    chunks = list(
        oclient(base_url, key).chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": "Look up the boiling point of water [call]"}],
            tools=TOOLS,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    deltas = [tc for ch in chunks if ch.choices for tc in ch.choices[0].delta.tool_calls or []]
    assert deltas and deltas[0].function.name == "lookup" and deltas[0].id
    arguments = json.loads("".join(d.function.arguments or "" for d in deltas))
    assert "boiling point" in arguments["query"]
    assert [ch.choices[0].finish_reason for ch in chunks if ch.choices and ch.choices[0].finish_reason] == ["tool_calls"]
    assert chunks[-1].usage is not None
    assert_paid(name, Decimal(10), chat_charge(MODEL, chunks[-1].usage))


def test_chat_with_a_model_that_is_not_native(base_url):
    name, key = fresh_account("native-chat-err")
    c = oclient(base_url, key)
    for model in ("text-embedding-3-small", "tts-1", "gen-9-nonexistent"):
        with pytest.raises((openai.BadRequestError, openai.NotFoundError)) as caught:
            c.chat.completions.create(model=model, messages=MESSAGES)
        assert caught.value.status_code in (400, 404)
        assert caught.value.code == "model_not_found", caught.value.body
    with pytest.raises(openai.AuthenticationError):
        oclient(base_url, "tg-wrong").chat.completions.create(model=MODEL, messages=MESSAGES)
    assert_paid(name, Decimal(10), Decimal(0))


def test_openai_model_list_still_answers_bearer_clients(base_url, key):
    """`GET /v1/models` is shared with the native SDK's default API version: an OpenAI client
    (Bearer key) still gets the OpenAI list, which names the native models too."""
    ids = {m.id for m in oclient(base_url, key).models.list()}
    assert set(native_models()) <= ids, sorted(ids)
    assert oclient(base_url, key).models.retrieve(MODEL).id == MODEL


# ---- the openai SDK: the Responses API with a native model ----


def responses_charge(model: str, usage) -> Decimal:
    """Responses usage: input tokens at the input price, output tokens (reasoning included) at
    the output price."""
    return text_charge(model, usage.input_tokens, usage.output_tokens)


RESPONSE_TOOLS = [
    {
        "type": "function",
        "name": "lookup",
        "description": "Looks a fact up.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    }
]


def test_responses_create_with_a_native_model(base_url):
    name, key = fresh_account("responses")
    response = oclient(base_url, key).responses.create(model=MODEL, instructions="You are terse.", input=PROMPT)
    assert response.object == "response" and response.status == "completed"
    assert response.id.startswith("resp_")
    # The instructions went to the system instruction: the reply quotes the user's words.
    assert response.output_text.startswith(f'Simulated reply to "{PROMPT}"'), response.output_text
    assert_no_thought_text(response.output_text)
    usage = response.usage
    assert usage.output_tokens_details.reasoning_tokens > 0  # 2.5 thinks by default
    assert usage.output_tokens > usage.output_tokens_details.reasoning_tokens
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens
    # The same generation through chat completions agrees token for token.
    chat = oclient(base_url, key).chat.completions.create(model=MODEL, messages=MESSAGES)
    assert chat.choices[0].message.content == response.output_text
    assert (chat.usage.prompt_tokens, chat.usage.completion_tokens) == (usage.input_tokens, usage.output_tokens)
    assert_paid(name, Decimal(10), responses_charge(MODEL, usage) + chat_charge(MODEL, chat.usage))


def test_responses_input_tokens_count_what_create_is_billed_for_and_cost_nothing(base_url):
    name, key = fresh_account("responses-count")
    c = oclient(base_url, key)
    counted = c.responses.input_tokens.count(model=MODEL, instructions="You are terse.", input=PROMPT)
    assert counted.object == "response.input_tokens" and counted.input_tokens > 0
    before = account(name)["balance"]
    assert c.responses.input_tokens.count(model=MODEL, input=LONG_PROMPT).input_tokens > counted.input_tokens
    assert account(name)["balance"] == before
    # The count is the input the same request is billed for.
    response = c.responses.create(model=MODEL, instructions="You are terse.", input=PROMPT)
    assert response.usage.input_tokens == counted.input_tokens
    assert_paid(name, Decimal(10), responses_charge(MODEL, response.usage))
    # Refused as create refuses: the SDK's error, naming the field.
    with pytest.raises(openai.BadRequestError) as refused:
        c.responses.input_tokens.count(model=MODEL, input=PROMPT, previous_response_id="resp_1")
    assert refused.value.param == "previous_response_id", refused.value.body


def test_responses_stream_events_and_the_stream_helper(base_url):
    name, key = fresh_account("responses-stream")
    c = oclient(base_url, key)
    events = list(c.responses.create(model=MODEL, input=PROMPT, stream=True))
    types = [e.type for e in events]
    assert types[:2] == ["response.created", "response.in_progress"] and types[-1] == "response.completed", types
    assert [e.sequence_number for e in events] == list(range(len(events)))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert_no_thought_text(text)
    final = events[-1].response
    assert final.output_text == text and final.usage.output_tokens_details.reasoning_tokens > 0
    # `response.completed` says what the stream was charged (docs/api.md §8.1).
    charge = Decimal(events[-1].model_extra["tollgate"]["charge"])
    assert charge == text_charge(MODEL, final.usage.input_tokens, final.usage.output_tokens)

    # The SDK's accumulating helper checks indices and item kinds as it goes.
    with c.responses.stream(model=MODEL, input=PROMPT) as stream:
        deltas = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
        helped = stream.get_final_response()
    assert deltas == helped.output_text == text
    assert_paid(name, Decimal(10), responses_charge(MODEL, final.usage) + responses_charge(MODEL, helped.usage))


def test_responses_function_call_fed_back_as_output(base_url):
    name, key = fresh_account("responses-tools")
    c = oclient(base_url, key)
    conversation = [{"role": "user", "content": "Look up the boiling point of water [call]"}]
    first = c.responses.create(model=MODEL, input=conversation, tools=RESPONSE_TOOLS)
    calls = [item for item in first.output if item.type == "function_call"]
    assert len(calls) == 1, first.output
    call = calls[0]
    assert call.name == "lookup" and call.call_id
    assert "boiling point" in json.loads(call.arguments)["query"]
    # What the SDK documents: append the output items, then each call's output.
    conversation += first.output
    conversation.append({"type": "function_call_output", "call_id": call.call_id, "output": json.dumps({"celsius": 100})})
    second = c.responses.create(model=MODEL, input=conversation, tools=RESPONSE_TOOLS)
    assert second.output_text.startswith('Simulated reply to "the result of lookup"'), second.output_text
    assert not [item for item in second.output if item.type == "function_call"]

    # Streamed, the call arrives as its own item with its arguments.
    events = list(c.responses.create(model=MODEL, input=conversation[:1], tools=RESPONSE_TOOLS, stream=True))
    done = [e for e in events if e.type == "response.function_call_arguments.done"]
    assert len(done) == 1 and "boiling point" in json.loads(done[0].arguments)["query"]
    usage = events[-1].response.usage
    assert_paid(name, Decimal(10), sum((responses_charge(MODEL, r.usage) for r in (first, second)), Decimal(0)) + responses_charge(MODEL, usage))


def test_responses_errors_name_the_field_and_cost_nothing(base_url):
    name, key = fresh_account("responses-err")
    c = oclient(base_url, key)
    for kwargs, param in [
        ({"input": PROMPT, "previous_response_id": "resp_123"}, "previous_response_id"),
        ({"input": PROMPT, "tools": [{"type": "web_search"}]}, "tools[0].type"),
        ({"input": PROMPT, "max_output_tokens": 10_000_000}, "max_output_tokens"),
        ({"input": [{"type": "function_call_output", "call_id": "nope", "output": "x"}]}, "input[0].call_id"),
    ]:
        with pytest.raises(openai.BadRequestError) as caught:
            c.responses.create(model=MODEL, **kwargs)
        assert caught.value.param == param, caught.value.body
        assert param in caught.value.message
    with pytest.raises(openai.BadRequestError) as caught:
        c.responses.create(model="tts-1", input=PROMPT)
    assert caught.value.code == "model_not_found"
    assert_paid(name, Decimal(10), Decimal(0))
