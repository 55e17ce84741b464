//! The ledger engine's journal on both backends: leases granted by the grant rule, charges in
//! batches of any size with exact `balance_after` figures, a lease the sweeper expired paying
//! nothing, renewals, returns, and the audit staying clean throughout.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{stores, unique};
use tollgate_billing::Amount;
use tollgate_store::{
    ChargeMemo, ChargeRow, JournalEntry, JournalWriter, LeaseOp, LeaseOutcome, Store, UsageRecord,
    new_id,
};

fn grant(available: Amount, need: Amount, want: Amount) -> Option<Amount> {
    // The engine's rule, restated: `want` with room to spare, else exactly `need`.
    if available.nanos() >= want.nanos() * 2 {
        Some(want)
    } else if need.is_positive() && available >= need {
        Some(need)
    } else {
        None
    }
}

fn writer(ttl_ms: i64) -> JournalWriter {
    JournalWriter {
        owner: format!("test-{}", unique()),
        lease_ttl_ms: ttl_ms,
        grant,
    }
}

fn charge(account: &str, lease: Option<&str>, nanos: i64, from_lease: i64) -> JournalEntry {
    JournalEntry::Charge(ChargeRow {
        hold_id: new_id("hold"),
        account_id: account.to_owned(),
        lease_id: lease.map(str::to_owned),
        amount: Amount::from_nanos(nanos),
        from_lease: Amount::from_nanos(from_lease),
        memo: ChargeMemo {
            model: "m".into(),
            ..ChargeMemo::default()
        },
    })
}

/// The usage record each charge of `entries` comes with in the gateway's batches, appended.
fn with_usage(mut entries: Vec<JournalEntry>) -> Vec<JournalEntry> {
    let records: Vec<JournalEntry> = entries
        .iter()
        .filter_map(|e| match e {
            JournalEntry::Charge(c) => {
                let mut record = UsageRecord::new("request", c.account_id.clone(), "speech");
                record.charge = c.amount;
                record.hold_id = Some(c.hold_id.clone());
                Some(JournalEntry::Usage(record))
            }
            _ => None,
        })
        .collect();
    entries.extend(records);
    entries
}

/// Opens a lease of `account` for `w` (the grant rule decides between `need` and `want`): its
/// id and what was granted.
async fn open_lease(
    store: &Store,
    w: &JournalWriter,
    account: &str,
    need: i64,
    want: i64,
) -> (String, Amount) {
    let out = store
        .write_journal(
            w,
            vec![JournalEntry::Lease(LeaseOp::Grant {
                account_id: account.to_owned(),
                lease_id: None,
                need: Amount::from_nanos(need),
                want: Amount::from_nanos(want),
            })],
        )
        .await
        .unwrap();
    let LeaseOutcome::Granted {
        lease_id, granted, ..
    } = &out.leases[0]
    else {
        panic!("{out:?}");
    };
    (lease_id.clone(), *granted)
}

async fn account_violations(store: &Store, account: &str) -> Vec<String> {
    store
        .audit()
        .await
        .unwrap()
        .violations
        .into_iter()
        .filter(|v| v.subject.contains(account))
        .map(|v| format!("{v:?}"))
        .collect()
}

