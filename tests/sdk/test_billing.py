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
import time
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


def statement_of(name: str, key_file: Path, out: Path, start: str | None = None) -> dict:
    args = [os.environ["TOLLGATE_BIN"], "statement", name, "--out", str(out),
            "--database-url", os.environ["TOLLGATE_DATABASE_URL"]]
    if start is not None:
        args += ["--from", start]
    subprocess.run(args, check=True, capture_output=True, text=True,
                   env={**os.environ, "TOLLGATE_LEDGER_KEY_FILE": str(key_file)})
    return json.loads(out.read_text())


def tollgate_verify(path: Path, key: str) -> subprocess.CompletedProcess:
    return subprocess.run([os.environ["TOLLGATE_BIN"], "verify", str(path), "--key", key],
                          capture_output=True, text=True)


def amount(nanos: int) -> str:
    text = f"{Decimal(nanos).scaleb(-9):f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def rechain(doc: dict) -> None:
    """What a forger does after editing amounts: balances and every link recomputed."""
    sys.path.insert(0, str(ROOT / "docs"))
    from verify_statement import link
    prev, balance = doc["prev"], None
    for row in doc["rows"]:
        if balance is None:
            balance = row["balance_after_nanos"] - row["amount_nanos"]
        balance += row["amount_nanos"]
        row["balance_after_nanos"] = balance
        row["amount"] = amount(row["amount_nanos"])
        prev = row["hash"] = link(prev, row)
        if row["in_period"]:
            doc["closing_balance"] = amount(balance)


def test_every_forgery_is_refused_by_both_verifiers(base_url, tmp_path):
    """Issue 42 items 4 and 5: `tollgate verify --key` and docs/verify_statement.py agree on a
    genuine statement and on each forgery — a statement that nothing signs, a charge ×1000
    re-chained with or without its checkpoint, the period or a row's in_period edited, the
    key's id standing for the key, another account's proof, a bent proof, an edited root, a
    checkpoint re-signed by another key, a closing balance edited, the row before the period
    dropped, rows cut before the head, the old format."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    import hashlib

    names = [f"forged-{next(_names)}" for _ in range(2)]
    for name in names:
        key = new_key(name, "1")
        for text in ("one", "two", "three"):
            client(base_url, key).embeddings.create(model="text-embedding-3-small", input=text)
    key_file = tmp_path / "ledger.key"
    made = subprocess.run([os.environ["TOLLGATE_BIN"], "ledger", "keygen", "--out", str(key_file)],
                          check=True, capture_output=True, text=True).stdout
    public = next(l.split()[-1] for l in made.splitlines() if l.startswith("public key"))
    key_id = next(l.split()[-1] for l in made.splitlines() if l.startswith("key id"))
    whole = statement_of(names[0], key_file, tmp_path / "whole.json")
    # A period that starts after the account's first row: the statement opens on that row.
    second = whole["rows"][1]["created_at"]
    start = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second // 1000)) + f".{second % 1000:03d}Z"
    genuine = statement_of(names[0], key_file, tmp_path / "genuine.json", start)
    other = statement_of(names[1], key_file, tmp_path / "other.json")
    assert genuine["rows"][0]["in_period"] is False, "it opens on the row before the period"
    assert genuine["checkpoint"] and "heads" not in genuine["checkpoint"], "no other account disclosed"
    assert genuine["proof"]["account_id"] == genuine["account_id"]
    charge = next(i for i, r in enumerate(genuine["rows"]) if r["kind"] == "charge" and r["in_period"])

    def times_1000(d, keep_checkpoint):
        d["rows"][charge]["amount_nanos"] *= 1000
        rechain(d)
        if not keep_checkpoint:
            d["checkpoint"] = d["proof"] = None

    def resigned(d):
        forger = Ed25519PrivateKey.generate()
        raw = forger.public_key().public_bytes_raw()
        cp = d["checkpoint"]
        cp["public_key"] = raw.hex()
        cp["key_id"] = hashlib.sha256(raw).hexdigest()[:16]
        text = f"tollgate-checkpoint-v2\n{cp['id']}\n{cp['created_at']}\n{cp['accounts']}\n{cp['root']}\n"
        cp["signature"] = forger.sign(text.encode()).hex()

    def bent(d):
        path = d["proof"]["path"]
        assert path, "several accounts: the proof has a path"
        path[0] = ("0" if path[0][0] != "0" else "1") + path[0][1:]

    def drop_opening(d):
        d["prev"] = d["rows"][0]["hash"]
        d["rows"].pop(0)

    forgeries = {
        "checkpoint removed": lambda d: d.update(checkpoint=None, proof=None),
        "a charge ×1000, re-chained, no checkpoint": lambda d: times_1000(d, False),
        "a charge ×1000, re-chained": lambda d: times_1000(d, True),
        "period edited": lambda d: d.update(until=d["rows"][charge]["created_at"]),
        "in_period flipped": lambda d: d["rows"][charge].update(in_period=False),
        "another account's proof": lambda d: d.update(proof=other["proof"], checkpoint=other["checkpoint"]),
        "proof bent": bent,
        "root edited": lambda d: d["checkpoint"].update(root="00" * 32),
        "re-signed by another key": resigned,
        "closing balance edited": lambda d: d.update(closing_balance="1000"),
        "the row before the period dropped": drop_opening,
        "rows cut before the head": lambda d: d["rows"].pop(),
        "the old format": lambda d: d.update(format="tollgate-statement-v1"),
    }
    path = tmp_path / "genuine.json"
    assert verify(path, public).returncode == 0, verify(path, public).stderr
    assert tollgate_verify(path, public).returncode == 0, tollgate_verify(path, public).stderr
    # The key's id never stands for the key.
    assert verify(path, key_id).returncode != 0
    assert tollgate_verify(path, key_id).returncode != 0
    assert len(forgeries) >= 10
    for label, forge in forgeries.items():
        copy = json.loads(json.dumps(genuine))
        forge(copy)
        forged = tmp_path / f"{label.replace(' ', '-')}.json"
        forged.write_text(json.dumps(copy))
        by_python, by_tollgate = verify(forged, public), tollgate_verify(forged, public)
        assert by_python.returncode != 0, f"{label}: docs/verify_statement.py passed it"
        assert by_tollgate.returncode != 0, f"{label}: tollgate verify passed it: {by_tollgate.stdout}"
        assert "NOT VERIFIED" in by_python.stderr, f"{label}: {by_python.stderr}"
        assert "NOT VERIFIED" in by_tollgate.stderr + by_tollgate.stdout, f"{label}: {by_tollgate.stderr}"
