//! Live voice sessions' money (`tollgate_store::sessions`): a hold that grows, a charge per
//! response, the fence against a replica back from a pause, and the sweeper. SQLite always,
//! PostgreSQL when `TOLLGATE_TEST_POSTGRES_URL` is set.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{stores, unique};
use tollgate_billing::Amount;
use tollgate_store::{Hold, SessionOpening, Settlement, Step, Store, StoreError};

fn nanos(n: i64) -> Amount {
    Amount::from_nanos(n)
}

async fn opening(store: &Store, balance: i64) -> (String, SessionOpening) {
    let (account, key) = store
        .create_account(&format!("voice-{}", unique()), nanos(balance))
        .await
        .unwrap();
    let opening = SessionOpening {
        account_id: account.id.clone(),
        key_id: key.id,
        model: "gpt-realtime".into(),
        request_id: format!("req-{}", unique()),
        first_step: nanos(1_000),
        endpoint: "realtime".into(),
    };
    (account.id, opening)
}

/// balance == ledger sum, held == open holds, and the audit clean.
async fn books_balance(store: &Store, account: &str) {
    let report = store.report(account).await.unwrap();
    assert_eq!(report.ledger_sum, report.account.balance.into());
    assert_eq!(
        store.open_holds_total(account).await.unwrap(),
        report.account.held
    );
}

fn held(step: Step) -> Hold {
    match step {
        Step::Held(hold) => hold,
        other => panic!("expected a hold, got {other:?}"),
    }
}

#[tokio::test]
async fn a_session_holds_in_steps_and_charges_each_response_on_a_hold_of_its_own() {
    for store in stores().await {
        let (account, opening) = opening(&store, 5_000).await;
        let session = store.open_session(&opening).await.unwrap();
        assert_eq!(session.hold.amount, nanos(1_000));
        let hold = held(
            store
                .grow_session_hold(&session.id, &session.hold, nanos(1_000), nanos(1_500))
                .await
                .unwrap(),
        );
        assert_eq!(hold.amount, nanos(2_000));
        assert_eq!(
            store.report(&account).await.unwrap().account.held,
            nanos(2_000)
        );
        // The first response: 1,700 charged, the next response held 1,000 in the same step.
        let settled = store
            .settle_response(
                &session.id,
                &hold,
                Settlement::new(nanos(1_700)),
                None,
                nanos(1_000),
            )
            .await
            .unwrap();
        assert!(settled.charged);
        let next = held(settled.next);
        assert_ne!(next.id, hold.id);
        let report = store.report(&account).await.unwrap();
        assert_eq!(
            (report.account.balance, report.account.held),
            (nanos(3_300), nanos(1_000))
        );
        // A step past the balance is refused and nothing changes.
        let refused = store
            .grow_session_hold(&session.id, &next, nanos(2_301), nanos(900))
            .await
            .unwrap();
        assert!(matches!(
            refused,
            Step::Refused(StoreError::InsufficientBalance { .. })
        ));
        assert_eq!(
            store.report(&account).await.unwrap().account.held,
            nanos(1_000)
        );
        // The last response charged as the session closes; no hold stays.
        assert!(
            store
                .close_session(
                    &session.id,
                    Some(&next),
                    Some((Settlement::new(nanos(400)), None)),
                    None,
                    "client closed"
                )
                .await
                .unwrap()
        );
        let report = store.report(&account).await.unwrap();
        assert_eq!(
            (report.account.balance, report.account.held),
            (nanos(2_900), nanos(0))
        );
        let charges: Vec<_> = store
            .ledger(&account)
            .await
            .unwrap()
            .into_iter()
            .filter(|e| e.hold_id.is_some())
            .collect();
        assert_eq!(charges.len(), 2, "one ledger row per response");
        books_balance(&store, &account).await;
        assert!(
            store
                .open_sessions(None, 1_000)
                .await
                .unwrap()
                .iter()
                .all(|s| s.id != session.id)
        );
        // Closing again changes nothing.
        assert!(
            !store
                .close_session(&session.id, None, None, None, "again")
                .await
                .unwrap()
        );
    }
}

