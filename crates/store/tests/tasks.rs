//! The task table: atomic creation with the hold, leasing without double leases, exactly-once
//! terminal transitions that settle or refund in the same transaction, client polls, listings.
//! SQLite always; PostgreSQL when `TOLLGATE_TEST_POSTGRES_URL` is set.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{stores, unique};

use std::collections::HashSet;
use std::time::Duration;
use tollgate_billing::Amount;
use tollgate_store::{
    LedgerKind, NewTask, Outcome, Poll, Settlement, Store, StoreError, TaskFilter, TaskState,
};

fn new_task(account: &str, key: &str, channel: &str) -> NewTask {
    NewTask {
        id: Store::new_task_id("cgt"),
        format: "clip".into(),
        account_id: account.into(),
        key_id: key.into(),
        model: "clipgen-cn-2.0-260128".into(),
        channel: channel.into(),
        upstream_model: "upstream-2.0".into(),
        pricing: serde_json::json!({"tokens": 40595}),
        request: serde_json::json!({"content": [{"type": "text", "text": "a cat"}]}),
        request_id: None,
        in_flight_limits: (None, None),
        deadline: Duration::from_secs(3600),
        traceparent: None,
    }
}

#[tokio::test]
async fn a_task_and_its_hold_are_written_together_or_not_at_all() {
    for store in stores().await {
        let (account, key) = store
            .create_account(&format!("t-{}", unique()), Amount::from_nanos(1000))
            .await
            .unwrap();
        let (task, hold) = store
            .create_task(new_task(&account.id, &key.id, "c"), Amount::from_nanos(600))
            .await
            .unwrap();
        assert_eq!(task.state, TaskState::Submitting);
        assert_eq!(task.hold_id.as_deref(), Some(hold.id.as_str()));
        assert!(task.id.starts_with("cgt-"));
        assert_eq!(
            store.find_account(&account.id).await.unwrap().held,
            Amount::from_nanos(600)
        );
        // The balance cannot cover a second one: no row, no hold.
        let second = new_task(&account.id, &key.id, "c");
        let id = second.id.clone();
        assert!(matches!(
            store.create_task(second, Amount::from_nanos(600)).await,
            Err(StoreError::InsufficientBalance { .. })
        ));
        assert!(store.task(&id).await.unwrap().is_none());
        assert_eq!(
            store.find_account(&account.id).await.unwrap().held,
            Amount::from_nanos(600)
        );
    }
}

#[tokio::test]
async fn terminal_transitions_happen_once_and_settle_or_refund_with_them() {
    for store in stores().await {
        let channel = format!("ch-{}", unique());
        let (account, key) = store
            .create_account(&format!("t-{}", unique()), Amount::from_nanos(10_000))
            .await
            .unwrap();
        let (ok, _) = store
            .create_task(
                new_task(&account.id, &key.id, &channel),
                Amount::from_nanos(1000),
            )
            .await
            .unwrap();
        let (bad, _) = store
            .create_task(
                new_task(&account.id, &key.id, &channel),
                Amount::from_nanos(1000),
            )
            .await
            .unwrap();
        assert!(
            store
                .task_submitted(&ok.id, &channel, "up-1", Duration::ZERO)
                .await
                .unwrap()
        );
        assert!(
            !store
                .task_submitted(&ok.id, &channel, "up-1", Duration::ZERO)
                .await
                .unwrap(),
            "only from submitting"
        );
        let success = || Outcome::Succeeded {
            result: serde_json::json!({"video_url": "https://x/v.mp4"}),
            settlement: Box::new(Settlement::new(Amount::from_nanos(800)).quantity("tokens=40000")),
        };
        let (a, b) = tokio::join!(
            store.finish_task(&ok.id, success(), Some("succeeded")),
            store.finish_task(&ok.id, success(), None)
        );
        assert_eq!(
            [a.unwrap(), b.unwrap()].iter().filter(|w| **w).count(),
            1,
            "one winner"
        );
        let failure = || Outcome::Failed {
            error: serde_json::json!({"code": "x"}),
        };
        assert!(
            store
                .finish_task(&bad.id, failure(), Some("failed"))
                .await
                .unwrap()
        );
        assert!(!store.finish_task(&bad.id, failure(), None).await.unwrap());
        assert!(
            !store.finish_task(&ok.id, failure(), None).await.unwrap(),
            "a succeeded task stays succeeded"
        );

        let done = store.task(&ok.id).await.unwrap().unwrap();
        assert_eq!((done.state, done.progress), (TaskState::Succeeded, 100));
        assert_eq!(done.result.unwrap()["video_url"], "https://x/v.mp4");
        let a = store.find_account(&account.id).await.unwrap();
        assert_eq!(
            (a.balance, a.held),
            (Amount::from_nanos(9_200), Amount::ZERO)
        );
        let ledger = store.ledger(&account.id).await.unwrap();
        let charges: Vec<_> = ledger
            .iter()
            .filter(|e| e.kind == LedgerKind::Charge)
            .collect();
        assert_eq!(charges.len(), 1);
        assert_eq!(charges[0].task_id.as_deref(), Some(ok.id.as_str()));
    }
}

