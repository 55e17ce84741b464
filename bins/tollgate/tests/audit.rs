//! `tollgate audit` checks what an outside checker of the tables would (issue 22, item 15;
//! `docs/decisions.md`, "What the audit checks"): a database with real charges, usage records, a
//! credit and a correction is audited clean; then copies of it are corrupted the ways an
//! intruder, a bad restore or a bug would — a duplicate charge, a missing or altered usage
//! record, a record with no charge, a broken `balance_after` chain, a charge deleted with the
//! balance patched to match, a negative balance nothing explains — and the audit names each.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use support::Scratch;
use tollgate_billing::Amount;
use tollgate_store::{
    ChargeMemo, ChargeRow, JournalEntry, JournalWriter, LeaseOp, LeaseOutcome, Store, UsageRecord,
    new_id,
};

/// `tollgate audit --json` on an SQLite file: the report and whether it passed.
fn audit(db: &Path) -> (serde_json::Value, bool) {
    support::audit(&format!("sqlite://{}", db.display()), None)
}

fn rules(report: &serde_json::Value) -> Vec<String> {
    let mut rules: Vec<String> = report["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["rule"].as_str().unwrap().to_owned())
        .collect();
    rules.dedup();
    rules
}

/// A charge of `nanos` on `lease`, with the usage record the gateway journals beside it.
fn charge(account: &str, lease: &str, nanos: i64) -> [JournalEntry; 2] {
    let hold = new_id("hold");
    let mut record = UsageRecord::new("request", account.to_owned(), "embeddings");
    record.charge = Amount::from_nanos(nanos);
    record.hold_id = Some(hold.clone());
    [
        JournalEntry::Charge(ChargeRow {
            hold_id: hold,
            account_id: account.to_owned(),
            lease_id: Some(lease.to_owned()),
            amount: Amount::from_nanos(nanos),
            from_lease: Amount::from_nanos(nanos),
            memo: ChargeMemo {
                model: "text-embedding-3-small".into(),
                ..ChargeMemo::default()
            },
        }),
        JournalEntry::Usage(record),
    ]
}

/// A database with some history: an account credited, leased, charged in two batches, given
/// back its lease, credited again and corrected.
async fn history(db: &Path) -> String {
    let store = Store::connect(&format!("sqlite://{}", db.display()))
        .await
        .unwrap();
    let (account, _) = store
        .create_account("audited", Amount::from_nanos(1_000_000))
        .await
        .unwrap();
    let writer = JournalWriter {
        owner: "replica_test".into(),
        lease_ttl_ms: 15_000,
        grant: tollgate_ledger_grant,
    };
    let out = store
        .write_journal(
            &writer,
            vec![JournalEntry::Lease(LeaseOp::Grant {
                account_id: account.id.clone(),
                lease_id: None,
                need: Amount::from_nanos(10_000),
                want: Amount::from_nanos(100_000),
            })],
        )
        .await
        .unwrap();
    let LeaseOutcome::Granted { lease_id, .. } = &out.leases[0] else {
        panic!("{out:?}");
    };
    for batch in [[700, 800, 900], [1_000, 1_100, 1_200]] {
        let entries: Vec<JournalEntry> = batch
            .iter()
            .flat_map(|n| charge(&account.id, lease_id, *n))
            .collect();
        store.write_journal(&writer, entries).await.unwrap();
    }
    store
        .write_journal(
            &writer,
            vec![JournalEntry::Lease(LeaseOp::Return {
                lease_id: lease_id.clone(),
            })],
        )
        .await
        .unwrap();
    store
        .credit(&account.id, Amount::from_nanos(5_000), Some("top-up"))
        .await
        .unwrap();
    store
        .credit(&account.id, Amount::from_nanos(-2_000), Some("correction"))
        .await
        .unwrap();
    store.close().await;
    account.id
}

/// The grant rule (`tollgate_ledger::grant`), restated: the binary's tests do not link the
/// ledger crate.
fn tollgate_ledger_grant(available: Amount, need: Amount, want: Amount) -> Option<Amount> {
    if want.is_positive() && available.nanos() >= want.nanos() * 2 {
        Some(want)
    } else if need.is_positive() && available >= need {
        Some(need)
    } else {
        None
    }
}

/// A consistent copy of `db` (`VACUUM INTO`), corrupted by `sql`.
fn corrupted(scratch: &Scratch, db: &Path, name: &str, sql: &str) -> std::path::PathBuf {
    let copy = scratch.dir.join(format!("{name}.db"));
    let source = rusqlite::Connection::open(db).unwrap();
    source
        .execute(&format!("VACUUM INTO '{}'", copy.display()), [])
        .unwrap();
    drop(source);
    let conn = rusqlite::Connection::open(&copy).unwrap();
    conn.execute_batch(sql).unwrap();
    copy
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_names_every_kind_of_tampering() {
    let scratch = Scratch::new("audit-corruption");
    let db = scratch.dir.join("t.db");
    let account = history(&db).await;
    let (report, ok) = audit(&db);
    assert!(ok, "the untouched history must audit clean: {report:#}");
    assert_eq!(report["ledger_rows"], 9, "{report:#}");

    // A charge row to pick on: the second of the first batch.
    let second = format!(
        "(SELECT id FROM ledger WHERE account_id = '{account}' AND kind = 'charge' AND seq = 3)"
    );
    let cases: [(&str, String, &str); 9] = [
        (
            "duplicate-charge",
            // A restore without the ledger's constraints, then the same charge twice.
            format!(
                "CREATE TABLE ledger_copy AS SELECT * FROM ledger;
                 DROP TABLE ledger;
                 ALTER TABLE ledger_copy RENAME TO ledger;
                 INSERT INTO ledger SELECT 'led_duplicate', account_id, kind, amount_nanos,
                     balance_after_nanos, model, quantity, hold_id, task_id, key_id, request_id,
                     estimated, note, created_at, anomaly, lease_id, price_group, price_multiplier,
                     seq, loss_nanos, overdraw_nanos, price_version, bound_nanos, hash
                 FROM ledger WHERE id = {second};"
            ),
            "one_charge_per_hold",
        ),
        (
            "missing-usage-record",
            format!(
                "DELETE FROM usage_log WHERE hold_id = (SELECT hold_id FROM ledger WHERE id = {second});"
            ),
            "charge_has_usage_record",
        ),
        (
            "altered-usage-record",
            format!(
                "UPDATE usage_log SET charge_nanos = charge_nanos - 1
                 WHERE hold_id = (SELECT hold_id FROM ledger WHERE id = {second});"
            ),
            "charge_has_usage_record",
        ),
        (
            "usage-record-without-charge",
            format!(
                "INSERT INTO usage_log (id, created_at, kind, account_id, endpoint, status, units,
                     charge_nanos, hold_nanos, latency_ms, estimated, hold_id)
                 SELECT 'use_invented', created_at, 'request', account_id, 'embeddings', 200, 1,
                     500, 500, 1, 0, 'hold_invented'
                 FROM ledger WHERE id = {second};"
            ),
            "usage_record_has_charge",
        ),
        (
            "broken-chain",
            format!(
                "UPDATE ledger SET balance_after_nanos = balance_after_nanos + 5 WHERE id = {second};"
            ),
            "balance_after_chain",
        ),
        (
            "hidden-charge",
            // The charge deleted and the balance patched so that it still equals the sum.
            format!(
                "UPDATE accounts SET balance_nanos = balance_nanos
                     - (SELECT amount_nanos FROM ledger WHERE id = {second})
                 WHERE id = '{account}';
                 DELETE FROM ledger WHERE id = {second};"
            ),
            "balance_after_chain",
        ),
        (
            "unexplained-negative-balance",
            // A correction below zero written consistently — chain, sum, sequence — but with no
            // overdraw recorded.
            format!(
                "INSERT INTO ledger (id, account_id, kind, amount_nanos, balance_after_nanos, note,
                     created_at, seq)
                 SELECT 'led_negative', id, 'adjustment', -2000000, balance_nanos - 2000000, 'x',
                     created_at, ledger_seq + 1
                 FROM accounts WHERE id = '{account}';
                 UPDATE accounts SET balance_nanos = balance_nanos - 2000000,
                     ledger_seq = ledger_seq + 1 WHERE id = '{account}';"
            ),
            "negative_balance_explained",
        ),
        // Issue 42 item 12: a closed lease's amount lowered — no balance moves, but what the
        // lease was granted no longer adds up to what it paid and gave back.
        (
            "lease-amount-lowered",
            format!(
                "UPDATE leases SET amount_nanos = amount_nanos - 100, returned_nanos = returned_nanos - 100
                 WHERE account_id = '{account}' AND state = 'returned';"
            ),
            "lease_arithmetic",
        ),
        // ... or made to say it paid more charges than the rows that name it came to.
        (
            "lease-charged-inflated",
            format!(
                "UPDATE leases SET charged_nanos = charged_nanos + 1000, granted_nanos = granted_nanos + 1000
                 WHERE account_id = '{account}';"
            ),
            "lease_arithmetic",
        ),
    ];
    for (name, sql, rule) in cases {
        let copy = corrupted(&scratch, &db, name, &sql);
        let (report, ok) = audit(&copy);
        let found = rules(&report);
        eprintln!("{name}: {found:?}");
        assert!(!ok, "{name}: the audit passed a corrupted copy: {report:#}");
        assert!(
            found.iter().any(|r| r == rule),
            "{name}: expected {rule}, found {found:?}: {report:#}"
        );
    }
}

