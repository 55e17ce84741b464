//! Redemption codes and counted attempts (`tollgate_store::codes`, `::throttle`), on SQLite and,
//! when `TOLLGATE_TEST_POSTGRES_URL` is set, on PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{stores, stores_with_urls, tamper, unique};
use tollgate_billing::Amount;
use tollgate_store::{
    AdminChange, Attempt, AttemptLimit, LedgerKind, NewCodeBatch, NotRedeemed, Redeemer,
    RedemptionCode, Store,
};

fn units(n: i64) -> Amount {
    Amount::from_nanos(n * 1_000_000_000)
}

fn operator() -> AdminChange {
    AdminChange {
        actor: "cli:test".into(),
        action: "codes.create".into(),
        target: "codes".into(),
        before: None,
        after: None,
        request_id: None,
    }
}

fn by(account_id: &str) -> Redeemer<'_> {
    Redeemer {
        account_id,
        request_id: Some("req_test"),
        address: Some("198.51.100.7"),
    }
}

async fn batch(
    store: &Store,
    amount: Amount,
    count: u32,
    expires_at: Option<i64>,
) -> (String, Vec<RedemptionCode>) {
    let (batch, codes) = store
        .create_code_batch(
            &NewCodeBatch {
                name: &format!("promo-{}", unique()),
                amount,
                count,
                expires_at,
            },
            &operator(),
        )
        .await
        .unwrap();
    assert_eq!(codes.len(), count as usize);
    (batch.id, codes)
}

/// The violations of the audit that name one of `subjects`.
async fn violations(store: &Store, subjects: &[&str]) -> Vec<String> {
    let report = store.audit().await.unwrap();
    report
        .violations
        .iter()
        .filter(|v| subjects.iter().any(|s| v.subject.contains(s)))
        .map(|v| format!("{}: {} {}", v.rule, v.subject, v.detail))
        .collect()
}

#[tokio::test]
async fn a_code_credits_once_and_names_its_batch() {
    for store in stores().await {
        let (account, _) = store
            .create_account(&format!("redeemer-{}", unique()), units(1))
            .await
            .unwrap();
        let (batch_id, codes) = batch(&store, units(5), 3, None).await;
        let redeemed = store
            .redeem_code(&codes[1], by(&account.id))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(redeemed.amount, units(5));
        assert_eq!(redeemed.balance, units(6));
        assert_eq!(redeemed.batch_id, batch_id);
        let ledger = store.ledger(&account.id).await.unwrap();
        let row = ledger.iter().find(|r| r.id == redeemed.ledger_id).unwrap();
        assert_eq!(row.kind, LedgerKind::Redemption);
        assert_eq!(row.amount, units(5));
        let note = row.note.as_deref().unwrap();
        assert!(
            note.contains(&batch_id) && note.contains("code 2 "),
            "{note}"
        );

        // Again, by the same account or another: nothing more.
        let (other, _) = store
            .create_account(&format!("other-{}", unique()), units(0))
            .await
            .unwrap();
        for who in [&account.id, &other.id] {
            assert_eq!(
                store.redeem_code(&codes[1], by(who)).await.unwrap(),
                Err(NotRedeemed::Used)
            );
        }
        assert_eq!(
            store
                .redeem_code(&RedemptionCode::generate(), by(&account.id))
                .await
                .unwrap(),
            Err(NotRedeemed::Unknown)
        );

        // The report: one of three, by whom and from where.
        let (shown, redemptions) = store.code_batch(&batch_id).await.unwrap();
        assert_eq!((shown.count, shown.redeemed), (3, 1));
        assert_eq!(redemptions.len(), 1);
        assert_eq!(redemptions[0].number, 2);
        assert_eq!(redemptions[0].account_id, account.id);
        assert_eq!(redemptions[0].ledger_id, redeemed.ledger_id);
        assert_eq!(redemptions[0].address.as_deref(), Some("198.51.100.7"));

        // Revoked: the rest redeem nothing; what was redeemed stays.
        let revoked = store
            .revoke_code_batch(&batch_id, &operator())
            .await
            .unwrap();
        assert!(revoked.revoked_at.is_some());
        assert_eq!(
            store.redeem_code(&codes[0], by(&other.id)).await.unwrap(),
            Err(NotRedeemed::Revoked)
        );
        assert_eq!(
            store.find_account(&account.id).await.unwrap().balance,
            units(6)
        );

        // Expired: nothing.
        let (_, late) = batch(&store, units(1), 1, Some(1)).await;
        assert_eq!(
            store.redeem_code(&late[0], by(&other.id)).await.unwrap(),
            Err(NotRedeemed::Expired)
        );
        assert!(
            violations(&store, &[&account.id, &other.id, &batch_id])
                .await
                .is_empty()
        );
    }
}

