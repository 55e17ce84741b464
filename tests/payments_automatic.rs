//! Automatic top-ups whose off-session call got no answer (docs/decisions.md, "Payments"):
//! the call lost on the way to the provider, and the payment made but its answer lost on the
//! way back. Either way the payment is asked again after five minutes under the same
//! idempotency key — made once, never twice — and one the provider never answers in 23 hours is
//! given up, pausing the automatic top-up. The passes run at chosen times
//! (`tollgate_payments::automatic::top_up_due` takes `now`), against the simulated Stripe.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::TestGateway;
use serde_json::{Value, json};
use tollgate_billing::Amount;
use tollgate_payments::automatic::{ASK_AGAIN_AFTER_MS, GIVE_UP_AFTER_MS, top_up_due};
use tollgate_store::{AutoTopup, NewPayment, PaymentStatus, Received};

const CONFIG: &str = r#"
[[channels]]
name = "primary"
format = "openai-embeddings"
base_url = "sim"

[outbound]
trusted_hosts = ["127.0.0.1"]

[payments.stripe]
base_url = "sim"
secret_key_env = "STRIPE_SECRET_KEY"
webhook_secret_env = "STRIPE_WEBHOOK_SECRET"
currency = "usd"
units_per_currency_unit = "1"
min_amount = "5"
max_amount = "500"
max_automatic_per_day = "500"
"#;

/// One test at a time: a pass charges every account due in the database, so on a shared
/// PostgreSQL database one test's pass would start the other's payments.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn gateway() -> TestGateway {
    TestGateway::with_config_env(CONFIG, |var| match var {
        "STRIPE_SECRET_KEY" => Some("sk_test_automatic".into()),
        "STRIPE_WEBHOOK_SECRET" => Some(tollgate_sim::WEBHOOK_SECRET.into()),
        _ => None,
    })
    .await
}

/// An account with a card saved (a top-up of 20 paid with it) and an automatic top-up of
/// 10.00 below 1,000 units: due at once. Its customer at the provider, of its own (the knobs
/// lose its calls only: a pass charges every account due in the database).
async fn account_with_a_card(gw: &TestGateway) -> (String, String) {
    let customer = format!("cus_automatic_{}", common::unique());
    let (account_id, _) = gw.account("0").await;
    let store = &gw.store;
    let paid = store
        .create_payment(&NewPayment {
            account_id: &account_id,
            provider: "stripe",
            automatic: false,
            person_id: None,
            currency: "usd",
            amount_minor: 2000,
            amount: Amount::from_nanos(20_000_000_000),
        })
        .await
        .unwrap();
    let intent = format!("pi_card_{}", common::unique());
    store
        .credit_payment(&Received {
            payment_id: &paid.id,
            amount_minor: 2000,
            currency: "usd",
            intent_id: Some(&intent),
            customer_id: Some(&customer),
            payment_method: Some("pm_automatic"),
        })
        .await
        .unwrap()
        .unwrap();
    store
        .set_auto_topup(&AutoTopup {
            account_id: account_id.clone(),
            threshold: Amount::from_nanos(1_000_000_000_000),
            amount_minor: 1000,
            daily_cap_minor: 50_000,
            enabled: true,
            paused: None,
            updated_at: 0,
            updated_by: "portal:test".into(),
        })
        .await
        .unwrap();
    (account_id, customer)
}

async fn knobs(gw: &TestGateway, knobs: Value) {
    let reply = gw
        .sim_request("PUT", "/_sim/stripe", knobs.to_string())
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
}

/// The simulated Stripe's PaymentIntents made for `payment_id`.
async fn intents_for(gw: &TestGateway, payment_id: &str) -> Vec<Value> {
    let reply = gw
        .sim_request("GET", "/_sim/stripe/payment_intents", "")
        .await;
    reply
        .json()
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["metadata"]["tollgate_payment"] == payment_id)
        .cloned()
        .collect()
}

/// The account's automatic payments, newest first.
async fn automatic_payments(gw: &TestGateway, account_id: &str) -> Vec<tollgate_store::Payment> {
    gw.store
        .payments(Some(account_id), None, 50)
        .await
        .unwrap()
        .into_iter()
        .filter(|p| p.automatic)
        .collect()
}

