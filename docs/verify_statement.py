#!/usr/bin/env python3
"""Checks a tollgate statement without tollgate: python3 verify_statement.py FILE [--key HEX].
Every row must link to the one before (docs/architecture.md, "The chained ledger"), follow it
in seq and balance, and the chain must reach the head the checkpoint signed with an Ed25519 key
(--key: the one /.well-known/tollgate-ledger-keys publishes). Needs `cryptography`."""
import hashlib, json, sys
from decimal import Decimal
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

COLUMNS = ("id account_id seq kind amount_nanos balance_after_nanos model quantity hold_id task_id "
           "key_id request_id lease_id estimated note anomaly price_group price_multiplier "
           "price_version bound_nanos loss_nanos overdraw_nanos created_at").split()

def link(prev, row):
    out = b"tollgate-ledger-v1\n" + prev.encode() + b"\n"
    for column in COLUMNS:
        value = row.get(column)
        text = None if value is None else str(value).encode()
        out += b"~," if text is None else str(len(text)).encode() + b":" + text + b","
    return hashlib.sha256(out).hexdigest()

def fail(why):
    sys.exit(f"NOT VERIFIED: {why}")

def main(path, key=None):
    doc = json.load(open(path, encoding="utf-8"))
    if doc.get("format") != "tollgate-statement-v1":
        fail("not a tollgate-statement-v1 document")
    prev, balance, last = doc["prev"], int(Decimal(doc["opening_balance"]) * 10**9), None
    for n, row in enumerate(doc["rows"], 1):
        where = f"row {n} ({row['id']}, seq {row['seq']})"
        if row["account_id"] != doc["account_id"] or (last is not None and row["seq"] != last + 1):
            fail(f"{where}: not the next row of the account's chain")
        if int(Decimal(row["amount"]) * 10**9) != row["amount_nanos"]:
            fail(f"{where}: amount {row['amount']} is not amount_nanos {row['amount_nanos']}")
        balance += row["amount_nanos"]
        if balance != row["balance_after_nanos"]:
            fail(f"{where}: the balance after it should be {balance}")
        prev, last = link(prev, row), row["seq"]
        if prev != row["hash"]:
            fail(f"{where}: its columns and the link before it hash to {prev}, not {row['hash']}")
    cp = doc.get("checkpoint")
    if cp is None:
        return print(f"verified: {len(doc['rows'])} row(s) chain together; no checkpoint signs them")
    public = bytes.fromhex(cp["public_key"])
    if key is not None and key.lower() != cp["public_key"]:
        fail(f"checkpoint {cp['id']} is not signed by the key you trust")
    if hashlib.sha256(public).hexdigest()[:16] != cp["key_id"]:
        fail("the checkpoint's key id does not name its key")
    text = f"tollgate-checkpoint-v1\n{cp['id']}\n{cp['created_at']}\n"
    text += "".join(f"{a} {seq} {h}\n" for a, (seq, h) in sorted(cp["heads"].items()))
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(bytes.fromhex(cp["signature"]), text.encode())
    except Exception:
        fail(f"checkpoint {cp['id']}: the signature does not verify")
    seq, head = cp["heads"][doc["account_id"]]
    if not any(r["seq"] == seq and r["hash"] == head for r in doc["rows"]) and not (not doc["rows"] and head == doc["prev"]):
        fail(f"checkpoint {cp['id']} signed seq {seq} as {head}; the chain does not reach it — rewritten")
    print(f"verified: {sum(r['in_period'] for r in doc['rows'])} row(s), checkpoint {cp['id']} by key {cp['key_id']}")

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--key" else None)