#[tokio::test]
async fn leases_and_batched_charges_keep_the_books_exact() {
    for store in stores().await {
        let w = writer(15_000);
        let (account, _) = store
            .create_account(
                &format!("journal-{}", unique()),
                Amount::from_nanos(1_000_000),
            )
            .await
            .unwrap();
        let id = account.id.clone();
        // A lease of 100,000 (plenty of room: want is granted).
        let out = store
            .write_journal(
                &w,
                vec![JournalEntry::Lease(LeaseOp::Grant {
                    account_id: id.clone(),
                    lease_id: None,
                    need: Amount::from_nanos(10),
                    want: Amount::from_nanos(100_000),
                })],
            )
            .await
            .unwrap()
            .leases;
        let LeaseOutcome::Granted {
            lease_id, granted, ..
        } = &out[0]
        else {
            panic!("{out:?}");
        };
        assert_eq!(*granted, Amount::from_nanos(100_000));
        // 300 charges of 7 in one batch: two INSERT chunks of different sizes.
        let batch: Vec<JournalEntry> = (0..300)
            .map(|_| charge(&id, Some(lease_id), 7, 7))
            .collect();
        store
            .write_journal(&w, with_usage(batch.clone()))
            .await
            .unwrap();
        let a = store.find_account(&id).await.unwrap();
        assert_eq!(a.balance, Amount::from_nanos(1_000_000 - 2_100));
        assert_eq!(a.leased, Amount::from_nanos(100_000 - 2_100));
        let ledger = store.ledger(&id).await.unwrap();
        assert_eq!(ledger.len(), 301);
        // balance_after walks down by 7 from the opening balance, in order.
        let mut afters: Vec<i64> = ledger[1..]
            .iter()
            .map(|r| r.balance_after.nanos())
            .collect();
        afters.sort_unstable_by(|a, b| b.cmp(a));
        assert_eq!(afters.first(), Some(&(1_000_000 - 7)));
        assert_eq!(afters.last(), Some(&(1_000_000 - 2_100)));
        assert!(account_violations(&store, &id).await.is_empty());

        // Grow it, renew it, then return it.
        let out = store
            .write_journal(
                &w,
                with_usage(vec![
                    JournalEntry::Lease(LeaseOp::Grant {
                        account_id: id.clone(),
                        lease_id: Some(lease_id.clone()),
                        need: Amount::from_nanos(10),
                        want: Amount::from_nanos(1_000),
                    }),
                    JournalEntry::Lease(LeaseOp::Renew {
                        account_id: id.clone(),
                        lease_id: lease_id.clone(),
                    }),
                    charge(&id, Some(lease_id), 100, 100),
                    JournalEntry::Lease(LeaseOp::Return {
                        lease_id: lease_id.clone(),
                    }),
                ]),
            )
            .await
            .unwrap()
            .leases;
        assert!(
            matches!(&out[0], LeaseOutcome::Granted { lease_id: same, .. } if same == lease_id)
        );
        assert!(matches!(out[1], LeaseOutcome::Renewed { .. }));
        assert_eq!(
            out[2],
            LeaseOutcome::Returned {
                amount: Amount::from_nanos(100_000 - 2_100 + 1_000 - 100)
            }
        );
        let a = store.find_account(&id).await.unwrap();
        assert_eq!(a.leased, Amount::ZERO);
        assert_eq!(a.balance, Amount::from_nanos(1_000_000 - 2_200));
        assert!(account_violations(&store, &id).await.is_empty());
    }
}

#[tokio::test]
async fn an_expired_lease_pays_nothing_and_near_zero_grants_exactly_the_need() {
    for store in stores().await {
        // A lease that expires at once.
        let w = writer(-1);
        let (account, _) = store
            .create_account(&format!("journal-{}", unique()), Amount::from_nanos(1_000))
            .await
            .unwrap();
        let id = account.id.clone();
        // 1,000 available is less than twice 800: exactly the need.
        let (lease_id, granted) = open_lease(&store, &w, &id, 100, 800).await;
        let lease_id = &lease_id;
        assert_eq!(granted, Amount::from_nanos(100));
        assert!(store.expire_leases().await.unwrap() >= 1);
        assert_eq!(store.find_account(&id).await.unwrap().leased, Amount::ZERO);
        // The charge of a hold served from it still lands, from the balance alone.
        store
            .write_journal(&w, with_usage(vec![charge(&id, Some(lease_id), 60, 60)]))
            .await
            .unwrap();
        let a = store.find_account(&id).await.unwrap();
        assert_eq!(
            (a.balance, a.leased),
            (Amount::from_nanos(940), Amount::ZERO)
        );
        // Renewing a lost lease says so; nothing more than the balance can be leased.
        let out = store
            .write_journal(
                &w,
                vec![
                    JournalEntry::Lease(LeaseOp::Renew {
                        account_id: id.clone(),
                        lease_id: lease_id.clone(),
                    }),
                    JournalEntry::Lease(LeaseOp::Grant {
                        account_id: id.clone(),
                        lease_id: None,
                        need: Amount::from_nanos(941),
                        want: Amount::from_nanos(941),
                    }),
                ],
            )
            .await
            .unwrap()
            .leases;
        assert_eq!(out[0], LeaseOutcome::Lost);
        assert_eq!(
            out[1],
            LeaseOutcome::Insufficient {
                available: Amount::from_nanos(940)
            }
        );
        assert!(account_violations(&store, &id).await.is_empty());
    }
}

