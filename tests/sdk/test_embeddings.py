"""`openai` SDK → tollgate `/v1/embeddings` (issue: the workspace and embeddings end to end)."""

import base64
import itertools
import json
import math
import struct
from decimal import Decimal

import openai
import pytest

from conftest import balance, new_key

# text-embedding-3-small in the embedded default: 0.02 per million tokens.
PRICE_PER_TOKEN = Decimal("0.02") / Decimal(1_000_000)
_names = itertools.count()


def client(base_url: str, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{base_url}/v1", api_key=key, max_retries=0)


def norm(v) -> float:
    return math.sqrt(sum(x * x for x in v))


def test_default_call_sends_base64_and_decodes_unit_vectors(base_url, key):
    c = client(base_url, key)
    raw = c.embeddings.with_raw_response.create(model="text-embedding-3-small", input="hello world")
    # The SDK asked for base64 on its own; the wire carried a string, not a float list.
    wire = json.loads(raw.http_response.text)
    assert isinstance(wire["data"][0]["embedding"], str)
    assert len(base64.b64decode(wire["data"][0]["embedding"])) == 4 * 1536
    response = raw.parse()
    vector = response.data[0].embedding
    assert len(vector) == 1536
    assert abs(norm(vector) - 1.0) < 1e-4
    assert response.usage.prompt_tokens == 2
    assert response.model == "text-embedding-3-small"
    assert raw.headers.get("x-request-id")


def test_float_encoding(base_url, key):
    c = client(base_url, key)
    raw = c.embeddings.with_raw_response.create(
        model="text-embedding-3-large", input="floats please", encoding_format="float"
    )
    wire = json.loads(raw.http_response.text)
    assert isinstance(wire["data"][0]["embedding"], list)
    vector = raw.parse().data[0].embedding
    assert len(vector) == 3072
    # The float and base64 forms of the same input are the same float32 values.
    b64 = c.embeddings.create(model="text-embedding-3-large", input="floats please").data[0].embedding
    assert [struct.unpack("f", struct.pack("f", x))[0] for x in vector] == pytest.approx(b64, abs=0)


def test_dimensions_on_a_batch_keeps_order_and_unit_norm(base_url, key):
    c = client(base_url, key)
    inputs = ["first input", "second, longer input text", "third"]
    response = c.embeddings.create(model="text-embedding-3-small", input=inputs, dimensions=256)
    assert [d.index for d in response.data] == [0, 1, 2]
    for d in response.data:
        assert len(d.embedding) == 256
        assert abs(norm(d.embedding) - 1.0) < 1e-4
    # Order follows the input: each item equals the same text embedded alone.
    alone = c.embeddings.create(model="text-embedding-3-small", input=inputs[1], dimensions=256)
    assert alone.data[0].embedding == pytest.approx(response.data[1].embedding, abs=1e-7)


def test_charge_is_exactly_tokens_times_price(base_url):
    name = f"sdk-charge-{next(_names)}"
    key = new_key(name, "1")
    c = client(base_url, key)
    tokens = 0
    for text in ["one", "two words", "a somewhat longer sentence to embed"]:
        tokens += c.embeddings.create(model="text-embedding-3-small", input=text).usage.prompt_tokens
    assert balance(name) == Decimal(1) - tokens * PRICE_PER_TOKEN


def test_invalid_key_raises_authentication_error(base_url):
    with pytest.raises(openai.AuthenticationError) as caught:
        client(base_url, "tg-not-a-real-key").embeddings.create(model="text-embedding-3-small", input="x")
    assert caught.value.status_code == 401
    assert caught.value.code == "invalid_api_key"


def test_small_balance_raises_rate_limit_insufficient_quota(base_url):
    key = new_key(f"sdk-poor-{next(_names)}", "0.000000001")
    with pytest.raises(openai.RateLimitError) as caught:
        client(base_url, key).embeddings.create(model="text-embedding-3-small", input="hello world")
    assert caught.value.code == "insufficient_quota"


def test_bad_request_names_the_field(base_url, key):
    with pytest.raises(openai.BadRequestError) as caught:
        client(base_url, key).embeddings.create(model="text-embedding-3-small", input=["ok", ""])
    assert caught.value.param == "input[1]"
    with pytest.raises(openai.BadRequestError) as caught:
        client(base_url, key).embeddings.create(model="no-such-model", input="x")
    assert caught.value.param == "model"
    assert caught.value.code == "model_not_found"
