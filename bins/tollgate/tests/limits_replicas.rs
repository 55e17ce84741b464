//! Limits across replicas (`docs/decisions.md`, "Rate limits and spend caps"): two `tollgate
//! serve` processes on one PostgreSQL database, a key limited by `tollgate policy set`, load
//! spread over both. Together they admit no more than the limit — requests per minute, and a
//! daily budget in money — and no fewer than the limit less one unused slice per replica.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use support::{Gateway, Scratch, http};
use tollgate_billing::Amount;
use tollgate_sim::KnobSettings;
use tollgate_store::{LedgerKind, Store};

fn policy_set(db: &str, target: &str, flags: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_tollgate"))
        .args(["policy", "set", target])
        .args(flags)
        .args(["--database-url", db])
        .env_remove("TOLLGATE_CONFIG")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "policy set: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `requests` embeddings requests from 8 clients, alternating between the replicas; returns how
/// many were answered 200 (everything else must be a 429 with Retry-After).
async fn load(replicas: [&str; 2], key: &str, requests: u64) -> u64 {
    let body = r#"{"model":"text-embedding-3-small","input":["hello","limits"]}"#;
    let (sent, served) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let mut clients = Vec::new();
    for c in 0..8 {
        let addr = replicas[c % 2].to_owned();
        let (key, sent, served) = (key.to_owned(), sent.clone(), served.clone());
        clients.push(tokio::spawn(async move {
            while sent.fetch_add(1, Ordering::Relaxed) < requests {
                match http(&addr, "POST", "/v1/embeddings", Some(&key), Some(body)).await {
                    Ok((200, _)) => {
                        served.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok((429, text)) => assert!(text.contains("error"), "{text}"),
                    other => panic!("unexpected answer {other:?}"),
                }
            }
        }));
    }
    for c in clients {
        c.await.unwrap();
    }
    served.load(Ordering::Relaxed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_share_a_rate_and_a_daily_budget() {
    let Ok(db) = std::env::var("TOLLGATE_TEST_POSTGRES_URL") else {
        eprintln!("skipped: TOLLGATE_TEST_POSTGRES_URL is not set");
        return;
    };
    let scratch = Scratch::new("limits-pg");
    let sim = tollgate_sim::start("127.0.0.1:0".parse().unwrap(), KnobSettings::default())
        .await
        .unwrap();
    let store = Store::connect(&db).await.unwrap();
    let config = support::embeddings_config(&scratch, &sim.base_url(), "openai");
    let (rated, rated_key) = store
        .create_account(&format!("rated-{}", scratch.tag), "10".parse().unwrap())
        .await
        .unwrap();
    let (capped, capped_key) = store
        .create_account(&format!("capped-{}", scratch.tag), "10".parse().unwrap())
        .await
        .unwrap();
    policy_set(&db, &rated.id, &["--rpm", "40"]);
    // Two tokens at 0.02 per million: 40 nano-units a request; 1,000 allow 25.
    policy_set(&db, &capped.id, &["--daily-budget", "0.000001"]);
    let (a, b) = tokio::join!(
        Gateway::start(&scratch, "replica-a", &config, &db),
        Gateway::start(&scratch, "replica-b", &config, &db)
    );
    let replicas = [a.addr.as_str(), b.addr.as_str()];

    // The rate: one minute's window, not two.
    let now = u64::try_from(tollgate_journal::clock::now_millis()).unwrap();
    if 60_000 - now % 60_000 < 25_000 {
        tokio::time::sleep(Duration::from_millis(60_000 - now % 60_000 + 50)).await;
    }
    let served = load(replicas, &rated_key.secret, 120).await;
    eprintln!("rate: {served} of 120 admitted at 40 a minute over two replicas");
    // A slice is a tenth of the limit: each replica may hold up to 4 it did not use.
    assert!(
        (32..=40).contains(&served),
        "{served} of 120 requests admitted at 40 a minute"
    );

    let served = load(replicas, &capped_key.secret, 80).await;
    let charged = store
        .ledger(&capped.id)
        .await
        .unwrap()
        .into_iter()
        .filter(|row| row.kind == LedgerKind::Charge)
        .fold(Amount::ZERO, |sum, row| {
            sum.checked_add(row.amount.checked_neg().unwrap()).unwrap()
        });
    let budget: Amount = "0.000001".parse().unwrap();
    eprintln!("budget: {served} of 80 admitted, {charged} charged of {budget}");
    assert!(
        charged <= budget,
        "{charged} charged against a budget of {budget}"
    );
    // Each replica may hold up to a tenth of the budget unused: 2 × 100 nano-units, 5 requests.
    assert!(
        (20..=25).contains(&served),
        "{served} requests within the budget"
    );
    drop((a, b));
}