#[tokio::test]
async fn one_batch_over_several_accounts_gives_each_row_its_own_balance_after() {
    for store in stores().await {
        let w = writer(15_000);
        let mut ids = Vec::new();
        let mut leases = Vec::new();
        for opening in [10_000, 20_000] {
            let (account, _) = store
                .create_account(
                    &format!("journal-{}", unique()),
                    Amount::from_nanos(opening),
                )
                .await
                .unwrap();
            let out = store
                .write_journal(
                    &w,
                    vec![JournalEntry::Lease(LeaseOp::Grant {
                        account_id: account.id.clone(),
                        lease_id: None,
                        need: Amount::from_nanos(100),
                        want: Amount::from_nanos(100),
                    })],
                )
                .await
                .unwrap()
                .leases;
            let LeaseOutcome::Granted { lease_id, .. } = &out[0] else {
                panic!("{out:?}");
            };
            leases.push(lease_id.clone());
            ids.push(account.id);
        }
        let (a, b) = (&ids[0], &ids[1]);
        // Interleaved: a's lease is asked for 150 of its 100 (a short lease gives what it has),
        // b pays one charge from no lease at all.
        let batch = vec![
            charge(a, Some(&leases[0]), 70, 70),
            charge(b, Some(&leases[1]), 5, 5),
            charge(a, Some(&leases[0]), 80, 80),
            charge(b, None, 1_000, 0),
            charge(a, None, 3, 0),
        ];
        store
            .write_journal(&w, with_usage(batch.clone()))
            .await
            .unwrap();
        let (after_a, after_b) = (
            store.find_account(a).await.unwrap(),
            store.find_account(b).await.unwrap(),
        );
        assert_eq!(
            (after_a.balance, after_a.leased),
            (Amount::from_nanos(10_000 - 153), Amount::ZERO)
        );
        assert_eq!(
            (after_b.balance, after_b.leased),
            (Amount::from_nanos(20_000 - 1_005), Amount::from_nanos(95))
        );
        // Each row's balance_after is its account's balance right after it, in batch order.
        let expected = [
            10_000 - 70,
            20_000 - 5,
            10_000 - 150,
            20_000 - 1_005,
            10_000 - 153,
        ];
        for (entry, want) in batch.iter().zip(expected) {
            let JournalEntry::Charge(row) = entry else {
                unreachable!()
            };
            let ledger = store.ledger(&row.account_id).await.unwrap();
            let found = ledger
                .iter()
                .find(|r| r.hold_id.as_deref() == Some(row.hold_id.as_str()))
                .unwrap();
            assert_eq!(found.balance_after, Amount::from_nanos(want), "{row:?}");
            assert_eq!(found.amount, Amount::from_nanos(-row.amount.nanos()));
        }
        assert!(account_violations(&store, a).await.is_empty());
        assert!(account_violations(&store, b).await.is_empty());

        // A batch naming an account that does not exist writes nothing at all.
        let failed = store
            .write_journal(
                &w,
                vec![
                    charge(b, Some(&leases[1]), 5, 5),
                    charge("acct_missing", None, 1, 0),
                ],
            )
            .await;
        assert!(failed.is_err());
        let unchanged = store.find_account(b).await.unwrap();
        assert_eq!(
            (unchanged.balance, unchanged.leased),
            (after_b.balance, after_b.leased)
        );
        assert_eq!(store.ledger(b).await.unwrap().len(), 3);
    }
}

