"""Alerts as a receiver sees them, verified by the Standard Webhooks reference library
(`standardwebhooks`), not by tollgate's own code: an operator's correction takes an account's
balance under a rule's threshold, the gateway posts one signed `alert.fired` event, and a
restored balance one `alert.resolved` (docs/operations.md, "Alerts")."""

import http.server
import json
import os
import threading
import time
import uuid

import httpx
import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from conftest import cli, new_key


class Receiver(http.server.BaseHTTPRequestHandler):
    posts: list = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["content-length"]))
        Receiver.posts.append((dict(self.headers), body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def receiver():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Receiver.posts = []
    yield f"http://127.0.0.1:{server.server_address[1]}/hook"
    server.shutdown()


def wait_for(n: int, within: float = 15.0) -> list:
    deadline = time.time() + within
    while len(Receiver.posts) < n and time.time() < deadline:
        time.sleep(0.1)
    assert len(Receiver.posts) >= n, Receiver.posts
    return Receiver.posts


def test_a_signed_alert_verifies_with_the_reference_library(base_url, receiver):
    name = f"alerts-{uuid.uuid4().hex[:8]}"
    new_key(name, "10")
    token = cli("admin", "token", "create", "--name", name).strip()
    admin = httpx.Client(base_url=base_url, headers={"authorization": f"Bearer {token}"})
    rule = {
        "name": name,
        "when": "balance_below",
        "threshold": "5",
        "account": name,
        "webhook_url": receiver,
        "secret_env": "TOLLGATE_SDK_ALERT_SECRET",
    }
    assert admin.post("/admin/v1/alerts", json=rule).status_code == 201
    # The operator's correction: a negative credit.
    account_id = admin.get(f"/admin/v1/accounts/{name}").json()["id"]
    r = admin.post(f"/admin/v1/accounts/{account_id}/credits", json={"amount": "-6", "reason": "correction"})
    assert r.status_code == 201, r.text

    hook = Webhook(os.environ["TOLLGATE_SDK_ALERT_SECRET"])
    headers, body = wait_for(1)[0]
    event = hook.verify(body, headers)
    assert event["type"] == "alert.fired"
    assert event["data"]["rule"] == name
    assert event["data"]["facts"]["balance"] == "4"
    assert headers["webhook-id"].startswith("msg_")
    # The library refuses what was not signed with the secret, or was changed.
    with pytest.raises(WebhookVerificationError):
        hook.verify(body.replace(b'"4"', b'"40"'), headers)
    with pytest.raises(WebhookVerificationError):
        Webhook("whsec_" + "A" * 32).verify(body, headers)

    r = admin.post(f"/admin/v1/accounts/{account_id}/credits", json={"amount": "10", "reason": "top-up"})
    assert r.status_code == 201, r.text
    headers, body = wait_for(2)[1]
    assert hook.verify(body, headers)["type"] == "alert.resolved"
    time.sleep(1.5)
    assert len(Receiver.posts) == 2, "one event each way"
    deliveries = admin.get("/admin/v1/alerts/deliveries", params={"rule": name}).json()["data"]
    assert [d["state"] for d in deliveries] == ["delivered", "delivered"]
    assert admin.delete(f"/admin/v1/alerts/{name}").status_code == 200
