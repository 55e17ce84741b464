//! The store against SQLite always, and against PostgreSQL when `TOLLGATE_TEST_POSTGRES_URL` is
//! set (CI sets it). Every test uses its own account names, so PostgreSQL runs share a database.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{stores, unique};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tollgate_billing::Amount;
use tollgate_store::{Closed, HoldRequest, LedgerKind, Settlement, Store, StoreError};

fn units(n: i64) -> Amount {
    Amount::from_nanos(n * 1_000_000_000)
}

/// balance == credits − captured == ledger sum, and held == open holds.
async fn assert_books_balance(store: &Store, account_id: &str) {
    let report = store.report(account_id).await.unwrap();
    assert_eq!(
        report.ledger_sum,
        report.account.balance.into(),
        "ledger sums to balance"
    );
    assert_eq!(
        store.open_holds_total(account_id).await.unwrap(),
        report.account.held,
        "held equals the open holds"
    );
}

#[tokio::test]
async fn keys_authenticate_by_hash_and_can_be_disabled() {
    for store in stores().await {
        let name = format!("auth-{}", unique());
        let (account, key) = store.create_account(&name, units(1)).await.unwrap();
        assert!(key.secret.starts_with("tg-"));
        let who = store.authenticate(&key.secret).await.unwrap().unwrap();
        assert_eq!(who.account_id, account.id);
        assert_eq!(who.key_id, key.id);
        assert!(store.authenticate("tg-nope").await.unwrap().is_none());
        // Found by name, id and key id alike.
        assert_eq!(store.find_account(&name).await.unwrap().id, account.id);
        assert_eq!(store.find_account(&key.id).await.unwrap().id, account.id);
        assert!(matches!(
            store.create_account(&name, units(1)).await,
            Err(StoreError::AlreadyExists(_))
        ));
        store.set_disabled(&account.id, true).await.unwrap();
        assert!(matches!(
            store.authenticate(&key.secret).await,
            Err(StoreError::Disabled(_))
        ));
        // The opening balance is one credit row.
        let ledger = store.ledger(&account.id).await.unwrap();
        assert_eq!(ledger.len(), 1);
        assert_eq!(ledger[0].kind, LedgerKind::Credit);
        assert_eq!(ledger[0].amount, units(1));
    }
}

#[tokio::test]
async fn settle_captures_once_and_releases_the_rest() {
    for store in stores().await {
        let (account, _) = store
            .create_account(&format!("settle-{}", unique()), units(1))
            .await
            .unwrap();
        let hold = store
            .hold(HoldRequest::new(&account.id, "m", Amount::from_nanos(500)))
            .await
            .unwrap();
        let a = store.find_account(&account.id).await.unwrap();
        assert_eq!(a.held, Amount::from_nanos(500));
        assert_eq!(a.available(), Amount::from_nanos(1_000_000_000 - 500));

        let s = Settlement::new(Amount::from_nanos(420)).quantity("tokens=21");
        assert_eq!(
            store.settle(&hold.id, s.clone()).await.unwrap(),
            Closed::Now
        );
        assert_eq!(store.settle(&hold.id, s).await.unwrap(), Closed::Already);
        assert_eq!(
            store.release(&hold.id, "late").await.unwrap(),
            Closed::Already
        );

        let a = store.find_account(&account.id).await.unwrap();
        assert_eq!(a.held, Amount::ZERO);
        assert_eq!(a.balance, Amount::from_nanos(1_000_000_000 - 420));
        let ledger = store.ledger(&account.id).await.unwrap();
        assert_eq!(ledger.len(), 2, "opening credit and one charge");
        assert_eq!(ledger[1].kind, LedgerKind::Charge);
        assert_eq!(ledger[1].amount, Amount::from_nanos(-420));
        assert_eq!(ledger[1].quantity.as_deref(), Some("tokens=21"));
        assert_eq!(ledger[1].hold_id.as_deref(), Some(hold.id.as_str()));
        let report = store.report(&account.id).await.unwrap();
        assert_eq!(report.usage.len(), 1);
        assert_eq!(report.usage[0].charged, Amount::from_nanos(420).into());
        assert_books_balance(&store, &account.id).await;
    }
}

#[tokio::test]
async fn release_returns_everything_and_writes_no_charge() {
    for store in stores().await {
        let (account, _) = store
            .create_account(&format!("release-{}", unique()), units(1))
            .await
            .unwrap();
        let hold = store
            .hold(HoldRequest::new(&account.id, "m", units(1)))
            .await
            .unwrap();
        // The whole balance is held: the next hold is refused, naming what is available.
        match store
            .hold(HoldRequest::new(&account.id, "m", Amount::from_nanos(1)))
            .await
        {
            Err(StoreError::InsufficientBalance { available, .. }) => {
                assert_eq!(available, Amount::ZERO)
            }
            other => panic!("expected InsufficientBalance, got {other:?}"),
        }
        assert_eq!(
            store.release(&hold.id, "upstream 503").await.unwrap(),
            Closed::Now
        );
        assert_eq!(
            store.release(&hold.id, "again").await.unwrap(),
            Closed::Already
        );
        assert_eq!(
            store
                .settle(&hold.id, Settlement::new(Amount::from_nanos(1)))
                .await
                .unwrap(),
            Closed::Already
        );
        let a = store.find_account(&account.id).await.unwrap();
        assert_eq!((a.balance, a.held), (units(1), Amount::ZERO));
        assert_eq!(store.ledger(&account.id).await.unwrap().len(), 1);
        assert_eq!(store.hold_state(&hold.id).await.unwrap().0, "released");
        assert_books_balance(&store, &account.id).await;
    }
}

