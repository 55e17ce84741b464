//! Payments (`tollgate_store::payments`): credited once whatever the provider delivers, refunds
//! and chargebacks by the documented rule, and the audit's pairing — on SQLite and, when
//! `TOLLGATE_TEST_POSTGRES_URL` is set, on PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{stores, stores_with_urls, tamper, unique};
use tollgate_billing::Amount;
use tollgate_store::{
    AutoTopup, DisputeStatus, HoldRequest, LedgerKind, NewPayment, NotApplied, Payment,
    PaymentStatus, Received, Store,
};

fn units(n: i64) -> Amount {
    Amount::from_nanos(n * 1_000_000_000)
}

/// An account with `balance`, and an open payment of 25.00 usd buying 50 units.
async fn account_with_payment(store: &Store, balance: i64) -> (String, Payment) {
    let (account, _) = store
        .create_account(&format!("payer-{}", unique()), units(balance))
        .await
        .unwrap();
    let payment = store
        .create_payment(&NewPayment {
            account_id: &account.id,
            provider: "stripe",
            automatic: false,
            person_id: None,
            currency: "usd",
            amount_minor: 2500,
            amount: units(50),
        })
        .await
        .unwrap();
    assert_eq!(payment.status, PaymentStatus::Open);
    (account.id, payment)
}

/// An account with `balance` and a payment of it credited: the account, the payment, the
/// provider's payment id.
async fn paid_payment(store: &Store, balance: i64) -> (String, Payment, String) {
    let (account_id, payment) = account_with_payment(store, balance).await;
    let intent = format!("pi_{}", unique());
    store
        .credit_payment(&received(&payment, &intent))
        .await
        .unwrap()
        .unwrap();
    (account_id, payment, intent)
}

fn received<'a>(payment: &'a Payment, intent: &'a str) -> Received<'a> {
    Received {
        payment_id: &payment.id,
        amount_minor: payment.amount_minor,
        currency: "usd",
        intent_id: Some(intent),
        customer_id: Some("cus_test"),
        payment_method: None,
    }
}

async fn violations(store: &Store, subjects: &[&str]) -> Vec<String> {
    let report = store.audit().await.unwrap();
    report
        .violations
        .iter()
        .filter(|v| subjects.iter().any(|s| v.subject.contains(s)))
        .map(|v| format!("{}: {} {}", v.rule, v.subject, v.detail))
        .collect()
}

/// Money gone from the account (an operator's correction stands for spending here: the
/// usage records of real charges are the request path's).
async fn spend(store: &Store, account_id: &str, n: i64) {
    store
        .credit(account_id, units(-n), Some("spent"))
        .await
        .unwrap();
}

async fn balance(store: &Store, account_id: &str) -> Amount {
    store.find_account(account_id).await.unwrap().balance
}

#[tokio::test]
async fn a_payment_is_credited_once_for_what_was_asked() {
    for store in stores().await {
        let (account_id, payment) = account_with_payment(&store, 1).await;
        let intent = format!("pi_{}", unique());
        // The provider says another amount, or another currency: refused, nothing credited.
        let mut wrong = received(&payment, &intent);
        wrong.amount_minor = 250_000;
        assert!(matches!(
            store.credit_payment(&wrong).await.unwrap(),
            Err(NotApplied::Mismatch { .. })
        ));
        let mut wrong = received(&payment, &intent);
        wrong.currency = "eur";
        assert!(matches!(
            store.credit_payment(&wrong).await.unwrap(),
            Err(NotApplied::Mismatch { .. })
        ));
        assert_eq!(balance(&store, &account_id).await, units(1));
        // Paid: credited; the same event again, or the PaymentIntent's event: already.
        let credited = store
            .credit_payment(&received(&payment, &intent))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(credited.amount, units(50));
        assert_eq!(credited.balance, units(51));
        let mut card = received(&payment, &intent);
        card.payment_method = Some("pm_saved");
        for again in [received(&payment, &intent), card] {
            assert_eq!(
                store.credit_payment(&again).await.unwrap(),
                Err(NotApplied::Already)
            );
        }
        assert_eq!(balance(&store, &account_id).await, units(51));
        // The card the second event named is kept for automatic top-ups.
        assert_eq!(
            store.payment_method(&account_id).await.unwrap(),
            Some(("cus_test".to_owned(), Some("pm_saved".to_owned())))
        );
        // Another payment of the provider's cannot claim this one.
        assert!(matches!(
            store
                .credit_payment(&received(&payment, "pi_other"))
                .await
                .unwrap(),
            Err(NotApplied::Mismatch { .. }) | Err(NotApplied::Already)
        ));
        let stored = store.payment(&payment.id).await.unwrap();
        assert_eq!(stored.status, PaymentStatus::Paid);
        assert_eq!(
            stored.ledger_id.as_deref(),
            Some(credited.ledger_id.as_str())
        );
        let ledger = store.ledger(&account_id).await.unwrap();
        let row = ledger.iter().find(|r| r.id == credited.ledger_id).unwrap();
        assert_eq!(row.kind, LedgerKind::Payment);
        assert!(row.note.as_deref().unwrap().contains(&payment.id));
        let found = violations(&store, &[&payment.id, &account_id]).await;
        assert!(found.is_empty(), "{found:?}");
        // An unknown payment id: not ours.
        let mut unknown = received(&payment, "pi_x");
        unknown.payment_id = "pay_unknown";
        assert!(matches!(
            store.credit_payment(&unknown).await.unwrap(),
            Err(NotApplied::Unknown(_))
        ));
    }
}