// ---- the chained ledger ----

/// `tollgate ARGS…` on the SQLite file `db` with the configuration `config`: whether it passed,
/// and what it printed.
fn tollgate(config: &Path, db: &Path, args: &[&str]) -> (bool, String) {
    let run = support::cli(config, &format!("sqlite://{}", db.display()), args);
    (run.ok, run.said())
}

/// An intruder who edits a row and then recomputes every hash after it, and the head, so
/// that the chain links again: only a signed checkpoint can tell.
fn rewrite_chain(db: &Path, account: &str, sql: &str) {
    use tollgate_store::chain::{GENESIS, LINE_COLUMNS, LedgerLine};
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.execute_batch(sql).unwrap();
    let mut select = conn
        .prepare(&format!(
            "SELECT {LINE_COLUMNS} FROM ledger WHERE account_id = ?1 AND hash IS NOT NULL ORDER BY seq"
        ))
        .unwrap();
    let lines: Vec<LedgerLine> = select
        .query_map([account], |r| {
            Ok(LedgerLine {
                id: r.get(0)?,
                account_id: r.get(1)?,
                seq: r.get(2)?,
                kind: r.get(3)?,
                amount_nanos: r.get(4)?,
                balance_after_nanos: r.get(5)?,
                model: r.get(6)?,
                quantity: r.get(7)?,
                hold_id: r.get(8)?,
                task_id: r.get(9)?,
                key_id: r.get(10)?,
                request_id: r.get(11)?,
                lease_id: r.get(12)?,
                estimated: r.get(13)?,
                note: r.get(14)?,
                anomaly: r.get(15)?,
                price_group: r.get(16)?,
                price_multiplier: r.get(17)?,
                price_version: r.get(18)?,
                bound_nanos: r.get(19)?,
                loss_nanos: r.get(20)?,
                overdraw_nanos: r.get(21)?,
                created_at: r.get(22)?,
            })
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    drop(select);
    let mut prev = GENESIS.to_owned();
    for line in &lines {
        prev = line.hash(&prev);
        conn.execute(
            "UPDATE ledger SET hash = ?1 WHERE id = ?2",
            [&prev, &line.id],
        )
        .unwrap();
    }
    conn.execute(
        "UPDATE accounts SET ledger_head = ?1 WHERE id = ?2",
        [&prev, account],
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chain_and_its_signed_checkpoint_name_every_edit_and_statements_verify_offline() {
    let scratch = Scratch::new("audit-chain");
    let db = scratch.dir.join("t.db");
    let account = history(&db).await;
    let key_file = scratch.dir.join("ledger.key");
    let config = scratch.dir.join("tollgate.toml");
    std::fs::write(
        &config,
        format!(
            "[simulator]\nenabled = false\n\n[ledger]\nsigning_key_file = \"{}\"\n",
            key_file.display()
        ),
    )
    .unwrap();
    let (made, said) = tollgate(
        &config,
        &db,
        &["ledger", "keygen", "--out", key_file.to_str().unwrap()],
    );
    assert!(made, "{said}");
    let public = said
        .lines()
        .find_map(|l| l.strip_prefix("public key  "))
        .unwrap()
        .trim()
        .to_owned();
    // A second keygen never overwrites the key.
    assert!(
        !tollgate(
            &config,
            &db,
            &["ledger", "keygen", "--out", key_file.to_str().unwrap()]
        )
        .0
    );
    let (signed, said) = tollgate(&config, &db, &["ledger", "checkpoint"]);
    assert!(signed, "{said}");

    let (report, ok) = support::audit(&format!("sqlite://{}", db.display()), Some(&config));
    assert!(ok, "{report:#}");
    assert_eq!(report["chained_rows"], 9, "{report:#}");
    assert!(report["checkpoint"].is_string(), "{report:#}");

    // The statement, exported before anything is touched, verifies offline against the key.
    let before = scratch.dir.join("before.json");
    let (exported, said) = tollgate(
        &config,
        &db,
        &["statement", "audited", "--out", before.to_str().unwrap()],
    );
    assert!(exported, "{said}");
    let (verified, said) = tollgate(
        &config,
        &db,
        &["verify", before.to_str().unwrap(), "--key", &public],
    );
    assert!(verified, "{said}");
    assert!(said.contains("verified: 9 row(s)"), "{said}");
    // Not the operator's key: refused.
    let other = "11".repeat(32);
    let wrong_key = tollgate(
        &config,
        &db,
        &["verify", before.to_str().unwrap(), "--key", &other],
    );
    assert!(!wrong_key.0, "{}", wrong_key.1);

    // A customer (or anyone) editing the document: an amount, a dropped row, two rows swapped.
    let document: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&before).unwrap()).unwrap();
    type Edit = Box<dyn Fn(&mut serde_json::Value)>;
    let edits: [(&str, Edit); 3] = [
        (
            "edited",
            Box::new(|d| {
                let row = &mut d["rows"][3];
                let nanos = row["amount_nanos"].as_i64().unwrap() + 1;
                row["amount_nanos"] = nanos.into();
                row["amount"] = Amount::from_nanos(nanos).to_string().into();
            }),
        ),
        (
            "dropped",
            Box::new(|d| {
                d["rows"].as_array_mut().unwrap().remove(4);
            }),
        ),
        (
            "reordered",
            Box::new(|d| {
                d["rows"].as_array_mut().unwrap().swap(3, 4);
            }),
        ),
    ];
    for (name, edit) in edits {
        let mut copy = document.clone();
        edit(&mut copy);
        let path = scratch.dir.join(format!("{name}.json"));
        std::fs::write(&path, copy.to_string()).unwrap();
        let (ok, said) = tollgate(
            &config,
            &db,
            &["verify", path.to_str().unwrap(), "--key", &public],
        );
        assert!(!ok, "{name}: verified an edited statement: {said}");
        assert!(said.contains("NOT VERIFIED"), "{name}: {said}");
    }

    // The database edited behind the gateway's back: the audit names each, a statement
    // exported after the edit no longer verifies, and the one exported before still does.
    let third = format!(
        "(SELECT id FROM ledger WHERE account_id = '{account}' AND kind = 'charge' AND seq = 3)"
    );
    let fourth = format!(
        "(SELECT id FROM ledger WHERE account_id = '{account}' AND kind = 'charge' AND seq = 4)"
    );
    let cases: [(&str, String, &str); 3] = [
        (
            "chain-update",
            format!("UPDATE ledger SET amount_nanos = amount_nanos - 1 WHERE id = {third};"),
            "ledger_chain",
        ),
        (
            "chain-delete",
            format!(
                "UPDATE accounts SET balance_nanos = balance_nanos
                     - (SELECT amount_nanos FROM ledger WHERE id = {third})
                 WHERE id = '{account}';
                 DELETE FROM ledger WHERE id = {third};"
            ),
            "ledger_chain",
        ),
        (
            "chain-swap",
            format!(
                "UPDATE ledger SET amount_nanos = CASE id
                     WHEN {third} THEN (SELECT amount_nanos FROM ledger WHERE id = {fourth})
                     ELSE (SELECT amount_nanos FROM ledger WHERE id = {third}) END
                 WHERE id IN ({third}, {fourth});"
            ),
            "ledger_chain",
        ),
    ];
    for (name, sql, rule) in cases {
        let copy = corrupted(&scratch, &db, name, &sql);
        let (report, ok) = support::audit(&format!("sqlite://{}", copy.display()), Some(&config));
        let found = rules(&report);
        assert!(!ok, "{name}: the audit passed: {report:#}");
        assert!(
            found.iter().any(|r| r == rule),
            "{name}: expected {rule}, found {found:?}"
        );
        let detail = report["violations"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["rule"] == rule)
            .unwrap()["detail"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            detail.contains("seq 3") || detail.contains("seq 4"),
            "{name}: {detail}"
        );
        let after = scratch.dir.join(format!("{name}.json"));
        let (exported, said) = tollgate(
            &config,
            &copy,
            &["statement", "audited", "--out", after.to_str().unwrap()],
        );
        assert!(exported, "{name}: {said}");
        let (ok, said) = tollgate(
            &config,
            &copy,
            &["verify", after.to_str().unwrap(), "--key", &public],
        );
        assert!(
            !ok,
            "{name}: a statement of the edited ledger verified: {said}"
        );
    }
    let (still, said) = tollgate(
        &config,
        &db,
        &["verify", before.to_str().unwrap(), "--key", &public],
    );
    assert!(still, "{said}");

    // The careful intruder: the edit made consistent — amount, every balance after it, the
    // account — and the chain recomputed after it. The links hold; the signed head does not.
    let copy = corrupted(&scratch, &db, "chain-rewritten", "");
    rewrite_chain(
        &copy,
        &account,
        &format!(
            "UPDATE ledger SET amount_nanos = amount_nanos - 1 WHERE id = {third};
             UPDATE ledger SET balance_after_nanos = balance_after_nanos - 1
                 WHERE account_id = '{account}' AND seq >= 3;
             UPDATE accounts SET balance_nanos = balance_nanos - 1 WHERE id = '{account}';"
        ),
    );
    let (report, ok) = support::audit(&format!("sqlite://{}", copy.display()), Some(&config));
    let found = rules(&report);
    assert!(!ok, "{report:#}");
    assert!(found.iter().any(|r| r == "checkpoint_heads"), "{found:?}");
    assert!(!found.iter().any(|r| r == "ledger_chain"), "{found:?}");
    let after = scratch.dir.join("rewritten.json");
    assert!(
        tollgate(
            &config,
            &copy,
            &["statement", "audited", "--out", after.to_str().unwrap()]
        )
        .0
    );
    let (ok, said) = tollgate(
        &config,
        &copy,
        &["verify", after.to_str().unwrap(), "--key", &public],
    );
    assert!(!ok, "{said}");
    assert!(said.contains("rewritten"), "{said}");
}

/// The configuration for the chain tests: `[ledger]` signing with `key_file`, trusting `verify`.
fn ledger_config(
    scratch: &Scratch,
    name: &str,
    key_file: &Path,
    verify: &[&str],
) -> std::path::PathBuf {
    let config = scratch.dir.join(name);
    let verify: Vec<String> = verify.iter().map(|k| format!("\"{k}\"")).collect();
    std::fs::write(
        &config,
        format!(
            "[simulator]\nenabled = false\n\n[ledger]\nsigning_key_file = \"{}\"\nverify_keys = [{}]\n",
            key_file.display(),
            verify.join(", ")
        ),
    )
    .unwrap();
    config
}

/// `tollgate ledger keygen` into `key_file` under `config`: the public key it printed.
fn keygen(config: &Path, db: &Path, key_file: &Path) -> String {
    let (made, said) = tollgate(
        config,
        db,
        &["ledger", "keygen", "--out", key_file.to_str().unwrap()],
    );
    assert!(made, "{said}");
    said.lines()
        .find_map(|l| l.strip_prefix("public key  "))
        .unwrap()
        .trim()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_signing_key_keeps_old_statements_verifying_and_signs_the_new_ones() {
    let scratch = Scratch::new("audit-rotation");
    let db = scratch.dir.join("t.db");
    let account = history(&db).await;
    let (old_file, new_file, stranger_file) = (
        scratch.dir.join("old.key"),
        scratch.dir.join("new.key"),
        scratch.dir.join("stranger.key"),
    );
    // Before: the old key signs, and a statement is exported under it.
    let old_config = ledger_config(&scratch, "old.toml", &old_file, &[]);
    let old_public = keygen(&old_config, &db, &old_file);
    assert!(tollgate(&old_config, &db, &["ledger", "checkpoint"]).0);
    let before = scratch.dir.join("before.json");
    assert!(
        tollgate(
            &old_config,
            &db,
            &["statement", "audited", "--out", before.to_str().unwrap()]
        )
        .0
    );

    // The rotation as docs/decisions.md says: a new key signs, the old one is only trusted.
    let new_config = ledger_config(&scratch, "new.toml", &new_file, &[&old_public]);
    let new_public = keygen(&new_config, &db, &new_file);
    let store = Store::connect(&format!("sqlite://{}", db.display()))
        .await
        .unwrap();
    store
        .credit(&account, Amount::from_nanos(7), Some("after the rotation"))
        .await
        .unwrap();
    store.close().await;
    let (signed, said) = tollgate(&new_config, &db, &["ledger", "checkpoint"]);
    assert!(signed, "{said}");
    let (report, ok) = support::audit(&format!("sqlite://{}", db.display()), Some(&new_config));
    assert!(ok, "{report:#}");
    let trusted_checkpoint = report["checkpoint"].as_str().unwrap().to_owned();

    // The statement exported before still verifies against the old key; one exported now is
    // signed by the new key, and the old key no longer vouches for it.
    let (still, said) = tollgate(
        &new_config,
        &db,
        &["verify", before.to_str().unwrap(), "--key", &old_public],
    );
    assert!(still, "{said}");
    let after = scratch.dir.join("after.json");
    assert!(
        tollgate(
            &new_config,
            &db,
            &["statement", "audited", "--out", after.to_str().unwrap()]
        )
        .0
    );
    let (ok, said) = tollgate(
        &new_config,
        &db,
        &["verify", after.to_str().unwrap(), "--key", &new_public],
    );
    assert!(ok, "{said}");
    assert!(said.contains("verified: 10 row(s)"), "{said}");
    let (ok, said) = tollgate(
        &new_config,
        &db,
        &["verify", after.to_str().unwrap(), "--key", &old_public],
    );
    assert!(
        !ok,
        "the old key vouched for a checkpoint it did not sign: {said}"
    );

    // A stranger's key (an intruder with database access) signs a newer checkpoint: the audit
    // keeps checking the newest one a trusted key signed.
    let stranger_config = ledger_config(&scratch, "stranger.toml", &stranger_file, &[]);
    keygen(&stranger_config, &db, &stranger_file);
    assert!(tollgate(&stranger_config, &db, &["ledger", "checkpoint"]).0);
    let (report, ok) = support::audit(&format!("sqlite://{}", db.display()), Some(&new_config));
    assert!(ok, "{report:#}");
    assert_eq!(
        report["checkpoint"].as_str(),
        Some(trusted_checkpoint.as_str()),
        "{report:#}"
    );
}

/// Issue 42 items 4 and 12. The adversary: an insider who can write the database but cannot
/// read the signing key. Before: delete `ledger_checkpoints`, rewrite a charge with its hashes,
/// balances, hold and usage record recomputed, and `tollgate audit` said "ok", the next
/// `tollgate statement` signed the forged head and `tollgate verify --key` passed it; delete a
/// whole account, and the audit (walking the accounts table) said "ok". Now checkpoints are
/// also published outside the database, the audit believes every one of the operator's keys
/// (and names a published one gone from the table, a head no chain passes through, an account
/// a checkpoint signed and that is gone, and — with a key — rows no checkpoint signs past
/// `checkpoint_stale_seconds`), and no checkpoint is ever signed over a contradiction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_writer_cannot_rewrite_what_a_checkpoint_signed() {
    let scratch = Scratch::new("audit-insider");
    let db = scratch.dir.join("t.db");
    let account = history(&db).await;
    let key_file = scratch.dir.join("ledger.key");
    let published = scratch.dir.join("checkpoints.jsonl");
    let write_config = |name: &str, publish: bool| {
        let config = scratch.dir.join(name);
        let publish = if publish {
            format!("publish_checkpoints = \"{}\"\n", published.display())
        } else {
            String::new()
        };
        std::fs::write(
            &config,
            format!(
                "[simulator]\nenabled = false\n\n[ledger]\nsigning_key_file = \"{}\"\ncheckpoint_stale_seconds = 1\n{publish}",
                key_file.display()
            ),
        )
        .unwrap();
        config
    };
    let config = write_config("published.toml", true);
    let unpublished = write_config("unpublished.toml", false);
    let public = keygen(&config, &db, &key_file);
    let (signed, said) = tollgate(&config, &db, &["ledger", "checkpoint"]);
    assert!(signed, "{said}");
    let log = std::fs::read_to_string(&published).unwrap();
    assert_eq!(log.lines().count(), 1, "published: {log}");
    let (report, ok) = support::audit(&format!("sqlite://{}", db.display()), Some(&config));
    assert!(ok, "{report:#}");
    // Every row is now older than checkpoint_stale_seconds.
    tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;

    // The careful insider: checkpoints deleted, a charge lowered by one nano-unit with every
    // balance after it, the account, the hold's capture and the usage record made to match,
    // and the chain recomputed.
    let charge = format!(
        "(SELECT id FROM ledger WHERE account_id = '{account}' AND kind = 'charge' AND seq = 3)"
    );
    let forged = corrupted(&scratch, &db, "forged", "DELETE FROM ledger_checkpoints;");
    rewrite_chain(
        &forged,
        &account,
        &format!(
            "UPDATE holds SET captured_nanos = captured_nanos - 1
                 WHERE id = (SELECT hold_id FROM ledger WHERE id = {charge});
             UPDATE usage_log SET charge_nanos = charge_nanos - 1
                 WHERE hold_id = (SELECT hold_id FROM ledger WHERE id = {charge});
             UPDATE leases SET charged_nanos = charged_nanos - 1, granted_nanos = granted_nanos - 1
                 WHERE id = (SELECT lease_id FROM ledger WHERE id = {charge});
             UPDATE ledger SET amount_nanos = amount_nanos + 1 WHERE id = {charge};
             UPDATE ledger SET balance_after_nanos = balance_after_nanos + 1
                 WHERE account_id = '{account}' AND seq >= 3;
             UPDATE accounts SET balance_nanos = balance_nanos + 1 WHERE id = '{account}';"
        ),
    );
    let forged_url = format!("sqlite://{}", forged.display());
    // The books themselves are consistent: without a key the audit cannot tell.
    let (report, ok) = support::audit(&forged_url, None);
    assert!(
        ok,
        "the forgery is consistent but for its signatures: {report:#}"
    );
    // The published log remembers what the database forgot.
    let (report, ok) = support::audit(&forged_url, Some(&config));
    let found = rules(&report);
    assert!(!ok, "{report:#}");
    for rule in ["checkpoint_deleted", "checkpoint_heads"] {
        assert!(found.iter().any(|r| r == rule), "{rule}: {found:?}");
    }
    // Without the log, a key alone: rows nobody signed are older than the bound.
    let (report, ok) = support::audit(&forged_url, Some(&unpublished));
    assert!(!ok, "{report:#}");
    assert!(
        rules(&report).iter().any(|r| r == "checkpoint_missing"),
        "{report:#}"
    );
    // And nothing signs the forged head: not a checkpoint, not a statement that needs one.
    let (signed, said) = tollgate(&config, &forged, &["ledger", "checkpoint"]);
    assert!(!signed, "a checkpoint over the forgery: {said}");
    assert!(said.contains("contradicts"), "{said}");
    let store = Store::connect(&forged_url).await.unwrap();
    store
        .credit(&account, Amount::from_nanos(1), Some("after the forgery"))
        .await
        .unwrap();
    store.close().await;
    let out = scratch.dir.join("forged.json");
    let (exported, said) = tollgate(
        &config,
        &forged,
        &["statement", "audited", "--out", out.to_str().unwrap()],
    );
    assert!(!exported, "a statement signed over the forgery: {said}");
    let log = std::fs::read_to_string(&published).unwrap();
    assert_eq!(log.lines().count(), 1, "nothing more was published: {log}");

    // A whole account deleted, with everything of it: the checkpoint still names it.
    let gone = corrupted(
        &scratch,
        &db,
        "gone",
        &format!(
            "DELETE FROM usage_log WHERE account_id = '{account}';
             DELETE FROM holds WHERE account_id = '{account}';
             DELETE FROM leases WHERE account_id = '{account}';
             DELETE FROM ledger WHERE account_id = '{account}';
             DELETE FROM api_keys WHERE account_id = '{account}';
             DELETE FROM accounts WHERE id = '{account}';"
        ),
    );
    let (report, ok) = support::audit(&format!("sqlite://{}", gone.display()), Some(&config));
    assert!(!ok, "{report:#}");
    let detail = report["violations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["rule"] == "checkpoint_heads")
        .unwrap_or_else(|| panic!("{report:#}"))["detail"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(detail.contains("gone"), "{detail}");

    // Only the key stands for the key: its 16-digit id is refused as --key.
    let statement = scratch.dir.join("genuine.json");
    assert!(
        tollgate(
            &config,
            &db,
            &["statement", "audited", "--out", statement.to_str().unwrap()]
        )
        .0
    );
    let (ok, said) = tollgate(
        &config,
        &db,
        &["verify", statement.to_str().unwrap(), "--key", &public],
    );
    assert!(ok, "{said}");
    let key_id = tollgate_store::checkpoint::key_id(
        &tollgate_store::checkpoint::parse_public_key(&public).unwrap(),
    );
    let (ok, said) = tollgate(
        &config,
        &db,
        &["verify", statement.to_str().unwrap(), "--key", &key_id],
    );
    assert!(!ok, "the key id stood for the key: {said}");

    // Issue 42 item 9: `--out` never follows a link someone put where the statement goes.
    #[cfg(unix)]
    {
        let precious = scratch.dir.join("precious.txt");
        std::fs::write(&precious, "keep me").unwrap();
        let trap = scratch.dir.join("trap.json");
        std::os::unix::fs::symlink(&precious, &trap).unwrap();
        let (written, said) = tollgate(
            &config,
            &db,
            &["statement", "audited", "--out", trap.to_str().unwrap()],
        );
        assert!(!written, "{said}");
        assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep me");
    }
}