/// The adversary: a replica paused (SIGSTOP) or killed mid-response. The sweeper charges what
/// was journaled, at most the hold, and the replica back from its pause is fenced: its
/// settlement, step and heartbeat change nothing.
#[tokio::test]
async fn a_stale_session_is_charged_what_was_journaled_and_its_replica_is_fenced() {
    for store in stores().await {
        let (account, opening) = opening(&store, 5_000).await;
        let session = store.open_session(&opening).await.unwrap();
        assert!(
            store
                .journal_session(&session.id, &session.hold, nanos(640))
                .await
                .unwrap()
        );
        // Fresh: not swept.
        store
            .sweep_sessions(std::time::Duration::from_secs(3_600))
            .await
            .unwrap();
        assert!(
            store
                .open_sessions(None, 1_000)
                .await
                .unwrap()
                .iter()
                .any(|s| s.id == session.id)
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        // Swept: by this call, or by a test beside it sweeping the same database (its sweep
        // takes every stale session, this one among them).
        store
            .sweep_sessions(std::time::Duration::from_millis(1))
            .await
            .unwrap();
        assert!(
            !store
                .open_sessions(None, 1_000)
                .await
                .unwrap()
                .iter()
                .any(|s| s.id == session.id),
            "the stale session was swept"
        );
        let report = store.report(&account).await.unwrap();
        assert_eq!(
            (report.account.balance, report.account.held),
            (nanos(4_360), nanos(0))
        );
        // The paused replica wakes up.
        assert!(
            !store
                .journal_session(&session.id, &session.hold, nanos(900))
                .await
                .unwrap()
        );
        assert!(matches!(
            store
                .grow_session_hold(&session.id, &session.hold, nanos(10), nanos(900))
                .await
                .unwrap(),
            Step::Fenced
        ));
        let late = store
            .settle_response(
                &session.id,
                &session.hold,
                Settlement::new(nanos(900)),
                None,
                nanos(1_000),
            )
            .await
            .unwrap();
        assert!(!late.charged && matches!(late.next, Step::Fenced));
        assert!(
            !store
                .close_session(
                    &session.id,
                    Some(&session.hold),
                    Some((Settlement::new(nanos(900)), None)),
                    None,
                    "late"
                )
                .await
                .unwrap()
        );
        assert_eq!(
            store.report(&account).await.unwrap().account.balance,
            nanos(4_360)
        );
        books_balance(&store, &account).await;
    }
}

/// A journaled figure above the hold (a replica that lied, or a bug) is charged at the hold.
#[tokio::test]
async fn the_sweeper_never_charges_past_the_hold() {
    for store in stores().await {
        let (account, opening) = opening(&store, 5_000).await;
        let session = store.open_session(&opening).await.unwrap();
        assert!(
            store
                .journal_session(&session.id, &session.hold, nanos(99_000))
                .await
                .unwrap()
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        store
            .sweep_sessions(std::time::Duration::from_millis(1))
            .await
            .unwrap();
        assert_eq!(
            store.report(&account).await.unwrap().account.balance,
            nanos(4_000)
        );
        books_balance(&store, &account).await;
    }
}

/// The insider who can write the database but not read the ledger's signing key: a journaled
/// figure raised past its seal (or its seal struck out) is charged nothing by the sweeper — the
/// hold released, the reason written — while a sealed one is charged as journaled. SQLite
/// only: a sealed store's sweeper would judge the unsealed journals of the tests running beside
/// it on a shared PostgreSQL database.
#[tokio::test]
async fn a_journal_raised_past_its_seal_is_charged_nothing() {
    let (store, url) = common::stores_with_urls().await.remove(0);
    let key = ed25519_dalek::SigningKey::from_bytes(&[7u8; 32]);
    store.seal_session_journals(tollgate_store::JournalSeal::from_signing_key(&key));
    let stale = std::time::Duration::from_millis(1);
    // Sealed and untouched: charged as journaled.
    let (honest, opening_a) = opening(&store, 5_000).await;
    let a = store.open_session(&opening_a).await.unwrap();
    assert!(
        store
            .journal_session(&a.id, &a.hold, nanos(300))
            .await
            .unwrap()
    );
    // Sealed, then raised by a hand on the database.
    let (robbed, opening_b) = opening(&store, 5_000).await;
    let b = store.open_session(&opening_b).await.unwrap();
    assert!(
        store
            .journal_session(&b.id, &b.hold, nanos(10))
            .await
            .unwrap()
    );
    let raise = "UPDATE sessions SET unsettled_nanos = 990 WHERE id = ";
    common::tamper(&url, &format!("{raise}'{}'", b.id)).await;
    // Its seal struck out instead (a Gemini Live session: its usage records are `live`'s).
    let (struck, mut opening_c) = opening(&store, 5_000).await;
    opening_c.endpoint = "live".into();
    let c = store.open_session(&opening_c).await.unwrap();
    assert!(
        store
            .journal_session(&c.id, &c.hold, nanos(500))
            .await
            .unwrap()
    );
    let strike = "UPDATE sessions SET journal_mac = NULL WHERE id = ";
    common::tamper(&url, &format!("{strike}'{}'", c.id)).await;
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    assert_eq!(store.sweep_sessions(stale).await.unwrap(), 3);
    let balance = async |account: &str| store.report(account).await.unwrap().account.balance;
    assert_eq!(balance(&honest).await, nanos(4_700));
    assert_eq!(
        balance(&robbed).await,
        nanos(5_000),
        "nothing past the seal"
    );
    assert_eq!(balance(&struck).await, nanos(5_000), "nothing without it");
    for account in [&honest, &robbed, &struck] {
        books_balance(&store, account).await;
    }
    let filter = tollgate_store::UsageFilter {
        account_id: Some(struck.clone()),
        ..Default::default()
    };
    let records = store.usage_records(&filter, 10, None).await.unwrap();
    assert!(!records.is_empty());
    assert!(records.iter().all(|r| r.endpoint == "live"), "{records:?}");
    let summary = records.iter().find(|r| r.kind == "session");
    let note = summary.and_then(|r| r.note.as_deref()).unwrap_or("");
    assert!(note.contains("seal did not verify"), "{records:?}");
}