#[tokio::test]
async fn a_settlement_above_the_hold_may_overdraw_and_then_refuses_holds() {
    for store in stores().await {
        let (account, _) = store
            .create_account(&format!("over-{}", unique()), Amount::from_nanos(100))
            .await
            .unwrap();
        let hold = store
            .hold(HoldRequest::new(&account.id, "m", Amount::from_nanos(100)))
            .await
            .unwrap();
        store
            .settle(&hold.id, Settlement::new(Amount::from_nanos(150)))
            .await
            .unwrap();
        let a = store.find_account(&account.id).await.unwrap();
        assert_eq!(a.balance, Amount::from_nanos(-50));
        assert!(matches!(
            store
                .hold(HoldRequest::new(&account.id, "m", Amount::ZERO))
                .await,
            Err(StoreError::InsufficientBalance { .. })
        ));
        store
            .credit(&account.id, Amount::from_nanos(60), None)
            .await
            .unwrap();
        store
            .hold(HoldRequest::new(&account.id, "m", Amount::from_nanos(10)))
            .await
            .unwrap();
        assert_books_balance(&store, &account.id).await;
    }
}

#[tokio::test]
async fn settle_and_release_racing_close_a_hold_exactly_once() {
    for store in stores().await {
        let (account, _) = store
            .create_account(&format!("race-{}", unique()), units(1))
            .await
            .unwrap();
        for _ in 0..20 {
            let hold = store
                .hold(HoldRequest::new(&account.id, "m", Amount::from_nanos(1000)))
                .await
                .unwrap();
            let (s1, s2, r1) = tokio::join!(
                store.settle(&hold.id, Settlement::new(Amount::from_nanos(700))),
                store.settle(&hold.id, Settlement::new(Amount::from_nanos(700))),
                store.release(&hold.id, "race"),
            );
            let winners = [s1.unwrap(), s2.unwrap(), r1.unwrap()]
                .iter()
                .filter(|c| **c == Closed::Now)
                .count();
            assert_eq!(winners, 1);
        }
        assert_books_balance(&store, &account.id).await;
        assert_eq!(
            store.find_account(&account.id).await.unwrap().held,
            Amount::ZERO
        );
    }
}

/// 200 concurrent holds against one balance that covers 100 of them: exactly 100 are granted,
/// what may be spent never drops below zero while they run, every hold then closes exactly once
/// under doubled concurrent settle/release calls, and the ledger sums to the balance.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_concurrent_holds_never_overdraw() {
    for store in stores().await {
        let (account, _) = store
            .create_account(
                &format!("concurrent-{}", unique()),
                Amount::from_nanos(100_000),
            )
            .await
            .unwrap();
        let running = Arc::new(AtomicBool::new(true));
        let watcher = {
            let (store, id, running) = (store.clone(), account.id.clone(), running.clone());
            tokio::spawn(async move {
                let mut samples = 0;
                while running.load(Ordering::Relaxed) {
                    let a = store.find_account(&id).await.unwrap();
                    assert!(a.balance.nanos() >= 0, "balance went below zero: {a:?}");
                    assert!(a.available().nanos() >= 0, "overdrawn: {a:?}");
                    samples += 1;
                    tokio::task::yield_now().await;
                }
                samples
            })
        };

        // Phase 1: 200 holds at once, none closed yet.
        let attempts: Vec<_> = (0..200)
            .map(|_| {
                let (store, id) = (store.clone(), account.id.clone());
                tokio::spawn(async move {
                    store
                        .hold(HoldRequest::new(&id, "m", Amount::from_nanos(1_000)))
                        .await
                })
            })
            .collect();
        let mut holds = Vec::new();
        for t in attempts {
            match t.await.unwrap() {
                Ok(hold) => holds.push(hold),
                Err(StoreError::InsufficientBalance { .. }) => {}
                Err(e) => panic!("unexpected: {e}"),
            }
        }
        assert_eq!(holds.len(), 100, "exactly what the balance covers");
        let a = store.find_account(&account.id).await.unwrap();
        assert_eq!(a.available(), Amount::ZERO);

        // Phase 2: half settle below the hold, half release; every closing call is doubled.
        let closers: Vec<_> = holds
            .into_iter()
            .enumerate()
            .map(|(i, hold)| {
                let store = store.clone();
                let actual = 600 + i64::try_from(i).unwrap();
                tokio::spawn(async move {
                    let (a, b) = if i % 2 == 0 {
                        let s = Settlement::new(Amount::from_nanos(actual));
                        tokio::join!(store.settle(&hold.id, s.clone()), store.settle(&hold.id, s))
                    } else {
                        tokio::join!(
                            store.release(&hold.id, "test"),
                            store.release(&hold.id, "test")
                        )
                    };
                    let winners = [a.unwrap(), b.unwrap()]
                        .iter()
                        .filter(|c| **c == Closed::Now)
                        .count();
                    assert_eq!(winners, 1);
                    if i % 2 == 0 { actual } else { 0 }
                })
            })
            .collect();
        let mut charged = 0;
        for t in closers {
            charged += t.await.unwrap();
        }
        running.store(false, Ordering::Relaxed);
        assert!(watcher.await.unwrap() > 0);
        let a = store.find_account(&account.id).await.unwrap();
        assert_eq!(a.balance, Amount::from_nanos(100_000 - charged));
        assert_eq!(a.held, Amount::ZERO);
        assert_eq!(store.ledger(&account.id).await.unwrap().len(), 1 + 50);
        assert_books_balance(&store, &account.id).await;
    }
}