/// The adversary: twenty clients with one code, on two replicas (two stores on one
/// PostgreSQL database), all at once. One credit.
#[tokio::test]
async fn twenty_at_once_on_two_replicas_credit_once() {
    for (store, url) in stores_with_urls().await {
        let replicas = [store.clone(), Store::connect(&url).await.unwrap()];
        let (account, _) = store
            .create_account(&format!("race-{}", unique()), units(0))
            .await
            .unwrap();
        let (batch_id, codes) = batch(&store, units(7), 1, None).await;
        let mut tasks = Vec::new();
        for i in 0..20 {
            let replica = replicas[i % 2].clone();
            let code = codes[0].clone();
            let account_id = account.id.clone();
            tasks.push(tokio::spawn(async move {
                replica
                    .redeem_code(&code, by(&account_id))
                    .await
                    .unwrap()
                    .is_ok()
            }));
        }
        let mut credited = 0;
        for task in tasks {
            credited += usize::from(task.await.unwrap());
        }
        assert_eq!(credited, 1);
        assert_eq!(
            store.find_account(&account.id).await.unwrap().balance,
            units(7)
        );
        assert!(
            violations(&store, &[&account.id, &batch_id])
                .await
                .is_empty()
        );
    }
}

/// The adversary: an insider who can write the database. A redeemed code stripped of its row,
/// or marked unredeemed so that it credits again, leaves a row no code names.
#[tokio::test]
async fn a_code_unredeemed_behind_the_store_is_caught_by_the_audit() {
    for (store, url) in stores_with_urls().await {
        let (account, _) = store
            .create_account(&format!("insider-{}", unique()), units(0))
            .await
            .unwrap();
        let (batch_id, codes) = batch(&store, units(3), 1, None).await;
        let first = store
            .redeem_code(&codes[0], by(&account.id))
            .await
            .unwrap()
            .unwrap();
        let unlink = format!("UPDATE codes SET ledger_id = NULL WHERE batch_id = '{batch_id}'");
        tamper(&url, &unlink).await;
        let found = violations(&store, &[&first.ledger_id, &batch_id]).await;
        assert!(
            found.iter().any(|v| v.starts_with("redemption_has_code"))
                && found.iter().any(|v| v.starts_with("code_redeemed_once")),
            "{found:?}"
        );
        // Put it back: a PostgreSQL database is shared with the other tests' audits.
        let relink = format!(
            "UPDATE codes SET ledger_id = '{}' WHERE batch_id = '{batch_id}'",
            first.ledger_id
        );
        tamper(&url, &relink).await;
        assert!(
            violations(&store, &[&first.ledger_id, &batch_id])
                .await
                .is_empty()
        );
        if !url.starts_with("sqlite:") {
            continue;
        }
        // On the test's own SQLite file: unredeemed, and redeemed again.
        tamper(
            &url,
            &format!("UPDATE codes SET redeemed_at = NULL WHERE batch_id = '{batch_id}'"),
        )
        .await;
        let second = store
            .redeem_code(&codes[0], by(&account.id))
            .await
            .unwrap()
            .unwrap();
        let found = violations(&store, &[&first.ledger_id, &second.ledger_id]).await;
        assert!(
            found
                .iter()
                .any(|v| v.starts_with("redemption_has_code") && v.contains(&first.ledger_id)),
            "{found:?}"
        );
    }
}

#[tokio::test]
async fn attempts_are_counted_before_they_are_tried_and_given_back_on_success() {
    for store in stores().await {
        let account = format!("code:account:{}", unique());
        let address = format!("code:address:{}", unique());
        let limits = [
            AttemptLimit {
                scope: &account,
                limit: 3,
            },
            AttemptLimit {
                scope: &address,
                limit: 5,
            },
        ];
        let now = 1_000_000_000_000;
        let window = 3_600_000;
        let mut allowed = Vec::new();
        for _ in 0..3 {
            match store.count_attempt(&limits, window, now).await.unwrap() {
                Attempt::Allowed { window_start } => allowed.push(window_start),
                refused => panic!("{refused:?}"),
            }
        }
        match store.count_attempt(&limits, window, now).await.unwrap() {
            Attempt::Refused {
                scope,
                retry_after_ms,
            } => {
                assert_eq!(scope, 0, "the account's limit is the lower");
                assert!(retry_after_ms > 0 && retry_after_ms <= window);
            }
            allowed => panic!("{allowed:?}"),
        }
        // The next window starts afresh.
        assert!(matches!(
            store
                .count_attempt(&limits, window, now + window)
                .await
                .unwrap(),
            Attempt::Allowed { .. }
        ));
        // An attempt that succeeded does not count: the account may try again.
        store.give_back_attempt(&limits, allowed[0]).await.unwrap();
        store.give_back_attempt(&limits, allowed[0]).await.unwrap();
        assert!(matches!(
            store.count_attempt(&limits, window, now).await.unwrap(),
            Attempt::Allowed { .. }
        ));
        assert!(store.prune_attempts(now + 2 * window + 1).await.unwrap() >= 2);
    }
}