#[tokio::test]
async fn concurrent_workers_never_lease_the_same_task() {
    for store in stores().await {
        let channel = format!("ch-{}", unique());
        let (account, key) = store
            .create_account(&format!("t-{}", unique()), Amount::from_nanos(1_000_000))
            .await
            .unwrap();
        let mut ids = HashSet::new();
        for _ in 0..40 {
            let (t, _) = store
                .create_task(
                    new_task(&account.id, &key.id, &channel),
                    Amount::from_nanos(10),
                )
                .await
                .unwrap();
            store
                .task_submitted(&t.id, &channel, "up", Duration::ZERO)
                .await
                .unwrap();
            ids.insert(t.id);
        }
        let workers: Vec<_> = (0..4)
            .map(|w| {
                let (store, channel) = (store.clone(), channel.clone());
                tokio::spawn(async move {
                    let mut mine = Vec::new();
                    for _ in 0..5 {
                        let leased = store
                            .lease_due_tasks(&format!("w{w}"), &channel, 4, Duration::from_secs(30))
                            .await
                            .unwrap();
                        mine.extend(leased.into_iter().map(|t| (format!("w{w}"), t.id)));
                    }
                    mine
                })
            })
            .collect();
        let mut seen = HashSet::new();
        let mut leases = Vec::new();
        for w in workers {
            for (owner, id) in w.await.unwrap() {
                assert!(seen.insert(id.clone()), "{id} leased twice");
                leases.push((owner, id));
            }
        }
        assert_eq!(seen, ids, "every due task was leased exactly once");
        // Only the lease holder records a poll; it frees the lease and schedules the next one.
        let (owner, id) = &leases[0];
        let poll = |who: &str| {
            let (store, id, who) = (store.clone(), id.clone(), who.to_owned());
            async move {
                store
                    .record_poll(
                        &id,
                        &who,
                        TaskState::Running,
                        Some("running"),
                        50,
                        Duration::from_secs(60),
                        0,
                    )
                    .await
                    .unwrap()
            }
        };
        assert!(!poll("intruder").await);
        assert!(poll(owner).await);
        let task = store.task(id).await.unwrap().unwrap();
        assert_eq!((task.state, task.progress), (TaskState::Running, 50));
        assert!(
            store
                .lease_due_tasks("w9", &channel, 100, Duration::from_secs(30))
                .await
                .unwrap()
                .is_empty()
        );
    }
}