/// The fence (`docs/decisions.md`, "Fenced leases"): a replica that stalled past its lease's
/// life writes its charge late, after the sweep returned the lease and another replica spent
/// the balance. The database pays the lease's part only while the lease is open and the
/// writer's; the rest comes from what is available — here nothing — and the remainder is the
/// operator's loss, on the row and in the answer. A charge naming another writer's lease is
/// fenced the same way. Both backends must agree to the nano-unit.
#[tokio::test]
async fn a_late_charge_is_fenced_and_takes_only_what_is_left() {
    for store in stores().await {
        let stalled = writer(-1); // its leases expire at once
        let other = writer(15_000);
        let (account, _) = store
            .create_account(&format!("journal-{}", unique()), Amount::from_nanos(1_000))
            .await
            .unwrap();
        let id = account.id.clone();
        let (late, _) = open_lease(&store, &stalled, &id, 300, 300).await;
        let late = &late;
        // The sweep returns it; the other replica leases and spends everything.
        assert!(store.expire_leases().await.unwrap() >= 1);
        let (live, _) = open_lease(&store, &other, &id, 1_000, 1_000).await;
        let live = &live;
        let spent = store
            .write_journal(&other, with_usage(vec![charge(&id, Some(live), 900, 900)]))
            .await
            .unwrap();
        assert!(spent.losses.is_empty());
        // The stalled replica's late charge: its lease is gone.
        let late_charge = charge(&id, Some(late), 300, 300);
        let written = store
            .write_journal(&stalled, with_usage(vec![late_charge.clone()]))
            .await
            .unwrap();
        let JournalEntry::Charge(row) = &late_charge else {
            unreachable!()
        };
        assert_eq!(written.losses.len(), 1, "{written:?}");
        let loss = &written.losses[0];
        assert!(loss.fenced);
        assert_eq!(
            (loss.charged, loss.loss),
            (Amount::ZERO, Amount::from_nanos(300)),
            "nothing is available: the other replica's lease holds the last 100"
        );
        // A charge naming the other writer's lease is fenced too; 0 available again.
        let foreign = store
            .write_journal(&stalled, with_usage(vec![charge(&id, Some(live), 50, 50)]))
            .await
            .unwrap();
        assert!(foreign.losses[0].fenced);
        assert_eq!(foreign.losses[0].charged, Amount::ZERO);
        let a = store.find_account(&id).await.unwrap();
        assert_eq!(
            (a.balance, a.leased),
            (Amount::from_nanos(100), Amount::from_nanos(100)),
            "never below what the live lease holds"
        );
        let ledger = store.ledger(&id).await.unwrap();
        let fenced = ledger
            .iter()
            .find(|r| r.hold_id.as_deref() == Some(row.hold_id.as_str()))
            .unwrap();
        assert_eq!(fenced.amount, Amount::ZERO);
        assert!(
            fenced.anomaly.as_deref().is_some_and(
                |a| a.contains("late charge") && a.contains("the operator's loss 0.0000003")
            ),
            "{fenced:?}"
        );
        // Its usage record says what the charge came to.
        let records = store
            .usage_records(
                &tollgate_store::UsageFilter {
                    account_id: Some(id.clone()),
                    ..Default::default()
                },
                10,
                None,
            )
            .await
            .unwrap();
        let record = records
            .iter()
            .find(|r| r.hold_id.as_deref() == Some(row.hold_id.as_str()))
            .unwrap();
        assert_eq!(record.charge, Amount::ZERO);
        assert!(account_violations(&store, &id).await.is_empty());
        let report = store.audit().await.unwrap();
        assert!(report.operator_losses >= Amount::from_nanos(350).into());
    }
}

