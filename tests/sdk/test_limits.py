"""Rate limits and spend caps as the OpenAI SDK sees them (docs/decisions.md, "Rate limits and
spend caps"): a rate limit is a RateLimitError the SDK retries after the gateway's Retry-After
and then succeeds in the next window; a spend cap is a RateLimitError with the
`insufficient_quota` code that the SDK does not retry (x-should-retry: false); the
x-ratelimit-* headers on every answer of a limited key."""

import itertools
import time

import httpx
import openai
import pytest

from conftest import account, cli, new_key

_names = itertools.count()


def fresh(prefix: str, balance: str = "1") -> tuple[str, str, str]:
    """A new account: its name, its key's secret, and the key's id."""
    name = f"{prefix}-{next(_names)}"
    secret = new_key(name, balance)
    return name, secret, account(name)["keys"][0]["id"]


def test_the_rate_limit_headers_are_on_every_answer_of_a_limited_key(base_url):
    _, secret, key_id = fresh("limits-headers")
    cli("policy", "set", key_id, "--rpm", "1000", "--per-minute", "tokens=100000")
    c = openai.OpenAI(base_url=f"{base_url}/v1", api_key=secret, max_retries=0)
    raw = c.embeddings.with_raw_response.create(model="text-embedding-3-small", input="Hello.")
    assert raw.parse().data
    h = raw.headers
    assert h["x-ratelimit-limit-requests"] == "1000"
    assert int(h["x-ratelimit-remaining-requests"]) <= 999
    assert h["x-ratelimit-reset-requests"].endswith("s")
    assert h["x-ratelimit-limit-tokens"] == "100000"
    assert int(h["x-ratelimit-remaining-tokens"]) < 100000


def test_a_spend_cap_is_insufficient_quota_and_is_not_retried(base_url):
    _, secret, key_id = fresh("limits-budget")
    # Less than one request's hold.
    cli("policy", "set", key_id, "--daily-budget", "0.000000001")
    c = openai.OpenAI(base_url=f"{base_url}/v1", api_key=secret, max_retries=2)
    started = time.monotonic()
    with pytest.raises(openai.RateLimitError) as caught:
        c.embeddings.create(model="text-embedding-3-small", input="Over budget.")
    assert caught.value.code == "insufficient_quota"
    assert "daily budget" in caught.value.message
    assert caught.value.response.headers["x-should-retry"] == "false"
    # One request, not three: the SDK read x-should-retry.
    assert caught.value.response.request.headers.get("x-stainless-retry-count") in (None, "0")
    assert time.monotonic() - started < 5


def test_the_sdk_retries_a_rate_limit_after_retry_after_and_succeeds_in_the_next_window(base_url):
    _, secret, key_id = fresh("limits-retry")
    cli("policy", "set", key_id, "--rpm", "1")
    # Start near the end of a minute, so that Retry-After is short and the retry lands in the
    # next window (the SDK only honours a Retry-After of 60 s or less, and waits it out).
    left = 60 - time.time() % 60
    if left > 6:
        time.sleep(left - 4)
    c = openai.OpenAI(base_url=f"{base_url}/v1", api_key=secret, max_retries=2)
    assert c.embeddings.create(model="text-embedding-3-small", input="First.").data
    # Refused once, then retried by the SDK after the gateway's Retry-After.
    probe = httpx.post(
        f"{base_url}/v1/embeddings",
        headers={"authorization": f"Bearer {secret}"},
        json={"model": "text-embedding-3-small", "input": "Probe."},
    )
    if probe.status_code == 200:
        pytest.skip("the minute rolled over between the two requests; nothing to retry")
    assert probe.status_code == 429
    assert probe.json()["error"]["code"] == "rate_limit_exceeded"
    retry_after = int(probe.headers["retry-after"])
    assert 1 <= retry_after <= 6, retry_after
    assert probe.headers["x-ratelimit-remaining-requests"] == "0"
    started = time.monotonic()
    raw = c.embeddings.with_raw_response.create(model="text-embedding-3-small", input="Second.")
    waited = time.monotonic() - started
    assert raw.parse().data
    assert raw.http_request.headers.get("x-stainless-retry-count") in ("1", "2")
    # It waited for the window, not its own short backoff.
    assert waited >= retry_after - 1.5, (waited, retry_after)