#[tokio::test]
async fn polls_are_owner_only_and_at_most_once_a_second() {
    for store in stores().await {
        let (account, key) = store
            .create_account(&format!("t-{}", unique()), Amount::from_nanos(1000))
            .await
            .unwrap();
        let (other, _) = store
            .create_account(&format!("t-{}", unique()), Amount::from_nanos(1000))
            .await
            .unwrap();
        let (task, _) = store
            .create_task(new_task(&account.id, &key.id, "c"), Amount::from_nanos(10))
            .await
            .unwrap();
        let second = Duration::from_secs(1);
        assert!(matches!(
            store
                .poll_task(&task.id, &account.id, "clip", second)
                .await
                .unwrap(),
            Poll::Task(_)
        ));
        assert_eq!(
            store
                .poll_task(&task.id, &account.id, "clip", second)
                .await
                .unwrap(),
            Poll::TooSoon
        );
        assert_eq!(
            store
                .poll_task(&task.id, &other.id, "clip", second)
                .await
                .unwrap(),
            Poll::NotFound
        );
        assert_eq!(
            store
                .poll_task("cgt-nope", &account.id, "clip", second)
                .await
                .unwrap(),
            Poll::NotFound
        );
        // Hiding works only once finished.
        assert!(!store.hide_task(&task.id, &account.id).await.unwrap());
        store
            .finish_task(
                &task.id,
                Outcome::Failed {
                    error: serde_json::json!({}),
                },
                None,
            )
            .await
            .unwrap();
        assert!(store.hide_task(&task.id, &account.id).await.unwrap());
        assert_eq!(
            store
                .poll_task(&task.id, &account.id, "clip", Duration::ZERO)
                .await
                .unwrap(),
            Poll::NotFound
        );
    }
}

#[tokio::test]
async fn listings_filter_and_page_the_callers_own_tasks() {
    for store in stores().await {
        let (account, key) = store
            .create_account(&format!("t-{}", unique()), Amount::from_nanos(10_000))
            .await
            .unwrap();
        let (other, other_key) = store
            .create_account(&format!("t-{}", unique()), Amount::from_nanos(10_000))
            .await
            .unwrap();
        let mut ids = Vec::new();
        for _ in 0..5 {
            let (t, _) = store
                .create_task(new_task(&account.id, &key.id, "c"), Amount::from_nanos(10))
                .await
                .unwrap();
            ids.push(t.id);
        }
        store
            .create_task(
                new_task(&other.id, &other_key.id, "c"),
                Amount::from_nanos(10),
            )
            .await
            .unwrap();
        store
            .finish_task(
                &ids[0],
                Outcome::Failed {
                    error: serde_json::json!({}),
                },
                None,
            )
            .await
            .unwrap();
        let (total, page) = store
            .list_tasks(&account.id, &TaskFilter::default(), 0, 2)
            .await
            .unwrap();
        assert_eq!((total, page.len()), (5, 2));
        let failed = TaskFilter {
            states: vec![TaskState::Failed],
            ..TaskFilter::default()
        };
        let (total, page) = store.list_tasks(&account.id, &failed, 0, 10).await.unwrap();
        assert_eq!((total, page[0].id.as_str()), (1, ids[0].as_str()));
        let some = TaskFilter {
            ids: vec![ids[1].clone(), ids[2].clone(), "cgt-elsewhere".into()],
            model: Some("clipgen-cn-2.0-260128".into()),
            ..TaskFilter::default()
        };
        assert_eq!(
            store.list_tasks(&account.id, &some, 0, 10).await.unwrap().0,
            2
        );
    }
}

#[tokio::test]
async fn interrupted_submissions_and_overdue_tasks_are_failed_and_refunded() {
    // SQLite only: both sweeps are global, and would end other tests' tasks on a shared database.
    for store in stores().await.into_iter().take(1) {
        let (account, key) = store
            .create_account(&format!("t-{}", unique()), Amount::from_nanos(1000))
            .await
            .unwrap();
        let (stuck, _) = store
            .create_task(new_task(&account.id, &key.id, "c"), Amount::from_nanos(100))
            .await
            .unwrap();
        let mut late = new_task(&account.id, &key.id, "c");
        late.deadline = Duration::ZERO;
        let (late, _) = store
            .create_task(late, Amount::from_nanos(100))
            .await
            .unwrap();
        store
            .task_submitted(&late.id, "c", "up", Duration::from_secs(60))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert_eq!(
            store.expire_overdue_tasks().await.unwrap(),
            vec![late.id.clone()]
        );
        assert_eq!(
            store
                .fail_stale_submissions(Duration::from_millis(1))
                .await
                .unwrap(),
            vec![stuck.id.clone()]
        );
        for id in [&stuck.id, &late.id] {
            assert_eq!(
                store.task(id).await.unwrap().unwrap().state,
                TaskState::Failed
            );
        }
        let a = store.find_account(&account.id).await.unwrap();
        assert_eq!(
            (a.balance, a.held),
            (Amount::from_nanos(1000), Amount::ZERO)
        );
    }
}
