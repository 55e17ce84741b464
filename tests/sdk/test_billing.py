"""Billing anyone can check (docs/architecture.md, "Prices", "Explanations", "The chained
ledger"), as a client and a customer meet it: the charge in a whole answer's headers, read by the
OpenAI SDK; the same charge explained at GET /v1/charges/{request_id}, for the key that made the
request only; and a statement exported with the CLI that docs/verify_statement.py checks
without tollgate — and refuses once a row is edited, dropped or reordered."""

import itertools
import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import httpx
import openai

from conftest import cli, new_key

ROOT = Path(__file__).resolve().parents[2]
_names = itertools.count()


def client(base_url: str, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{base_url}/v1", api_key=key, max_retries=0)


def test_a_whole_answer_says_its_charge_and_the_charge_explains_itself(base_url):
    key = new_key(f"billing-{next(_names)}", "1")
    raw = client(base_url, key).embeddings.with_raw_response.create(
        model="text-embedding-3-small", input="what did this cost"
    )
    assert raw.parse().usage.prompt_tokens > 0
    charge = Decimal(raw.headers["x-tollgate-charge"])
    tokens = raw.parse().usage.prompt_tokens
    assert raw.headers["x-tollgate-units"] == f"tokens={tokens}"
    assert raw.headers["x-tollgate-price"] == "text-embedding-3-small@1"
    # 0.02 per million tokens in the embedded default, rounded up to the nano-unit once.
    assert charge == Decimal("0.02") * tokens / 1_000_000

    request_id = raw.headers["x-request-id"]
    answer = httpx.get(f"{base_url}/v1/charges/{request_id}", headers={"Authorization": f"Bearer {key}"})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["object"] == "tollgate.charges"
    assert Decimal(body["charged"]) == charge
    [explained] = body["data"]
    assert explained["quantity"] == {"tokens": tokens}
    assert explained["measured"] == "vendor"
    assert explained["price_version"] == 1
    assert explained["tariff"] == {"meter": "tokens", "per_million_tokens": "0.02"}
    assert explained["rounding"] == "up to the nano-unit, once"
    assert Decimal(explained["priced"]) == charge
    assert Decimal(explained["bound"]) == 2 * Decimal(explained["hold"])
    assert explained["cut_by_bound"] is False

    # Another key's request does not exist for this one.
    other = new_key(f"billing-{next(_names)}", "1")
    refused = httpx.get(f"{base_url}/v1/charges/{request_id}", headers={"Authorization": f"Bearer {other}"})
    assert refused.status_code == 404
    assert refused.json()["error"]["param"] == "request_id"


def verify(path: Path, key: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "docs" / "verify_statement.py"), str(path), "--key", key],
        capture_output=True,
        text=True,
    )


def test_a_statement_verifies_without_tollgate_and_an_edit_does_not(base_url, tmp_path):
    name = f"statement-{next(_names)}"
    key = new_key(name, "1")
    c = client(base_url, key)
    for text in ("one", "two", "three"):
        c.embeddings.create(model="text-embedding-3-small", input=text)
    cli("keys", "credit", name, "0.5", "--reason", "top-up")

    key_file = tmp_path / "ledger.key"
    made = subprocess.run(
        [os.environ["TOLLGATE_BIN"], "ledger", "keygen", "--out", str(key_file)],
        check=True, capture_output=True, text=True,
    ).stdout
    public = next(l.split()[-1] for l in made.splitlines() if l.startswith("public key"))
    statement = tmp_path / "statement.json"
    subprocess.run(
        [os.environ["TOLLGATE_BIN"], "statement", name, "--out", str(statement),
         "--database-url", os.environ["TOLLGATE_DATABASE_URL"]],
        check=True, capture_output=True, text=True,
        env={**os.environ, "TOLLGATE_LEDGER_KEY_FILE": str(key_file)},
    )
    checked = verify(statement, public)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "verified: 5 row(s)" in checked.stdout

    document = json.loads(statement.read_text())
    edits = {
        "edited": lambda d: d["rows"][1].update(note="free of charge"),
        "dropped": lambda d: d["rows"].pop(2),
        "reordered": lambda d: d["rows"].insert(1, d["rows"].pop(2)),
    }
    for label, edit in edits.items():
        copy = json.loads(json.dumps(document))
        edit(copy)
        path = tmp_path / f"{label}.json"
        path.write_text(json.dumps(copy))
        refused = verify(path, public)
        assert refused.returncode != 0, f"{label}: {refused.stdout}"
        assert "NOT VERIFIED" in refused.stderr, refused.stderr
    # A key nobody published: refused too.
    assert verify(statement, "11" * 32).returncode != 0
