//! Statements over periods (docs/architecture.md, "The chained ledger"): a statement of any
//! period — the whole history, one in the middle, an empty one, one after the last row —
//! verifies offline and opens with the link and balance just before it; and one exported while
//! other writers add rows to the same account still verifies (the adversary: an operator's
//! correction and a client's charges racing the export).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{stores, unique};
use std::time::Duration;
use tollgate_billing::Amount;
use tollgate_store::Store;
use tollgate_store::checkpoint::generate_key;
use tollgate_store::statement::verify;

/// A millisecond boundary strictly between the rows written before it and after it.
async fn boundary() -> i64 {
    tokio::time::sleep(Duration::from_millis(5)).await;
    let at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    tokio::time::sleep(Duration::from_millis(5)).await;
    at
}

/// Credits (and, negative, corrections) of `amounts` to `account`, one after another, in a task
/// of their own.
fn credits(
    store: &Store,
    account: &str,
    amounts: impl Iterator<Item = i64> + Send + 'static,
) -> tokio::task::JoinHandle<()> {
    let (store, account) = (store.clone(), account.to_owned());
    tokio::spawn(async move {
        for amount in amounts {
            store
                .credit(&account, Amount::from_nanos(amount), Some("racing"))
                .await
                .unwrap();
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_of_any_period_verifies_and_opens_where_the_period_starts() {
    for store in stores().await {
        let key = generate_key();
        let (account, _) = store
            .create_account(&format!("periods-{}", unique()), Amount::from_nanos(1_000))
            .await
            .unwrap();
        let start = boundary().await;
        for n in 1..=3 {
            store
                .credit(&account.id, Amount::from_nanos(n), Some("early"))
                .await
                .unwrap();
        }
        let middle = boundary().await;
        for n in 1..=2 {
            store
                .credit(&account.id, Amount::from_nanos(-n), Some("correction"))
                .await
                .unwrap();
        }
        let gap_from = boundary().await;
        let gap_until = boundary().await;
        store
            .credit(&account.id, Amount::from_nanos(100), Some("late"))
            .await
            .unwrap();
        let end = boundary().await;

        // (from, until, rows in the period, opening balance, closing balance)
        let cases = [
            (0, end, 7, 0, 1_103),
            (start, end, 6, 1_000, 1_103),
            (middle, gap_from, 2, 1_006, 1_003),
            (gap_from, gap_until, 0, 1_003, 1_003),
            (end, end + 60_000, 0, 1_103, 1_103),
        ];
        for (from, until, rows, opening, closing) in cases {
            let statement = store
                .statement(&account.id, from, until, Some(&key), None)
                .await
                .unwrap();
            let verified = verify(&statement, None)
                .unwrap_or_else(|e| panic!("{from}..{until}: {e}: {statement:#?}"));
            let what = format!("{from}..{until}");
            assert_eq!(verified.rows, rows, "{what}");
            assert!(verified.checkpoint.is_some(), "{what}");
            assert_eq!(statement.opening_balance.nanos(), opening, "{what}");
            assert_eq!(statement.closing_balance.nanos(), closing, "{what}");
            // Nothing before the period is in it, and the statement opens on the row before
            // it, which shows where the period starts.
            let first = statement.rows.first().unwrap();
            if from == 0 {
                assert_eq!(
                    statement.prev, "",
                    "{what}: the account's chain starts here"
                );
                assert!(first.in_period, "{what}");
            } else {
                assert!(!first.in_period && first.line.created_at < from, "{what}");
            }
            // Only this account's head is in the statement: no other account's.
            let proof = statement.proof.as_ref().unwrap();
            assert_eq!(proof.account_id, account.id);
            assert!(statement.checkpoint.as_ref().unwrap().heads.is_empty());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_exported_while_others_write_still_verifies() {
    for store in stores().await {
        let key = generate_key();
        let (account, _) = store
            .create_account(
                &format!("racing-{}", unique()),
                Amount::from_nanos(1_000_000),
            )
            .await
            .unwrap();
        // The operator's corrections and credits, racing the exports.
        let writer = credits(
            &store,
            &account.id,
            (0..60).map(|n| if n % 3 == 0 { -1 } else { 2 }),
        );
        let mut exported = 0;
        while !writer.is_finished() {
            let statement = store
                .statement(&account.id, 0, i64::MAX, Some(&key), None)
                .await
                .unwrap();
            verify(&statement, None).unwrap_or_else(|e| panic!("export {exported}: {e}"));
            exported += 1;
        }
        writer.await.unwrap();
        let last = store
            .statement(&account.id, 0, i64::MAX, Some(&key), None)
            .await
            .unwrap();
        assert_eq!(verify(&last, None).unwrap().rows, 61);
        assert!(exported > 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_signing_at_once_leave_checkpoints_every_chain_passes_through() {
    for (store, url) in common::stores_with_urls().await {
        // The other replica: its own pool on the same database, its own key.
        let other = Store::connect(&url).await.unwrap();
        let (mine, theirs) = (generate_key(), generate_key());
        let (account, _) = store
            .create_account(&format!("signers-{}", unique()), Amount::from_nanos(1_000))
            .await
            .unwrap();
        let writer = credits(&store, &account.id, std::iter::repeat_n(3, 40));
        let (a, b) = tokio::join!(
            async {
                let mut made = Vec::new();
                for _ in 0..10 {
                    made.push(store.make_checkpoint(&mine, None).await.unwrap());
                }
                made
            },
            async {
                let mut made = Vec::new();
                for _ in 0..10 {
                    made.push(other.make_checkpoint(&theirs, None).await.unwrap());
                }
                made
            },
        );
        writer.await.unwrap();
        // Every checkpoint either replica signed is passed through by the account's chain,
        // whichever is newest: the statement to each verifies.
        let statement = store
            .statement(&account.id, 0, i64::MAX, None, None)
            .await
            .unwrap();
        for checkpoint in a.iter().chain(&b) {
            let Some((seq, signed)) = checkpoint.heads.get(&account.id) else {
                continue;
            };
            let row = statement
                .rows
                .iter()
                .find(|r| r.line.seq == *seq)
                .unwrap_or_else(|| panic!("seq {seq} of {} is not in the chain", checkpoint.id));
            assert_eq!(&row.hash, signed, "{}", checkpoint.id);
        }
        for key in [&mine, &theirs] {
            let trusted = [hex::encode(key.verifying_key().as_bytes())];
            let report = store.audit_trusting(Some(&trusted)).await.unwrap();
            let about_mine: Vec<_> = report
                .violations
                .iter()
                .filter(|v| v.subject.contains(&account.id) || v.rule.starts_with("checkpoint"))
                .collect();
            assert!(about_mine.is_empty(), "{about_mine:#?}");
        }
        other.close().await;
    }
}

/// A statement of more rows than a page, written as the portal streams it (its JSON around
/// the rows, the rows a page at a time), is byte for byte the statement made whole, and
/// verifies; a period in the middle too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_streamed_a_page_at_a_time_is_the_whole_one() {
    use tollgate_store::statement::STATEMENT_PAGE;
    for store in stores().await {
        let key = generate_key();
        let (account, _) = store
            .create_account(&format!("long-{}", unique()), Amount::from_nanos(1_000))
            .await
            .unwrap();
        let rows = STATEMENT_PAGE + STATEMENT_PAGE / 2;
        credits(&store, &account.id, 1..rows / 2).await.unwrap();
        let middle = boundary().await;
        credits(&store, &account.id, rows / 2..rows).await.unwrap();
        for from in [0, middle] {
            let plan = store
                .statement_plan(&account.id, from, i64::MAX, Some(&key), None)
                .await
                .unwrap();
            let (before, after) = plan.json_around_rows().unwrap();
            let mut streamed = before;
            let mut whole = plan.head.clone();
            let (mut read, mut pages) = (None, 0);
            loop {
                let page = store.statement_rows(&plan, &mut read).await.unwrap();
                if page.is_empty() {
                    break;
                }
                pages += 1;
                for row in &page {
                    if !whole.rows.is_empty() {
                        streamed.push(',');
                    }
                    streamed.push_str(&serde_json::to_string(row).unwrap());
                    whole.rows.push(row.clone());
                }
            }
            streamed.push_str(&after);
            assert!(pages > usize::from(from == 0), "{pages} pages");
            assert_eq!(streamed, serde_json::to_string(&whole).unwrap());
            let read_back: tollgate_store::statement::Statement =
                serde_json::from_str(&streamed).unwrap();
            let verified = verify(&read_back, None).unwrap();
            assert_eq!(
                verified.rows,
                whole.rows.iter().filter(|r| r.in_period).count()
            );
            // The same as the statement made whole in one call.
            let made = store
                .statement(&account.id, from, i64::MAX, Some(&key), None)
                .await
                .unwrap();
            assert_eq!(made.rows, whole.rows);
            assert_eq!(made.opening_balance, whole.opening_balance);
            assert_eq!(made.closing_balance, whole.closing_balance);
        }
    }
}
