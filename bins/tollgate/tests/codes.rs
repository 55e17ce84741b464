//! Redemption codes as an operator and their customers use them (docs/operations.md,
//! "Redemption codes"): `tollgate codes create` writes a batch to a file, a client redeems a
//! line of it with its key (`POST /v1/redemptions`), `tollgate codes show` reports who redeemed
//! which, `revoke` stops the rest. The adversaries: a client guessing codes (10,000 guesses,
//! throttled per account and per address), twenty clients with one code on two replicas at once
//! (credited once), and the audit after all of it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use support::{Gateway, Scratch, cli, http, http_from, violations_of};
use tollgate_sim::KnobSettings;
use tollgate_store::Store;

fn redeem_body(code: &str) -> String {
    serde_json::json!({ "code": code }).to_string()
}

/// A well-formed code (its check symbols match) that no batch holds: a guess.
fn guess() -> String {
    tollgate_store::RedemptionCode::generate().display()
}

fn codes_in(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// `tollgate codes create --amount AMOUNT --count COUNT` into `codes.txt`: the codes.
fn issue(
    scratch: &Scratch,
    config: &std::path::Path,
    db: &str,
    amount: &str,
    count: &str,
) -> Vec<String> {
    let out = scratch.dir.join("codes.txt");
    let issued = cli(
        config,
        db,
        &[
            "codes",
            "create",
            "--amount",
            amount,
            "--count",
            count,
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(issued.ok, "{}", issued.said());
    codes_in(&out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_is_issued_redeemed_reported_and_revoked() {
    let scratch = Scratch::new("codes");
    let db = scratch.sqlite_url();
    let sim = tollgate_sim::start("127.0.0.1:0".parse().unwrap(), KnobSettings::default())
        .await
        .unwrap();
    let config = support::embeddings_config(&scratch, &sim.base_url(), "openai");
    let made = cli(
        &config,
        &db,
        &["keys", "create", "--name", "shop", "--balance", "1"],
    );
    assert!(made.ok, "{}", made.said());
    let key = made.stdout.trim().to_owned();
    assert!(key.starts_with("tg-"), "{}", made.said());

    // Issued to a private file, which is never overwritten.
    let out = scratch.dir.join("codes.txt");
    let issued = cli(
        &config,
        &db,
        &[
            "codes",
            "create",
            "--amount",
            "2.5",
            "--count",
            "3",
            "--expires",
            "30d",
            "--name",
            "launch",
            "--out",
            out.to_str().unwrap(),
            "--json",
        ],
    );
    assert!(issued.ok, "{}", issued.said());
    let batch: serde_json::Value = serde_json::from_str(&issued.stdout).unwrap();
    let batch_id = batch["id"].as_str().unwrap().to_owned();
    assert_eq!(batch["count"], 3);
    let codes = codes_in(&out);
    assert_eq!(codes.len(), 3);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(
            std::fs::metadata(&out).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    let again = cli(
        &config,
        &db,
        &[
            "codes",
            "create",
            "--amount",
            "1",
            "--count",
            "1",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(
        !again.ok && again.said().contains("never overwritten"),
        "{}",
        again.said()
    );
    assert_eq!(codes_in(&out), codes, "the first batch's file is intact");
    let zero = cli(
        &config,
        &db,
        &[
            "codes",
            "create",
            "--amount",
            "0",
            "--count",
            "1",
            "--out",
            scratch.dir.join("zero.txt").to_str().unwrap(),
        ],
    );
    assert!(
        !zero.ok && zero.said().contains("--amount"),
        "{}",
        zero.said()
    );
    assert!(
        !scratch.dir.join("zero.txt").exists(),
        "a refused batch leaves no file"
    );

    let gateway = Gateway::start(&scratch, "gateway", &config, &db).await;
    let addr = gateway.addr.as_str();

    // Redeemed as a person types it: lower case, spaces for dashes.
    let typed = codes[1].to_lowercase().replace('-', " ");
    let (status, body) = http(
        addr,
        "POST",
        "/v1/redemptions",
        Some(&key),
        Some(&redeem_body(&typed)),
    )
    .await
    .unwrap();
    assert_eq!(status, 201, "{body}");
    let redeemed: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(redeemed["object"], "tollgate.redemption");
    assert_eq!(redeemed["amount"], "2.5");
    assert_eq!(redeemed["balance"], "3.5");
    assert_eq!(redeemed["batch_id"], batch_id.as_str());

    // Twice: 409, nothing more.
    let (status, body) = http(
        addr,
        "POST",
        "/v1/redemptions",
        Some(&key),
        Some(&redeem_body(&codes[1])),
    )
    .await
    .unwrap();
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("redemption_code_used"), "{body}");
    // A typo: 400 naming the field, and it does not count as a guess.
    let mut typo = codes[0].clone();
    let last = typo.pop().unwrap();
    typo.push(if last == 'A' { 'B' } else { 'A' });
    let (status, body) = http(
        addr,
        "POST",
        "/v1/redemptions",
        Some(&key),
        Some(&redeem_body(&typo)),
    )
    .await
    .unwrap();
    assert_eq!(status, 400, "{body}");
    assert!(
        body.contains("\"param\":\"code\"") && body.contains("mistyped"),
        "{body}"
    );
    // Unknown fields and no key: refused before anything is counted.
    let (status, _) = http(
        addr,
        "POST",
        "/v1/redemptions",
        Some(&key),
        Some(r#"{"code":"x","amount":"9"}"#),
    )
    .await
    .unwrap();
    assert_eq!(status, 400);
    let (status, _) = http(
        addr,
        "POST",
        "/v1/redemptions",
        None,
        Some(&redeem_body(&codes[0])),
    )
    .await
    .unwrap();
    assert_eq!(status, 401);

    // The report: one redeemed, by whom, from where, with its ledger row.
    let shown = cli(&config, &db, &["codes", "show", &batch_id, "--json"]);
    assert!(shown.ok, "{}", shown.said());
    let report: serde_json::Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(report["batch"]["redeemed"], 1);
    let row = &report["redemptions"][0];
    assert_eq!(row["number"], 2);
    assert_eq!(row["address"], "127.0.0.1");
    let ledger_id = row["ledger_id"].as_str().unwrap().to_owned();
    let listed = cli(&config, &db, &["codes", "list"]);
    assert!(listed.ok && listed.stdout.contains(&batch_id) && listed.stdout.contains("live"));

    // The ledger row is a redemption naming its batch, and chained.
    let store = Store::connect_existing(&db).await.unwrap();
    let account = store.find_account("shop").await.unwrap();
    let ledger = store.ledger(&account.id).await.unwrap();
    let row = ledger.iter().find(|r| r.id == ledger_id).unwrap();
    assert_eq!(row.kind, tollgate_store::LedgerKind::Redemption);
    assert!(row.note.as_deref().unwrap().contains(&batch_id));

    // Revoked: the rest redeem nothing; the report says so.
    let revoked = cli(&config, &db, &["codes", "revoke", &batch_id]);
    assert!(
        revoked.ok && revoked.stdout.contains("1 of 3"),
        "{}",
        revoked.said()
    );
    let (status, body) = http(
        addr,
        "POST",
        "/v1/redemptions",
        Some(&key),
        Some(&redeem_body(&codes[2])),
    )
    .await
    .unwrap();
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("redemption_code_revoked"), "{body}");
    assert_eq!(
        store.find_account(&account.id).await.unwrap().balance,
        "3.5".parse().unwrap()
    );

    let (report, clean) = support::audit(&db, Some(&config));
    assert!(clean, "{report}");
    let changes = cli(&config, &db, &["admin", "changes", "--json"]);
    assert!(
        changes.stdout.contains("codes.create") && changes.stdout.contains("codes.revoke"),
        "{}",
        changes.said()
    );
}

/// 10,000 guesses from one key over sixteen addresses: the account's limit lets ten be looked
/// up in the window and refuses the rest with 429 and Retry-After, and then the right code
/// too (the limit cannot tell a right code from a guess until it looks). Accounts guessing
/// from one address: thirty wrong codes there close it to a fourth account.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_guesses_are_throttled() {
    let scratch = Scratch::new("codes-guess");
    let db = scratch.sqlite_url();
    let sim = tollgate_sim::start("127.0.0.1:0".parse().unwrap(), KnobSettings::default())
        .await
        .unwrap();
    let config = support::embeddings_config(&scratch, &sim.base_url(), "openai");
    let store = Store::connect(&db).await.unwrap();
    let (guesser, guesser_key) = store
        .create_account("guesser", "0".parse().unwrap())
        .await
        .unwrap();
    let right = issue(&scratch, &config, &db, "1", "1").remove(0);
    let gateway = Gateway::start(&scratch, "gateway", &config, &db).await;
    let addr = Arc::new(gateway.addr.clone());

    let (sent, wrong, throttled) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
    );
    let mut clients = Vec::new();
    for c in 0..16u8 {
        let (addr, key) = (addr.clone(), guesser_key.secret.clone());
        let (sent, wrong, throttled) = (sent.clone(), wrong.clone(), throttled.clone());
        clients.push(tokio::spawn(async move {
            let source = Ipv4Addr::new(127, 0, 1, c + 1);
            while sent.fetch_add(1, Ordering::Relaxed) < 10_000 {
                let (status, body) = http_from(
                    Some(source),
                    &addr,
                    "POST",
                    "/v1/redemptions",
                    Some(&key),
                    Some(&redeem_body(&guess())),
                )
                .await
                .unwrap();
                match status {
                    404 => wrong.fetch_add(1, Ordering::Relaxed),
                    429 => {
                        assert!(body.contains("too_many_redemption_attempts"), "{body}");
                        throttled.fetch_add(1, Ordering::Relaxed)
                    }
                    other => panic!("{other}: {body}"),
                };
            }
        }));
    }
    for c in clients {
        c.await.unwrap();
    }
    let (wrong, throttled) = (
        wrong.load(Ordering::Relaxed),
        throttled.load(Ordering::Relaxed),
    );
    eprintln!("10,000 guesses: {wrong} looked up, {throttled} throttled");
    assert_eq!(wrong, 10, "the account's limit: ten guesses a window");
    assert_eq!(wrong + throttled, 10_000);
    let (status, body) = http(
        &addr,
        "POST",
        "/v1/redemptions",
        Some(&guesser_key.secret),
        Some(&redeem_body(&right)),
    )
    .await
    .unwrap();
    assert_eq!(status, 429, "{body}");
    assert_eq!(
        store.find_account(&guesser.id).await.unwrap().balance,
        "0".parse().unwrap()
    );

    // One address, several accounts: 3 × 10 wrong codes close it (its limit is 30).
    let source = Some(Ipv4Addr::new(127, 0, 2, 1));
    for n in 0..4 {
        let (_, key) = store
            .create_account(&format!("neighbour-{n}"), "0".parse().unwrap())
            .await
            .unwrap();
        let mut looked_up = 0;
        for _ in 0..10 {
            let (status, body) = http_from(
                source,
                &addr,
                "POST",
                "/v1/redemptions",
                Some(&key.secret),
                Some(&redeem_body(&guess())),
            )
            .await
            .unwrap();
            match status {
                404 => looked_up += 1,
                429 => assert!(body.contains("this address"), "{body}"),
                other => panic!("{other}: {body}"),
            }
        }
        assert_eq!(looked_up, if n < 3 { 10 } else { 0 }, "account {n}");
    }
    // From another address, a fresh account is not held back by that one.
    let (_, fresh) = store
        .create_account("fresh", "0".parse().unwrap())
        .await
        .unwrap();
    let (status, _) = http_from(
        Some(Ipv4Addr::new(127, 0, 3, 1)),
        &addr,
        "POST",
        "/v1/redemptions",
        Some(&fresh.secret),
        Some(&redeem_body(&right)),
    )
    .await
    .unwrap();
    assert_eq!(status, 201);
}

/// Twenty clients with one code, ten on each of two replicas on one PostgreSQL database, all at
/// once: one credit, nineteen 409s, and the audit clean.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_code_twenty_clients_two_replicas() {
    let Ok(db) = std::env::var("TOLLGATE_TEST_POSTGRES_URL") else {
        eprintln!("skipped: TOLLGATE_TEST_POSTGRES_URL is not set");
        return;
    };
    let scratch = Scratch::new("codes-pg");
    let sim = tollgate_sim::start("127.0.0.1:0".parse().unwrap(), KnobSettings::default())
        .await
        .unwrap();
    let config = support::embeddings_config(&scratch, &sim.base_url(), "openai");
    // The nineteen who lose hold a real code: they are not guessing, and the limit must not
    // turn their 409 into a 429. Raised only so that the twenty counted at once all pass.
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!("[codes]\nguesses_per_account = 100\n{text}"),
    )
    .unwrap();
    let store = Store::connect(&db).await.unwrap();
    let (account, key) = store
        .create_account(&format!("racer-{}", scratch.tag), "0".parse().unwrap())
        .await
        .unwrap();
    let code = issue(&scratch, &config, &db, "4", "1").remove(0);
    let (a, b) = tokio::join!(
        Gateway::start(&scratch, "replica-a", &config, &db),
        Gateway::start(&scratch, "replica-b", &config, &db)
    );
    let start = Arc::new(tokio::sync::Barrier::new(20));
    let mut clients = Vec::new();
    for c in 0..20 {
        let addr = if c % 2 == 0 {
            a.addr.clone()
        } else {
            b.addr.clone()
        };
        let (key, code, start) = (key.secret.clone(), code.clone(), start.clone());
        clients.push(tokio::spawn(async move {
            start.wait().await;
            http(
                &addr,
                "POST",
                "/v1/redemptions",
                Some(&key),
                Some(&redeem_body(&code)),
            )
            .await
            .unwrap()
        }));
    }
    let mut statuses = Vec::new();
    for c in clients {
        statuses.push(c.await.unwrap().0);
    }
    statuses.sort_unstable();
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 409).count(),
        19,
        "{statuses:?}"
    );
    assert_eq!(
        store.find_account(&account.id).await.unwrap().balance,
        "4".parse().unwrap()
    );
    let (report, _) = support::audit(&db, Some(&config));
    // A shared database holds other tests' rows (the store's insider test leaves a violation
    // on purpose): only this account's, and its rows', count.
    let rows: Vec<String> = store
        .ledger(&account.id)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    let mut names: Vec<&str> = rows.iter().map(String::as_str).collect();
    names.push(&account.id);
    let mine = violations_of(&report, &names);
    assert!(mine.is_empty(), "{mine:?}");
}
