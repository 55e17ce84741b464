//! Quota windows in the database (`docs/decisions.md`, "Rate limits and spend caps"): slices
//! granted while the window has room and exactly the need near its end, owed units added past
//! the limit, windows and holders kept apart, old windows pruned. SQLite always; PostgreSQL when
//! `TOLLGATE_TEST_POSTGRES_URL` is set.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{stores, unique};
use tollgate_ledger::quota::SliceAsk;

fn ask(window_start: u64, need: u64, want: u64, owed: u64) -> SliceAsk {
    SliceAsk {
        window_start,
        need,
        want,
        limit: 10,
        owed,
    }
}

#[tokio::test]
async fn slices_fill_a_window_to_its_limit_and_no_further() {
    for store in stores().await {
        let holder = format!("key_quota_{}", unique());
        // A fresh window: the slice asked for.
        assert_eq!(
            store
                .take_quota_slice(&holder, "requests", &ask(60_000, 1, 4, 0))
                .await
                .unwrap(),
            (4, 4)
        );
        // Another replica: what is left, when it covers the need.
        assert_eq!(
            store
                .take_quota_slice(&holder, "requests", &ask(60_000, 2, 8, 0))
                .await
                .unwrap(),
            (6, 10)
        );
        // Full: nothing granted, but owed units are still counted.
        assert_eq!(
            store
                .take_quota_slice(&holder, "requests", &ask(60_000, 1, 1, 3))
                .await
                .unwrap(),
            (0, 13)
        );
        // Another quota, another window, another holder: each its own.
        let fresh = [
            (holder.as_str(), "tokens", 60_000),
            (holder.as_str(), "requests", 120_000),
            ("acct_other", "requests", 60_000),
        ];
        for (h, quota, window) in fresh {
            let h = if h.starts_with("acct_") {
                format!("{h}_{}", unique())
            } else {
                h.to_owned()
            };
            assert_eq!(
                store
                    .take_quota_slice(&h, quota, &ask(window, 1, 2, 0))
                    .await
                    .unwrap(),
                (2, 2),
                "{h} {quota} {window}"
            );
        }
        // Pruning by window start: the minute-one windows go, minute two stays.
        store.prune_quota_windows(100_000).await.unwrap();
        assert_eq!(
            store
                .take_quota_slice(&holder, "requests", &ask(60_000, 1, 2, 0))
                .await
                .unwrap(),
            (2, 2),
            "a pruned window starts over"
        );
        assert_eq!(
            store
                .take_quota_slice(&holder, "requests", &ask(120_000, 1, 2, 0))
                .await
                .unwrap(),
            (2, 4)
        );
        store.close().await;
    }
}