/// One batch drains a lease and then the free balance in batch order, row by row, exactly as
/// the loop on SQLite and the SQL on PostgreSQL both do: a settlement above its hold takes what
/// no other reservation holds and no more.
#[tokio::test]
async fn a_batch_shares_the_lease_and_the_balance_out_in_order() {
    for store in stores().await {
        let w = writer(15_000);
        let (account, _) = store
            .create_account(&format!("journal-{}", unique()), Amount::from_nanos(280))
            .await
            .unwrap();
        let id = account.id.clone();
        let (lease_id, _) = open_lease(&store, &w, &id, 250, 250).await;
        let lease_id = &lease_id;
        // 250 leased, 30 free. Three charges of 100 from the lease, then one of 40 with none.
        let batch = vec![
            charge(&id, Some(lease_id), 100, 100),
            charge(&id, Some(lease_id), 100, 100),
            charge(&id, Some(lease_id), 100, 100),
            charge(&id, None, 40, 0),
        ];
        let written = store
            .write_journal(&w, with_usage(batch.clone()))
            .await
            .unwrap();
        let ledger = store.ledger(&id).await.unwrap();
        let amounts: Vec<(i64, i64)> = batch
            .iter()
            .map(|e| {
                let JournalEntry::Charge(c) = e else {
                    unreachable!()
                };
                let r = ledger
                    .iter()
                    .find(|r| r.hold_id.as_deref() == Some(c.hold_id.as_str()))
                    .unwrap();
                (r.amount.nanos(), r.balance_after.nanos())
            })
            .collect();
        // 100 + 100 from the lease; 50 from it and 30 free; nothing left for the last one.
        assert_eq!(
            amounts,
            vec![(-100, 180), (-100, 80), (-80, 0), (0, 0)],
            "{ledger:#?}"
        );
        let losses: Vec<i64> = written.losses.iter().map(|l| l.loss.nanos()).collect();
        assert_eq!(losses, vec![20, 40]);
        assert!(written.losses.iter().all(|l| !l.fenced));
        let a = store.find_account(&id).await.unwrap();
        assert_eq!((a.balance, a.leased), (Amount::ZERO, Amount::ZERO));
        assert!(account_violations(&store, &id).await.is_empty());
    }
}

/// A bounded WAL (`docs/decisions.md`, "A bounded WAL"; issue 22 item 17): sustained journal
/// writes — 6,000 transactions of charges and usage records, with a reader querying beside
/// them — never let SQLite's write-ahead log grow past its bound for long, and a clean close
/// leaves none. Without a checkpointer that can reset the log under load it grew by about 4 KB a
/// request, without end (714 MB after 164,000 requests).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wal_stays_bounded_under_sustained_writes() {
    let dir = std::env::temp_dir().join(format!("tollgate-wal-{}", unique()));
    let path = dir.join("t.db");
    let store = Store::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    let w = writer(600_000);
    let (account, _) = store
        .create_account("wal", Amount::from_nanos(1 << 50))
        .await
        .unwrap();
    let (lease, _) = open_lease(&store, &w, &account.id, 1 << 40, 1 << 40).await;
    let reading = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let reader = {
        let (store, id, reading) = (store.clone(), account.id.clone(), reading.clone());
        tokio::spawn(async move {
            while reading.load(std::sync::atomic::Ordering::Relaxed) {
                store.find_account(&id).await.unwrap();
            }
        })
    };
    let wal = dir.join("t.db-wal");
    let size = || std::fs::metadata(&wal).map_or(0, |m| m.len());
    let mut largest = 0;
    let mut written = 0u64;
    for i in 0..6_000 {
        let batch: Vec<JournalEntry> = (0..4)
            .map(|_| charge(&account.id, Some(&lease), 7, 7))
            .collect();
        store.write_journal(&w, with_usage(batch)).await.unwrap();
        if i % 50 == 0 {
            largest = largest.max(size());
        }
        written += 1;
    }
    reading.store(false, std::sync::atomic::Ordering::Relaxed);
    reader.await.unwrap();
    let database = std::fs::metadata(&path).map_or(0, |m| m.len());
    eprintln!(
        "{written} transactions: the WAL peaked at {:.1} MiB (database {:.1} MiB); {} bytes now",
        largest as f64 / f64::from(1 << 20),
        database as f64 / f64::from(1 << 20),
        size()
    );
    // The checkpointer keeps it near 64 MiB; when it falls behind (this machine busy with other
    // tests) the journal's backstop resets it past 96 MiB, before the next batch.
    assert!(
        largest < 100 << 20,
        "the WAL grew to {largest} bytes, past its bound"
    );
    store.close().await;
    assert_eq!(size(), 0, "a clean close resets the WAL");
    let _ = std::fs::remove_dir_all(&dir);
}