fn now() -> i64 {
    tollgate_journal::clock::now_millis()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_charge_is_asked_again_under_its_key_and_made_once() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let gw = gateway().await;
    for knob in ["lose_off_session", "drop_off_session_answers"] {
        let (account_id, customer) = account_with_a_card(&gw).await;
        knobs(&gw, json!({ knob: [customer] })).await;
        let start = now();
        let pass = top_up_due(&gw.state, start).await.unwrap();
        assert!(pass.started >= 1, "{knob}");
        let [payment] = &automatic_payments(&gw, &account_id).await[..] else {
            panic!("{knob}: one automatic payment");
        };
        assert_eq!(payment.status, PaymentStatus::Open, "{knob}");
        assert_eq!(payment.intent_id, None, "{knob}: no answer");
        let made_first = intents_for(&gw, &payment.id).await.len();
        assert_eq!(
            made_first,
            usize::from(knob == "drop_off_session_answers"),
            "{knob}"
        );

        // Within five minutes: neither asked again nor a second payment (one open at a time).
        top_up_due(&gw.state, start + ASK_AGAIN_AFTER_MS / 2)
            .await
            .unwrap();
        assert_eq!(
            automatic_payments(&gw, &account_id).await.len(),
            1,
            "{knob}"
        );

        // After: asked again under the same key; the provider's one payment, now known.
        let pass = top_up_due(&gw.state, payment.created_at + ASK_AGAIN_AFTER_MS)
            .await
            .unwrap();
        assert!(pass.started >= 1, "{knob}");
        let asked_again = gw.store.payment(&payment.id).await.unwrap();
        let intents = intents_for(&gw, &payment.id).await;
        assert_eq!(intents.len(), 1, "{knob}: made once: {intents:#?}");
        assert_eq!(
            asked_again.intent_id.as_deref(),
            intents[0]["id"].as_str(),
            "{knob}"
        );
        // Answered: not asked a third time.
        let before = intents_for(&gw, &payment.id).await.len();
        top_up_due(&gw.state, payment.created_at + 2 * ASK_AGAIN_AFTER_MS)
            .await
            .unwrap();
        assert_eq!(intents_for(&gw, &payment.id).await.len(), before, "{knob}");
        assert_eq!(
            automatic_payments(&gw, &account_id).await.len(),
            1,
            "{knob}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_charge_never_answered_in_a_day_is_given_up_and_the_top_up_paused() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let gw = gateway().await;
    let (account_id, customer) = account_with_a_card(&gw).await;
    // Every call of its customer lost, for as long as the test runs.
    knobs(&gw, json!({"lose_off_session": vec![customer; 100]})).await;
    let start = now();
    top_up_due(&gw.state, start).await.unwrap();
    let [payment] = &automatic_payments(&gw, &account_id).await[..] else {
        panic!("one automatic payment");
    };
    // Asked again (and lost again) within the day: still open.
    top_up_due(&gw.state, payment.created_at + ASK_AGAIN_AFTER_MS)
        .await
        .unwrap();
    assert_eq!(
        gw.store.payment(&payment.id).await.unwrap().status,
        PaymentStatus::Open
    );
    // Past 23 hours: given up, the automatic top-up paused with the reason, nothing made.
    let pass = top_up_due(&gw.state, payment.created_at + GIVE_UP_AFTER_MS)
        .await
        .unwrap();
    assert!(pass.declined >= 1);
    let given_up = gw.store.payment(&payment.id).await.unwrap();
    assert_eq!(given_up.status, PaymentStatus::Failed);
    assert!(intents_for(&gw, &payment.id).await.is_empty());
    let paused = gw
        .store
        .auto_topup(&account_id)
        .await
        .unwrap()
        .unwrap()
        .paused;
    assert!(
        paused
            .as_deref()
            .is_some_and(|p| p.contains("never answered")),
        "{paused:?}"
    );
    // Paused: no new automatic payment however low the balance.
    top_up_due(&gw.state, payment.created_at + GIVE_UP_AFTER_MS + 60_000)
        .await
        .unwrap();
    assert_eq!(automatic_payments(&gw, &account_id).await.len(), 1);
}
