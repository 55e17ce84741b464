//! The admin API across replicas (`docs/decisions.md`, "The admin API", "Channel health"): two
//! `tollgate serve` processes on one PostgreSQL database. A channel switched off through one
//! replica's admin API is off on the other within its switch-reading period, and back on the
//! same way; a key revoked through one is refused by the other within the key lookup's
//! freshness.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::{Duration, Instant};
use support::{Gateway, Scratch, http};
use tollgate_sim::KnobSettings;
use tollgate_store::Store;

const EMBED: &str = r#"{"model":"text-embedding-3-small","input":"replicas"}"#;

/// Waits (up to `within`) until `replica` answers `status` to the key's embeddings request;
/// returns how long it took.
async fn until_answers(replica: &str, key: &str, status: u16, within: Duration) -> Duration {
    let started = Instant::now();
    loop {
        let (got, body) = http(replica, "POST", "/v1/embeddings", Some(key), Some(EMBED))
            .await
            .unwrap();
        if got == status {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < within,
            "{replica} still answers {got} after {within:?}: {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_switch_and_a_revocation_reach_the_other_replica() {
    let Ok(db) = std::env::var("TOLLGATE_TEST_POSTGRES_URL") else {
        eprintln!("skipped: TOLLGATE_TEST_POSTGRES_URL is not set");
        return;
    };
    let scratch = Scratch::new("admin-pg");
    let sim = tollgate_sim::start("127.0.0.1:0".parse().unwrap(), KnobSettings::default())
        .await
        .unwrap();
    let store = Store::connect(&db).await.unwrap();
    // A channel name of this run's own: switches are shared by everything on the database.
    let channel = format!("openai-{}", scratch.tag);
    let config = support::embeddings_config(&scratch, &sim.base_url(), &channel);
    let (_, key) = store
        .create_account(&format!("replicas-{}", scratch.tag), "10".parse().unwrap())
        .await
        .unwrap();
    let (_, admin) = store
        .create_admin_token(&format!("replicas-{}", scratch.tag), false)
        .await
        .unwrap();
    let (a, b) = tokio::join!(
        Gateway::start(&scratch, "replica-a", &config, &db),
        Gateway::start(&scratch, "replica-b", &config, &db)
    );
    let (a, b) = (a.addr.as_str(), b.addr.as_str());
    let second = Duration::from_secs(1);
    until_answers(b, &key.secret, 200, second).await;

    // Off through A: A at once, B within its 5 s period.
    let path = format!("/admin/v1/channels/{channel}/disable");
    let (status, body) = http(a, "POST", &path, Some(&admin), None).await.unwrap();
    assert_eq!(status, 200, "{body}");
    until_answers(a, &key.secret, 503, Duration::from_millis(10)).await;
    let took = until_answers(b, &key.secret, 503, Duration::from_secs(8)).await;
    eprintln!("the other replica switched the channel off after {took:?}");

    // On again through B.
    let path = format!("/admin/v1/channels/{channel}/enable");
    let (status, body) = http(b, "POST", &path, Some(&admin), None).await.unwrap();
    assert_eq!(status, 200, "{body}");
    until_answers(b, &key.secret, 200, Duration::from_millis(10)).await;
    until_answers(a, &key.secret, 200, Duration::from_secs(8)).await;

    // A key revoked through A is refused by B within the key lookup's freshness (1 s): 401,
    // a credential that no longer exists (issue 22, item 11).
    let path = format!("/admin/v1/keys/{}/revoke", key.id);
    let (status, body) = http(a, "POST", &path, Some(&admin), None).await.unwrap();
    assert_eq!(status, 200, "{body}");
    let took = until_answers(b, &key.secret, 401, Duration::from_secs(3)).await;
    eprintln!("the other replica refused the revoked key after {took:?}");

    // Both changes are in the one audit log, whichever replica took them.
    let changes = store.admin_changes(Some(&channel), 10, None).await.unwrap();
    let actions: Vec<&str> = changes.iter().map(|c| c.change.action.as_str()).collect();
    assert_eq!(actions, ["channel.enable", "channel.disable"]);
}