/// On PostgreSQL the writer prices a run of charges itself, from what the database answered
/// after its previous run, and the database checks that under the rows' locks before it
/// writes. A credit made elsewhere, or an insider's edit of the account, makes what the writer
/// remembers stale: that run is priced by the database instead, and the books stay exact.
#[tokio::test]
async fn a_run_the_writer_priced_is_checked_by_the_database() {
    for store in stores().await {
        if store.backend() != tollgate_store::Backend::Postgres {
            continue;
        }
        let w = writer(15_000);
        let (account, _) = store
            .create_account(
                &format!("planned-{}", unique()),
                Amount::from_nanos(1_000_000),
            )
            .await
            .unwrap();
        let id = account.id.clone();
        let (lease, _) = open_lease(&store, &w, &id, 10, 10_000).await;
        let runs = |store: &Store| store.charge_runs();
        let before = runs(&store);
        let batch = |n: usize| -> Vec<JournalEntry> {
            with_usage(
                (0..n)
                    .map(|_| charge(&id, Some(&lease), 100, 100))
                    .collect(),
            )
        };

        // The first run after the lease is priced by the database (the lease's grant made the
        // writer forget), the next by the writer.
        store.write_journal(&w, batch(3)).await.unwrap();
        store.write_journal(&w, batch(3)).await.unwrap();
        let after = runs(&store);
        assert_eq!(after.by_database - before.by_database, 1, "{after:?}");
        assert_eq!(after.by_writer - before.by_writer, 1, "{after:?}");

        // A credit elsewhere: the writer's books are stale, the database prices the run.
        store
            .credit(&id, Amount::from_nanos(5_000), Some("elsewhere"))
            .await
            .unwrap();
        store.write_journal(&w, batch(2)).await.unwrap();
        let stale = runs(&store);
        assert_eq!(stale.by_database - after.by_database, 1, "{stale:?}");
        // An insider's edit of the balance, which no ledger row explains: the same.
        store.write_journal(&w, batch(1)).await.unwrap();
        let url = std::env::var("TOLLGATE_TEST_POSTGRES_URL").unwrap();
        let insider = sqlx::PgPool::connect(&url).await.unwrap();
        sqlx::query("UPDATE accounts SET held_nanos = held_nanos + 1 WHERE id = $1")
            .bind(&id)
            .execute(&insider)
            .await
            .unwrap();
        let edited = runs(&store);
        store.write_journal(&w, batch(2)).await.unwrap();
        let priced = runs(&store);
        assert_eq!(priced.by_database - edited.by_database, 1, "{priced:?}");
        sqlx::query("UPDATE accounts SET held_nanos = held_nanos - 1 WHERE id = $1")
            .bind(&id)
            .execute(&insider)
            .await
            .unwrap();

        // A run the writer prices with a charge its lease and balance cannot cover: the short
        // charge is said, in the row and in the answer, as the database would.
        store.write_journal(&w, batch(1)).await.unwrap();
        let big = store.find_account(&id).await.unwrap().balance.nanos() * 2;
        let planned = runs(&store);
        let written = store
            .write_journal(&w, with_usage(vec![charge(&id, Some(&lease), big, 100)]))
            .await
            .unwrap();
        assert_eq!(runs(&store).by_writer - planned.by_writer, 1);
        assert_eq!(written.losses.len(), 1, "{written:?}");
        assert!(!written.losses[0].fenced);

        // Every row in its place: seq, balance_after and the chain, by the audit.
        let ledger = store.ledger(&id).await.unwrap();
        let charged: i64 = ledger
            .iter()
            .filter(|r| r.hold_id.is_some())
            .map(|r| r.amount.nanos())
            .sum();
        let a = store.find_account(&id).await.unwrap();
        assert_eq!(a.balance.nanos(), 1_000_000 + 5_000 + charged);
        assert!(
            account_violations(&store, &id).await.is_empty(),
            "{:?}",
            account_violations(&store, &id).await
        );
    }
}
