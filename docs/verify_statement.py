#!/usr/bin/env python3
"""Checks a tollgate statement without tollgate: python3 verify_statement.py FILE [--key HEX].
Every row must link to the one before (docs/architecture.md, "The chained ledger"), follow it
in seq and balance, be in the period exactly when its time is, and the chain must end at the
head that the statement's inclusion proof puts under the Merkle root the checkpoint signed with
an Ed25519 key. --key (the public key /.well-known/tollgate-ledger-keys publishes; never a key
id) also requires a checkpoint: rows nobody signed prove nothing. Needs `cryptography`.
The same rules as `tollgate verify` (crates/store/src/statement.rs)."""
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

def node(left, right):
    return hashlib.sha256(b"\x01" + left + right).digest()

def included(index, size, leaf, path, root):
    """RFC 9162 section 2.1.3.2: the inclusion proof of a leaf hash."""
    if index >= size:
        return False
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node(p, r)
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn, sn = fn >> 1, sn >> 1
        else:
            r = node(r, p)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and r == root

def fail(why):
    sys.exit(f"NOT VERIFIED: {why}")

def nanos(text):
    return int(Decimal(text) * 10**9)

def main(path, key=None):
    doc = json.load(open(path, encoding="utf-8"))
    if doc.get("format") != "tollgate-statement-v2":
        fail(f"not a tollgate-statement-v2 document: {doc.get('format')!r}")
    start, end = doc["from"], doc["until"]
    if start > end:
        fail("the period starts after it ends")
    prev, balance, last, opening, closing = doc["prev"], None, None, None, None
    for n, row in enumerate(doc["rows"], 1):
        where = f"row {n} ({row['id']}, seq {row['seq']})"
        if row["account_id"] != doc["account_id"]:
            fail(f"{where}: belongs to {row['account_id']}")
        if last is not None and row["seq"] != last + 1:
            fail(f"{where}: seq {row['seq']} follows {last}")
        if last is None and doc["prev"] == "" and row["seq"] != 1:
            fail(f"{where}: the chain starts here, but at seq {row['seq']}")
        if nanos(row["amount"]) != row["amount_nanos"]:
            fail(f"{where}: amount {row['amount']} is not amount_nanos {row['amount_nanos']}")
        before = row["balance_after_nanos"] - row["amount_nanos"] if balance is None else balance
        balance = before + row["amount_nanos"]
        if balance != row["balance_after_nanos"]:
            fail(f"{where}: the balance after it should be {balance}")
        in_period = start <= row["created_at"] < end
        if row["in_period"] != in_period:
            fail(f"{where}: marked {'in' if row['in_period'] else 'outside'} the period, but its time is not")
        if n == 1 and doc["prev"] != "" and in_period:
            fail(f"{where}: the statement starts inside the period; the row before it is missing")
        if in_period:
            opening = before if opening is None else opening
            closing = balance
        prev, last = link(prev, row), row["seq"]
        if prev != row["hash"]:
            fail(f"{where}: its columns and the link before it hash to {prev}, not {row['hash']}")
    quiet = None
    for row in doc["rows"]:
        if row["created_at"] >= start:
            break
        quiet = row["balance_after_nanos"]
    for name, found in (("opening", opening if opening is not None else quiet),
                        ("closing", closing if closing is not None else quiet)):
        if found is not None and found != nanos(doc[f"{name}_balance"]):
            fail(f"the {name} balance {doc[f'{name}_balance']} is not the rows' {found}")
    rows = sum(r["in_period"] for r in doc["rows"])
    cp = doc.get("checkpoint")
    if cp is None:
        if key is not None:
            fail("no signed checkpoint covers the statement")
        return print(f"verified: {rows} row(s) chain together; no checkpoint signs them")
    if key is not None and key.strip().lower() != cp["public_key"].lower():
        fail(f"checkpoint {cp['id']} is not signed by the key you trust")
    if cp.get("version", 1) != 2:
        fail(f"checkpoint {cp['id']} is not of version 2")
    public = bytes.fromhex(cp["public_key"])
    if hashlib.sha256(public).hexdigest()[:16] != cp["key_id"]:
        fail("the checkpoint's key id does not name its key")
    text = f"tollgate-checkpoint-v2\n{cp['id']}\n{cp['created_at']}\n{cp['accounts']}\n{cp['root']}\n"
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(bytes.fromhex(cp["signature"]), text.encode())
    except Exception:
        fail(f"checkpoint {cp['id']}: the signature does not verify")
    proof = doc.get("proof")
    if proof is None:
        fail("the checkpoint comes without the proof of this account's head")
    if proof["account_id"] != doc["account_id"]:
        fail(f"the proof is of account {proof['account_id']}")
    leaf = hashlib.sha256(b"\x00" + f"{proof['account_id']} {proof['seq']} {proof['hash']}".encode()).digest()
    try:
        path_ok = included(proof["index"], cp["accounts"], leaf, [bytes.fromhex(p) for p in proof["path"]],
                           bytes.fromhex(cp["root"]))
    except ValueError:
        path_ok = False
    if not path_ok:
        fail(f"the proof does not put seq {proof['seq']} under the root checkpoint {cp['id']} signed")
    rows_doc = doc["rows"]
    reached = (rows_doc[-1]["seq"] == proof["seq"] and rows_doc[-1]["hash"] == proof["hash"]) if rows_doc \
        else doc["prev"] == proof["hash"]
    if not reached:
        fail(f"checkpoint {cp['id']} signed seq {proof['seq']}; the chain does not end there — rewritten or cut")
    print(f"verified: {rows} row(s), checkpoint {cp['id']} by key {cp['key_id']}")

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--key" else None)