#[tokio::test]
async fn twenty_deliveries_on_two_replicas_credit_once() {
    for (store, url) in stores_with_urls().await {
        let replicas = [store.clone(), Store::connect(&url).await.unwrap()];
        let (account_id, payment) = account_with_payment(&store, 0).await;
        let intent = format!("pi_{}", unique());
        let mut tasks = Vec::new();
        for i in 0..20 {
            let replica = replicas[i % 2].clone();
            let payment = payment.clone();
            let intent = intent.clone();
            tasks.push(tokio::spawn(async move {
                replica
                    .credit_payment(&received(&payment, &intent))
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
        assert_eq!(balance(&store, &account_id).await, units(50));
        let found = violations(&store, &[&payment.id, &account_id]).await;
        assert!(found.is_empty(), "{found:?}");
    }
}

#[tokio::test]
async fn refunds_in_any_order_debit_their_total_once() {
    for store in stores().await {
        let (account_id, payment) = account_with_payment(&store, 0).await;
        let intent = format!("pi_{}", unique());
        // A refund before its payment is known: delivered again later.
        assert!(matches!(
            store
                .refund_payment(&intent, "ch_1", 500, "usd")
                .await
                .unwrap(),
            Err(NotApplied::Unknown(_))
        ));
        store
            .credit_payment(&received(&payment, &intent))
            .await
            .unwrap()
            .unwrap();
        // Running totals 1000 then 500 (out of order), then 1000 again: one debit of 1000/2500.
        let first = store
            .refund_payment(&intent, "ch_1", 1000, "usd")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(first.amount, units(-20));
        for late in [500, 1000] {
            assert_eq!(
                store
                    .refund_payment(&intent, "ch_1", late, "usd")
                    .await
                    .unwrap(),
                Err(NotApplied::Already)
            );
        }
        // The rest, and more than was paid: the rest only; more is refused.
        assert!(matches!(
            store
                .refund_payment(&intent, "ch_1", 2501, "usd")
                .await
                .unwrap(),
            Err(NotApplied::Mismatch { .. })
        ));
        let rest = store
            .refund_payment(&intent, "ch_1", 2500, "usd")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(rest.amount, units(-30));
        assert_eq!(balance(&store, &account_id).await, units(0));
        let ledger = store.ledger(&account_id).await.unwrap();
        assert_eq!(
            ledger
                .iter()
                .filter(|r| r.kind == LedgerKind::Refund)
                .count(),
            2
        );
        let found = violations(&store, &[&payment.id, &account_id]).await;
        assert!(found.is_empty(), "{found:?}");
    }
}

#[tokio::test]
async fn a_refund_after_spending_goes_below_zero_said_and_audited() {
    for store in stores().await {
        let (account_id, payment, intent) = paid_payment(&store, 0).await;
        // 45 of the 50 spent, 3 more held by a task.
        spend(&store, &account_id, 45).await;
        store
            .hold(HoldRequest::new(&account_id, "m", units(3)))
            .await
            .unwrap();
        let refund = store
            .refund_payment(&intent, "ch_1", 2500, "usd")
            .await
            .unwrap()
            .unwrap();
        // The rule: all of it is debited; what was not available (50 − 2 available) is said.
        assert_eq!(refund.amount, units(-50));
        assert_eq!(refund.balance, units(-45));
        assert_eq!(refund.overdraw, units(48));
        let ledger = store.ledger(&account_id).await.unwrap();
        let row = ledger.iter().find(|r| r.id == refund.ledger_id).unwrap();
        assert_eq!(row.kind, LedgerKind::Refund);
        assert!(
            row.anomaly
                .as_deref()
                .unwrap()
                .contains("refund or chargeback after the money was spent"),
            "{row:?}"
        );
        // The account spends nothing more.
        assert!(
            store
                .hold(HoldRequest::new(&account_id, "m", Amount::from_nanos(1)))
                .await
                .is_err()
        );
        let found = violations(&store, &[&payment.id, &account_id]).await;
        assert!(found.is_empty(), "{found:?}");
    }
}

#[tokio::test]
async fn a_chargeback_takes_and_a_won_one_gives_back_once() {
    for store in stores().await {
        let (account_id, payment, intent) = paid_payment(&store, 10).await;
        let opened = store
            .dispute_payment(&intent, "dp_1", 2500, "usd", DisputeStatus::Open)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(opened.amount, units(-50));
        assert_eq!(
            store
                .dispute_payment(&intent, "dp_1", 2500, "usd", DisputeStatus::Open)
                .await
                .unwrap(),
            Err(NotApplied::Already)
        );
        let won = store
            .dispute_payment(&intent, "dp_1", 2500, "usd", DisputeStatus::Won)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(won.amount, units(50));
        assert_eq!(won.balance, units(60));
        for again in [DisputeStatus::Won, DisputeStatus::Lost, DisputeStatus::Open] {
            assert_eq!(
                store
                    .dispute_payment(&intent, "dp_1", 2500, "usd", again)
                    .await
                    .unwrap(),
                Err(NotApplied::Already)
            );
        }
        let found = violations(&store, &[&payment.id, &account_id]).await;
        assert!(found.is_empty(), "{found:?}");

        // Closed lost before its opening was seen: debited once.
        let (account_id, payment, intent) = paid_payment(&store, 0).await;
        let lost = store
            .dispute_payment(&intent, "dp_2", 1000, "usd", DisputeStatus::Lost)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(lost.amount, units(-20));
        assert_eq!(
            store
                .dispute_payment(&intent, "dp_2", 1000, "usd", DisputeStatus::Open)
                .await
                .unwrap(),
            Err(NotApplied::Already)
        );
        assert_eq!(balance(&store, &account_id).await, units(30));
        let found = violations(&store, &[&payment.id, &account_id]).await;
        assert!(found.is_empty(), "{found:?}");
    }
}

#[tokio::test]
async fn the_insider_who_reopens_a_paid_payment_is_caught() {
    for (store, url) in stores_with_urls().await {
        let (account_id, payment, intent) = paid_payment(&store, 0).await;
        let credit = store.payment(&payment.id).await.unwrap().ledger_id.unwrap();
        // Marked open again, to have the next redelivery credit it a second time.
        let reopen = format!(
            "UPDATE payments SET status = 'open', ledger_id = NULL WHERE id = '{}'",
            payment.id
        );
        tamper(&url, &reopen).await;
        let found = violations(&store, &[&credit]).await;
        assert!(
            found
                .iter()
                .any(|v| v.starts_with("payment_row_has_payment")),
            "{found:?}"
        );
        if !url.starts_with("sqlite:") {
            // Put it back: a PostgreSQL database is shared with the other tests' audits.
            let restore = format!(
                "UPDATE payments SET status = 'paid', ledger_id = '{credit}' WHERE id = '{}'",
                payment.id
            );
            tamper(&url, &restore).await;
            assert!(violations(&store, &[&credit, &payment.id]).await.is_empty());
            continue;
        }
        // On the test's own SQLite file: the redelivery credits again, and the first credit is
        // the one no payment names.
        store
            .credit_payment(&received(&payment, &intent))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(balance(&store, &account_id).await, units(100));
        assert!(!violations(&store, &[&credit]).await.is_empty());
    }
}

#[tokio::test]
async fn automatic_top_ups_are_due_below_the_threshold_within_the_cap() {
    for store in stores().await {
        let (account_id, payment) = account_with_payment(&store, 0).await;
        let intent = format!("pi_{}", unique());
        let mut card = received(&payment, &intent);
        card.payment_method = Some("pm_saved");
        store.credit_payment(&card).await.unwrap().unwrap();
        let due = |store: Store, account_id: String| async move {
            store
                .auto_topups_due(tollgate_store_now())
                .await
                .unwrap()
                .into_iter()
                .filter(|(t, _, _)| t.account_id == account_id)
                .count()
        };
        store
            .set_auto_topup(&AutoTopup {
                account_id: account_id.clone(),
                threshold: units(10),
                amount_minor: 1000,
                daily_cap_minor: 2000,
                enabled: true,
                paused: None,
                updated_at: 0,
                updated_by: "portal:test".into(),
            })
            .await
            .unwrap();
        // 50 available: not due.
        assert_eq!(due(store.clone(), account_id.clone()).await, 0);
        spend(&store, &account_id, 45).await;
        assert_eq!(due(store.clone(), account_id.clone()).await, 1);
        let automatic = |store: Store, account_id: String| async move {
            store
                .create_payment(&NewPayment {
                    account_id: &account_id,
                    provider: "stripe",
                    automatic: true,
                    person_id: None,
                    currency: "usd",
                    amount_minor: 1000,
                    amount: units(20),
                })
                .await
        };
        let first = automatic(store.clone(), account_id.clone()).await.unwrap();
        // One open at a time, whichever replica asks.
        assert!(automatic(store.clone(), account_id.clone()).await.is_err());
        assert_eq!(due(store.clone(), account_id.clone()).await, 0);
        // No answer from the provider yet: found once it is older than the cut-off (to be
        // asked again), not before.
        let unanswered = |before: i64| {
            let store = store.clone();
            async move {
                store
                    .unanswered_automatic_payments(before)
                    .await
                    .unwrap()
                    .into_iter()
                    .map(|p| p.id)
                    .collect::<Vec<_>>()
            }
        };
        assert!(unanswered(first.created_at + 1).await.contains(&first.id));
        assert!(!unanswered(first.created_at).await.contains(&first.id));
        // Declined: paused until the person sets it again.
        assert!(
            store
                .payment_not_made(&first.id, PaymentStatus::Failed, Some("card_declined"))
                .await
                .unwrap()
        );
        assert!(
            store
                .auto_topup(&account_id)
                .await
                .unwrap()
                .unwrap()
                .paused
                .unwrap()
                .contains("card_declined")
        );
        assert_eq!(due(store.clone(), account_id.clone()).await, 0);
        assert!(
            !unanswered(i64::MAX).await.contains(&first.id),
            "failed: not asked again"
        );
        let mut again = store.auto_topup(&account_id).await.unwrap().unwrap();
        again.updated_by = "portal:test".into();
        store.set_auto_topup(&again).await.unwrap();
        assert_eq!(due(store.clone(), account_id.clone()).await, 1);
        // Two paid today reach the cap of 2000: no third.
        for n in 0..2 {
            let p = automatic(store.clone(), account_id.clone()).await.unwrap();
            let intent = format!("pi_auto_{n}_{}", unique());
            let mut paid = received(&p, &intent);
            paid.payment_method = Some("pm_saved");
            store.credit_payment(&paid).await.unwrap().unwrap();
            assert!(
                !unanswered(i64::MAX).await.contains(&p.id),
                "paid: answered"
            );
            // Spend it again.
            spend(&store, &account_id, 20).await;
        }
        assert_eq!(due(store.clone(), account_id.clone()).await, 0);
        let found = violations(&store, &[&account_id]).await;
        assert!(found.is_empty(), "{found:?}");
    }
}

fn tollgate_store_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[tokio::test]
async fn a_provider_payment_cannot_credit_two_payments() {
    for store in stores().await {
        let (_, first) = account_with_payment(&store, 0).await;
        let (account_id, second) = account_with_payment(&store, 0).await;
        let intent = format!("pi_{}", unique());
        store
            .credit_payment(&received(&first, &intent))
            .await
            .unwrap()
            .unwrap();
        assert!(matches!(
            store
                .credit_payment(&received(&second, &intent))
                .await
                .unwrap(),
            Err(NotApplied::Mismatch { .. })
        ));
        assert_eq!(balance(&store, &account_id).await, units(0));
    }
}
