"""Access policies and price groups as the vendors' SDKs see them (docs/decisions.md, "Access
policies", "Price groups"): the OpenAI SDK's typed errors for a model or endpoint the key may not
use and for an expired key, its model listing narrowed to what the key may use, the native SDK's
403, and a price group's charge on the account."""

import itertools
import json
from decimal import Decimal

import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from conftest import account, cli, new_key

_names = itertools.count()


def fresh(prefix: str, balance: str = "1") -> tuple[str, str, str]:
    """A new account: its name, its key's secret, and the key's id."""
    name = f"{prefix}-{next(_names)}"
    secret = new_key(name, balance)
    return name, secret, account(name)["keys"][0]["id"]


def oclient(base_url: str, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{base_url}/v1", api_key=key, max_retries=2)


def test_a_model_the_key_may_not_use_is_a_typed_403_that_the_sdk_does_not_retry(base_url):
    name, secret, key_id = fresh("policy-model")
    cli("policy", "set", key_id, "--models", "text-embedding-*")
    c = oclient(base_url, secret)
    assert c.embeddings.create(model="text-embedding-3-small", input="allowed").data
    with pytest.raises(openai.PermissionDeniedError) as caught:
        c.audio.speech.create(model="tts-1", voice="alloy", input="Not for this key.")
    assert caught.value.status_code == 403
    assert caught.value.code == "model_not_allowed"
    assert "speech-2.8-turbo" in caught.value.message  # the alias, resolved
    # One request, not three: 403 is final for the SDK.
    assert caught.value.response.request.headers.get("x-stainless-retry-count") in (None, "0")
    listed = {m.id for m in c.models.list()}
    assert "text-embedding-3-small" in listed and "tts-1" not in listed
    assert all(m.startswith("text-embedding-") for m in listed), listed
    # Nothing was held or charged for the refused request.
    state = account(name)
    assert state["open_holds"] == 0
    assert [u["model"] for u in state["usage"]] == ["text-embedding-3-small"]


def test_an_endpoint_the_key_may_not_use_and_an_expired_key(base_url):
    _, secret, key_id = fresh("policy-endpoint")
    cli("policy", "set", key_id, "--endpoints", "speech")
    c = oclient(base_url, secret)
    with pytest.raises(openai.PermissionDeniedError) as caught:
        c.embeddings.create(model="text-embedding-3-small", input="no")
    assert caught.value.code == "endpoint_not_allowed"

    _, secret, key_id = fresh("policy-expired")
    cli("policy", "set", key_id, "--expires", "2020-01-01T00:00:00Z")
    with pytest.raises(openai.AuthenticationError) as caught:
        oclient(base_url, secret).embeddings.create(model="text-embedding-3-small", input="late")
    assert caught.value.status_code == 401 and caught.value.code == "api_key_expired"


def test_the_native_sdk_sees_permission_denied(base_url):
    _, secret, key_id = fresh("policy-native")
    cli("policy", "set", key_id, "--models", "gen-2.0-*")
    c = genai.Client(api_key=secret, http_options=types.HttpOptions(base_url=base_url, api_version="v1beta"))
    allowed = c.models.generate_content(model="gen-2.0-flash", contents="Hi")
    assert allowed.text
    with pytest.raises(genai_errors.ClientError) as caught:
        c.models.generate_content(model="gen-2.5-flash", contents="Hi")
    assert caught.value.code == 403 and caught.value.status == "PERMISSION_DENIED", caught.value.details
    names = {m.name for m in c.models.list()}
    assert names == {"models/gen-2.0-flash"}, names


def test_a_price_group_charges_its_multiple_exactly(base_url):
    cli("groups", "set", "sdk-half", "--multiplier", "0.5")
    listed, listed_key, _ = fresh("group-list", "1")
    halved, halved_key, _ = fresh("group-half", "1")
    cli("policy", "set", halved, "--group", "sdk-half")
    text = "The same request at two prices."
    for key in (listed_key, halved_key):
        oclient(base_url, key).embeddings.create(model="text-embedding-3-small", input=text)

    def charged(name: str) -> Decimal:
        usage = account(name)["usage"]
        return sum((Decimal(u["charged"]) for u in usage), Decimal(0))

    assert charged(listed) > 0
    assert charged(halved) * 2 == charged(listed)
    shown = json.loads(cli("policy", "show", halved, "--json"))
    assert shown["group"] == "sdk-half"