#[tokio::test]
async fn stale_request_holds_are_released_but_task_holds_are_not() {
    // SQLite only: the sweep is global, and on the shared PostgreSQL test database it would
    // release the holds of tests running beside it.
    for store in stores().await.into_iter().take(1) {
        let (account, _) = store
            .create_account(&format!("stale-{}", unique()), units(1))
            .await
            .unwrap();
        let orphan = store
            .hold(HoldRequest::new(&account.id, "m", Amount::from_nanos(10)))
            .await
            .unwrap();
        let task = store
            .hold(HoldRequest::new(&account.id, "m", Amount::from_nanos(20)).task("cgt-x"))
            .await
            .unwrap();
        // Nothing is older than an hour yet.
        assert_eq!(
            store
                .release_stale_holds(std::time::Duration::from_secs(3600))
                .await
                .unwrap(),
            0
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        store
            .release_stale_holds(std::time::Duration::from_millis(1))
            .await
            .unwrap();
        assert_eq!(store.hold_state(&orphan.id).await.unwrap().0, "released");
        assert_eq!(store.hold_state(&task.id).await.unwrap().0, "open");
        assert_books_balance(&store, &account.id).await;
    }
}

/// Issue 42 item 8. The adversary: time, or an insider. All the credits a deployment ever makes
/// pass 9.2 × 10⁹ units in a currency of small units (IDR, VND) with no mischief, and an insider
/// can get there on purpose; SQLite's `SUM` then failed with "integer overflow" — even after the
/// credit was reversed — and the audit was off for good. Every sum of the audit and of the
/// reports is taken in two halves (`crate::wide_sum`) and read back as a `Total`.
#[tokio::test]
async fn sums_past_what_one_amount_holds_neither_overflow_nor_switch_the_audit_off() {
    for store in stores().await {
        let big = units(4_000_000_000); // 4 × 10⁹ units: 4 × 10¹⁸ nano-units
        let mut ids = Vec::new();
        for _ in 0..3 {
            let (account, _) = store
                .create_account(&format!("rich-{}", unique()), big)
                .await
                .unwrap();
            ids.push(account.id);
        }
        // Credited twice more and taken back each time: the running sums pass i64 both ways.
        for _ in 0..2 {
            store.credit(&ids[0], big, Some("top-up")).await.unwrap();
            store
                .credit(&ids[0], Amount::from_nanos(-big.nanos()), Some("reversed"))
                .await
                .unwrap();
        }
        let report = store.audit().await.unwrap();
        let mine: Vec<_> = report
            .violations
            .iter()
            .filter(|v| ids.iter().any(|id| v.subject.contains(id.as_str())))
            .collect();
        assert!(mine.is_empty(), "{mine:?}");
        assert!(
            report.total_balance.nanos() >= 3 * i128::from(big.nanos()),
            "{}",
            report.total_balance
        );
        assert!(report.total_credited.nanos() > i128::from(i64::MAX));
        for id in &ids {
            let shown = store.report(id).await.unwrap();
            assert_eq!(shown.ledger_sum, big.into(), "{id}");
        }
        assert_books_balance(&store, &ids[0]).await;
    }
}

/// Issue 42 item 9. The adversary: another user of the gateway's host. The SQLite file holds
/// every balance and the secret that signs media links; it was created 0644, and a link forged
/// with the key read from it was accepted. It is created 0600, and a file an earlier version
/// left readable is made private at the next start.
#[cfg(unix)]
#[tokio::test]
async fn the_sqlite_file_is_readable_by_its_owner_only() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = std::env::temp_dir().join(format!("tollgate-store-mode-{}", unique()));
    let path = dir.join("t.db");
    let url = format!("sqlite://{}", path.display());
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let store = Store::connect(&url).await.unwrap();
    store.create_account("private", units(1)).await.unwrap();
    assert_eq!(mode(&path), 0o600);
    let wal = dir.join("t.db-wal");
    if wal.exists() {
        assert_eq!(mode(&wal), 0o600, "the WAL too");
    }
    store.close().await;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let store = Store::connect(&url).await.unwrap();
    assert_eq!(mode(&path), 0o600, "tightened at the next start");
    store.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}
