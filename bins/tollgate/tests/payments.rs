//! Top-ups through the simulated Stripe over real sockets (docs/operations.md, "Payments"): a
//! person starts a top-up in the portal, pays on the provider's page, and the provider's signed
//! webhook — delivered three times, to two replicas, out of order — credits it once. The
//! adversaries: a forger of webhooks (a wrong secret, an old timestamp, no signature, a body
//! changed after signing), a provider that says more was paid than was asked, a customer who
//! spends the money and has it refunded, a person of another account asking for a payment by
//! id.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use rust_decimal::Decimal;
use serde_json::{Value, json};
use std::time::Duration;
use support::portal::{Signed, accept, call, get, invitation, sign_in};
use support::{Gateway, Scratch, audit, cli, exchange, violations_of, wait_for};
use tollgate_sim::{KnobSettings, SimHandle, StripeKnobs, WEBHOOK_SECRET};
use tollgate_stripe::{WebhookSecret, signature};

/// A configuration with Stripe at the simulator: a dollar buys 2 units, top-ups of 5 to 500
/// dollars, automatic top-ups looked for every second.
fn config(scratch: &Scratch, sim: &SimHandle) -> std::path::PathBuf {
    let path = support::embeddings_config(scratch, &sim.base_url(), "openai");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text = text.replacen(
        "[simulator]",
        &format!(
            r#"[outbound]
trusted_hosts = ["127.0.0.1"]

[payments.stripe]
base_url = "{}"
currency = "usd"
units_per_currency_unit = "2"
min_amount = "5"
max_amount = "500"
max_automatic_per_day = "60"
automatic_check_seconds = 1

[alerting]
evaluate_seconds = 1

[[alerts]]
name = "forged-webhooks"
when = "payment_signature_failures"
min_failures = 3
webhook_url = "http://127.0.0.1:9/hook"
format = "slack"

[[alerts]]
name = "refunded-after-spend"
when = "refund_after_spend"
webhook_url = "http://127.0.0.1:9/hook"
format = "slack"

[simulator]"#,
            sim.base_url()
        ),
        1,
    );
    std::fs::write(&path, text).unwrap();
    path
}

const ENV: &[(&str, &str)] = &[
    ("STRIPE_SECRET_KEY", "sk_test_tollgate"),
    ("STRIPE_WEBHOOK_SECRET", WEBHOOK_SECRET),
];

/// A form post to the simulated Stripe (`sk_…` as the key).
async fn stripe(sim: &SimHandle, path: &str, form: &[(&str, &str)]) -> (u16, Value) {
    let body: String = form
        .iter()
        .map(|(k, v)| format!("{k}={}", v.replace('/', "%2F").replace(':', "%3A")))
        .collect::<Vec<_>>()
        .join("&");
    let (status, _, text) = exchange(
        &sim.addr().to_string(),
        "POST",
        path,
        &[
            ("Authorization", "Bearer sk_test_tollgate"),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        body.as_bytes(),
    )
    .await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// A `GET` of the simulated Stripe's API.
async fn stripe_get(sim: &SimHandle, path: &str) -> Value {
    let (status, _, text) = exchange(
        &sim.addr().to_string(),
        "GET",
        path,
        &[("Authorization", "Bearer sk_test_tollgate")],
        b"",
    )
    .await;
    assert_eq!(status, 200, "{path}: {text}");
    serde_json::from_str(&text).unwrap()
}

/// `PUT /portal/v1/auto-topup` as `who`.
async fn set_auto_topup(addr: &str, who: &Signed, body: Value) -> support::portal::Answer {
    call(
        addr,
        "PUT",
        "/portal/v1/auto-topup",
        Some(&who.cookie),
        Some(&who.csrf),
        Some(body),
    )
    .await
}

/// Every delivery attempt the simulated Stripe made.
async fn deliveries(sim: &SimHandle) -> Value {
    let (_, _, text) = exchange(
        &sim.addr().to_string(),
        "GET",
        "/_sim/stripe/deliveries",
        &[],
        b"",
    )
    .await;
    serde_json::from_str(&text).unwrap()
}

/// Sends the simulated Stripe's events for every replica to `gateways`.
async fn register(sim: &SimHandle, gateways: &[&Gateway]) {
    for gateway in gateways {
        let url = format!("http://{}/webhooks/stripe", gateway.addr);
        let (status, answer) = stripe(sim, "/v1/webhook_endpoints", &[("url", &url)]).await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["secret"], WEBHOOK_SECRET);
    }
}

async fn knobs(sim: &SimHandle, knobs: &StripeKnobs) {
    let body = serde_json::to_vec(knobs).unwrap();
    let (status, _, text) = exchange(
        &sim.addr().to_string(),
        "PUT",
        "/_sim/stripe",
        &[("Content-Type", "application/json")],
        &body,
    )
    .await;
    assert_eq!(status, 200, "{text}");
}

/// The account's balance as its portal shows it.
async fn balance(addr: &str, who: &Signed) -> Decimal {
    let account = get(addr, who, "/portal/v1/account").await;
    assert_eq!(account.status, 200, "{}", account.body);
    account.json()["balance"].as_str().unwrap().parse().unwrap()
}

/// An account `name` with `balance` and a signed-in person.
async fn customer(
    config: &std::path::Path,
    db: &str,
    addr: &str,
    name: &str,
    balance: &str,
) -> Signed {
    assert!(
        cli(
            config,
            db,
            &["keys", "create", "--name", name, "--balance", balance]
        )
        .ok
    );
    let email = format!("{name}@example.com");
    let token = invitation(config, db, name, &email);
    let password = "a long enough password";
    assert_eq!(accept(addr, &token, password).await.status, 200);
    sign_in(addr, json!({"email": email, "password": password}))
        .await
        .ok()
        .unwrap()
}

/// Starts a top-up of `amount` in the portal: the payment.
async fn top_up(addr: &str, who: &Signed, amount: &str, save_card: bool) -> Value {
    let started = call(
        addr,
        "POST",
        "/portal/v1/topups",
        Some(&who.cookie),
        Some(&who.csrf),
        Some(json!({"amount": amount, "save_card": save_card})),
    )
    .await;
    assert_eq!(started.status, 201, "{}", started.body);
    started.json()
}

/// Pays `payment` on the simulated provider's page, as the browser would: the page, its form,
/// the redirect back to the portal.
async fn pay(sim: &SimHandle, payment: &Value, card: &str) -> (u16, String) {
    let url = payment["checkout_url"].as_str().unwrap();
    let path = url.strip_prefix(&sim.base_url()).unwrap();
    let (status, _, page) = exchange(&sim.addr().to_string(), "GET", path, &[], b"").await;
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains(&format!("{} usd", payment["amount_minor"])),
        "{page}"
    );
    let (status, head, _) = exchange(
        &sim.addr().to_string(),
        "POST",
        &format!("{path}/pay"),
        &[("Content-Type", "application/x-www-form-urlencoded")],
        format!("card={card}").as_bytes(),
    )
    .await;
    let location = head
        .lines()
        .find_map(|l| l.strip_prefix("location: "))
        .unwrap_or_default()
        .to_owned();
    (status, location)
}

async fn payment(addr: &str, who: &Signed, id: &str) -> (u16, Value) {
    let answer = get(addr, who, &format!("/portal/v1/payments/{id}")).await;
    let json = if answer.status == 200 {
        answer.json()
    } else {
        Value::Null
    };
    (answer.status, json)
}

/// Posts `body` to the gateway's webhook with `signature`.
async fn deliver(addr: &str, body: &[u8], signature: Option<&str>) -> (u16, String) {
    let mut headers = vec![("Content-Type", "application/json")];
    if let Some(signature) = signature {
        headers.push(("Stripe-Signature", signature));
    }
    let (status, _, text) = exchange(addr, "POST", "/webhooks/stripe", &headers, body).await;
    (status, text)
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// `checkout.session.completed` for `payment`, paid `amount_minor`.
fn completed(payment: &Value, amount_minor: i64) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "id": format!("evt_forged_{}", payment["id"].as_str().unwrap()),
        "object": "event", "type": "checkout.session.completed", "created": now(),
        "livemode": false,
        "data": {"object": {
            "id": payment["checkout_id"], "object": "checkout.session",
            "amount_total": amount_minor, "currency": "usd",
            "client_reference_id": payment["id"],
            "metadata": {"tollgate_payment": payment["id"]},
            "payment_intent": format!("pi_forged_{}", payment["id"].as_str().unwrap()),
            "payment_status": "paid", "status": "complete"}}
    }))
    .unwrap()
}

fn units(text: &str) -> Decimal {
    text.parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_top_up_is_paid_on_the_providers_page_and_credited_once() {
    let scratch = Scratch::new("payments");
    let db = scratch.sqlite_url();
    let sim = tollgate_sim::start("127.0.0.1:0".parse().unwrap(), KnobSettings::default())
        .await
        .unwrap();
    let config = config(&scratch, &sim);
    let gateway = Gateway::start_with(&scratch, "gateway", &config, &db, "127.0.0.1:0", ENV).await;
    let addr = gateway.addr.as_str();
    register(&sim, &[&gateway]).await;
    // Every event accepted is delivered twice more.
    knobs(
        &sim,
        &StripeKnobs {
            duplicates: 2,
            ..StripeKnobs::default()
        },
    )
    .await;
    let ada = customer(&config, &db, addr, "acme", "1").await;
    let bob = customer(&config, &db, addr, "other", "1").await;

    // The terms, and amounts outside them refused by field.
    let terms = get(addr, &ada, "/portal/v1/topups/terms").await.json();
    assert_eq!(terms["offered"], true);
    assert_eq!(terms["currency"], "usd");
    for (amount, status) in [("4.99", 400), ("500.01", 400), ("10.001", 400), ("-5", 400)] {
        let refused = call(
            addr,
            "POST",
            "/portal/v1/topups",
            Some(&ada.cookie),
            Some(&ada.csrf),
            Some(json!({"amount": amount})),
        )
        .await;
        assert_eq!(refused.status, status, "{amount}: {}", refused.body);
        assert!(
            refused.body.contains("\"param\":\"amount\""),
            "{}",
            refused.body
        );
    }
    // Without the CSRF token: refused, nothing asked of the provider.
    let forged = call(
        addr,
        "POST",
        "/portal/v1/topups",
        Some(&ada.cookie),
        None,
        Some(json!({"amount": "25"})),
    )
    .await;
    assert_eq!(forged.status, 403, "{}", forged.body);

    // A provider that answers with a page the person must not be sent to: refused, the
    // payment failed, nothing credited.
    for lie in [
        "javascript:alert(document.cookie)",
        "http://169.254.169.254/latest",
    ] {
        knobs(
            &sim,
            &StripeKnobs {
                checkout_url: Some(lie.into()),
                ..StripeKnobs::default()
            },
        )
        .await;
        let refused = call(
            addr,
            "POST",
            "/portal/v1/topups",
            Some(&ada.cookie),
            Some(&ada.csrf),
            Some(json!({"amount": "10"})),
        )
        .await;
        assert_eq!(refused.status, 502, "{lie}: {}", refused.body);
        assert!(!refused.body.contains(lie), "{}", refused.body);
    }
    let failed = get(addr, &ada, "/portal/v1/payments").await.json();
    assert!(
        failed["data"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["status"] == "failed" && p["checkout_url"].is_null()),
        "{failed}"
    );
    knobs(
        &sim,
        &StripeKnobs {
            duplicates: 2,
            ..StripeKnobs::default()
        },
    )
    .await;

    // 25 dollars: 50 units, paid on the provider's page, credited once.
    let started = top_up(addr, &ada, "25.00", true).await;
    assert_eq!(started["status"], "open");
    assert_eq!(started["amount_minor"], 2500);
    assert_eq!(units(started["amount"].as_str().unwrap()), units("50"));
    let id = started["id"].as_str().unwrap().to_owned();
    assert_eq!(balance(addr, &ada).await, units("1"));
    let (status, location) = pay(&sim, &started, "4242424242424242").await;
    assert_eq!(status, 303);
    assert!(
        location.ends_with(&format!("/portal/#topups?paid={id}")),
        "{location}"
    );
    wait_for(
        "the payment credited",
        Duration::from_secs(20),
        async || balance(addr, &ada).await == units("51"),
    )
    .await;
    // Both events, each delivered three times: six 200s, and the balance as it was.
    wait_for("every delivery", Duration::from_secs(20), async || {
        let attempts = deliveries(&sim).await;
        attempts
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["status"] == 200)
            .count()
            >= 6
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(balance(addr, &ada).await, units("51"));
    let (status, paid) = payment(addr, &ada, &id).await;
    assert_eq!(status, 200);
    assert_eq!(paid["status"], "paid");
    let ledger = get(addr, &ada, "/portal/v1/ledger").await.json();
    let credit = ledger["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == paid["ledger_id"])
        .unwrap();
    assert_eq!(credit["kind"], "payment");
    assert!(credit["note"].as_str().unwrap().contains(&id));
    // The operator sees it as the person does, by id and in the account's list; no other.
    let admin_store = tollgate_store::Store::connect(&db).await.unwrap();
    let (_, admin_token) = admin_store
        .create_admin_token("payments-test", true)
        .await
        .unwrap();
    let admin = async |path: &str| {
        let (status, text) = support::http(addr, "GET", path, Some(&admin_token), None)
            .await
            .unwrap();
        (
            status,
            serde_json::from_str::<Value>(&text).unwrap_or(Value::Null),
        )
    };
    let (status, seen) = admin(&format!("/admin/v1/payments/{id}")).await;
    assert_eq!(status, 200, "{seen}");
    for field in [
        "status",
        "ledger_id",
        "intent_id",
        "amount",
        "amount_minor",
        "account_id",
    ] {
        assert_eq!(seen[field], paid[field], "{field}: {seen:#}");
    }
    let account = paid["account_id"].as_str().unwrap();
    let (status, listed) = admin(&format!("/admin/v1/payments?account={account}")).await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["data"][0]["id"], id.as_str(), "{listed:#}");
    assert_eq!(admin("/admin/v1/payments/pay_nope").await.0, 404);
    // The card is kept for automatic top-ups.
    let terms = get(addr, &ada, "/portal/v1/topups/terms").await.json();
    assert_eq!(terms["card_saved"], true);

    // Another account's person: the payment is not theirs, by id or in their list.
    assert_eq!(payment(addr, &bob, &id).await.0, 404);
    let theirs = get(addr, &bob, "/portal/v1/payments").await.json();
    assert_eq!(theirs["data"], json!([]));

    // Forged deliveries of a paid event for a new payment: refused, nothing credited.
    let open = top_up(addr, &ada, "10", false).await;
    let body = completed(&open, 1000);
    let right: WebhookSecret = WEBHOOK_SECRET.parse().unwrap();
    let wrong: WebhookSecret = "whsec_not_the_endpoints_secret_000".parse().unwrap();
    let mut tampered = body.clone();
    let at = tampered.iter().position(|b| *b == b'1').unwrap();
    tampered[at] = b'9';
    for (what, body, header) in [
        ("no signature", body.clone(), None),
        (
            "the wrong secret",
            body.clone(),
            Some(signature::header(&[&wrong], now(), &body)),
        ),
        (
            "an old timestamp",
            body.clone(),
            Some(signature::header(&[&right], now() - 301, &body)),
        ),
        (
            "a body changed after signing",
            tampered,
            Some(signature::header(&[&right], now(), &body)),
        ),
        (
            "a v0 signature only",
            body.clone(),
            Some(signature::header(&[&right], now(), &body).replace("v1=", "v0=")),
        ),
    ] {
        let (status, answer) = deliver(addr, &body, header.as_deref()).await;
        assert_eq!(status, 400, "{what}: {answer}");
    }
    // Five refused: the operator's alert fires (three in its window).
    let store = tollgate_store::Store::connect(&db).await.unwrap();
    wait_for(
        "the forged-webhooks alert",
        Duration::from_secs(20),
        async || {
            let events = store
                .alert_events(Some("forged-webhooks"), 5)
                .await
                .unwrap();
            events
                .iter()
                .any(|e| e.event_type == "alert.fired" && e.facts["failures"].as_u64() >= Some(3))
        },
    )
    .await;
    // A forger's flood, from four connections at once: every delivery counted, none lost,
    // though the database is written at most once a second (the tally's unit test).
    let flood = 400;
    let sent: Vec<_> = (0..4)
        .map(|_| {
            let (addr, body) = (addr.to_owned(), body.clone());
            tokio::spawn(async move {
                for _ in 0..flood / 4 {
                    assert_eq!(deliver(&addr, &body, Some("t=1,v1=00")).await.0, 400);
                }
            })
        })
        .collect();
    for task in sent {
        task.await.unwrap();
    }
    wait_for(
        "every refused delivery counted",
        Duration::from_secs(10),
        async || store.signature_failures_since(0).await.unwrap() == 5 + flood,
    )
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(store.signature_failures_since(0).await.unwrap(), 5 + flood);
    // Signed right but claiming more than was asked: refused too.
    let more = completed(&open, 100_000);
    let (status, answer) = deliver(
        addr,
        &more,
        Some(&signature::header(&[&right], now(), &more)),
    )
    .await;
    assert_eq!(status, 409, "{answer}");
    assert_eq!(balance(addr, &ada).await, units("51"));
    let open_id = open["id"].as_str().unwrap();
    assert_eq!(payment(addr, &ada, open_id).await.1["status"], "open");
    // Signed right, as the provider would: credited (the forged path was only the signature).
    let (status, answer) = deliver(
        addr,
        &body,
        Some(&signature::header(&[&right], now(), &body)),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(balance(addr, &ada).await, units("71"));

    // Spent, then refunded in full: the documented rule — all of it is debited, below zero,
    // said in the ledger; the account spends nothing more.
    assert!(cli(&config, &db, &["keys", "credit", "acme", "-70"]).ok);
    let intent = paid["intent_id"].as_str().unwrap();
    let (status, refund) = stripe(&sim, "/v1/refunds", &[("payment_intent", intent)]).await;
    assert_eq!(status, 200, "{refund}");
    wait_for("the refund debited", Duration::from_secs(20), async || {
        balance(addr, &ada).await == units("-49")
    })
    .await;
    let ledger = get(addr, &ada, "/portal/v1/ledger").await.json();
    let debit = &ledger["data"][0];
    assert_eq!(debit["kind"], "refund");
    assert!(
        debit["anomaly"]
            .as_str()
            .unwrap()
            .contains("after the money was spent"),
        "{debit}"
    );
    // The operator is told, once, naming the payment.
    wait_for(
        "the refunded-after-spend alert",
        Duration::from_secs(20),
        async || {
            let events = store
                .alert_events(Some("refunded-after-spend"), 5)
                .await
                .unwrap();
            events.len() == 1 && events[0].facts["payment_id"] == paid["id"]
        },
    )
    .await;
    // Refunded again (a redelivery): nothing more.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(balance(addr, &ada).await, units("-49"));

    // The books: clean, every payment paired with its rows.
    let (report, clean) = audit(&db, Some(&config));
    assert!(clean, "{report}");
    assert!(violations_of(&report, &["acme", "pay_"]).is_empty());
}

/// On PostgreSQL (when `TOLLGATE_TEST_POSTGRES_URL` is set) two replicas, each sent every
/// event twice; on SQLite one replica. Events held back and delivered in reverse order — the
/// refund before the payment — are applied once each; a chargeback opened and won; automatic
/// top-ups below the threshold up to the daily cap, one at a time whichever replica looks; a
/// declined card pauses them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_out_of_order_chargebacks_and_automatic_top_ups() {
    let scratch = Scratch::new("payments-replicas");
    let postgres = std::env::var("TOLLGATE_TEST_POSTGRES_URL").ok();
    let db = postgres.clone().unwrap_or_else(|| scratch.sqlite_url());
    let sim = tollgate_sim::start("127.0.0.1:0".parse().unwrap(), KnobSettings::default())
        .await
        .unwrap();
    let config = config(&scratch, &sim);
    let a = Gateway::start_with(&scratch, "replica-a", &config, &db, "127.0.0.1:0", ENV).await;
    let b = match postgres {
        Some(_) => {
            Some(Gateway::start_with(&scratch, "replica-b", &config, &db, "127.0.0.1:0", ENV).await)
        }
        None => None,
    };
    let mut replicas = vec![&a];
    replicas.extend(b.as_ref());
    register(&sim, &replicas).await;
    let addr = a.addr.as_str();
    let (acme, other) = (
        format!("acme-{}", scratch.tag),
        format!("other-{}", scratch.tag),
    );
    let ada = customer(&config, &db, addr, &acme, "1").await;
    let bob = customer(&config, &db, addr, &other, "1").await;

    // Paid and partly refunded while the events are held; then delivered, newest first, to
    // every replica, each twice.
    knobs(
        &sim,
        &StripeKnobs {
            duplicates: 1,
            hold_events: true,
            ..StripeKnobs::default()
        },
    )
    .await;
    let started = top_up(addr, &ada, "25", true).await;
    let id = started["id"].as_str().unwrap().to_owned();
    assert_eq!(pay(&sim, &started, "4242424242424242").await.0, 303);
    assert_eq!(
        balance(addr, &ada).await,
        units("1"),
        "nothing delivered yet"
    );
    // The provider's payment, as its checkout says.
    let session = stripe_get(
        &sim,
        &format!(
            "/v1/checkout/sessions/{}",
            started["checkout_id"].as_str().unwrap()
        ),
    )
    .await;
    assert_eq!(session["payment_status"], "paid");
    let intent_id = session["payment_intent"].as_str().unwrap().to_owned();
    let (status, refund) = stripe(
        &sim,
        "/v1/refunds",
        &[("payment_intent", &intent_id), ("amount", "500")],
    )
    .await;
    assert_eq!(status, 200, "{refund}");
    let (status, _) = stripe(&sim, "/_sim/stripe/release", &[]).await;
    assert_eq!(status, 200);
    // 50 credited (the refund found its payment with the provider first), 10 refunded.
    wait_for(
        "the payment and its refund",
        Duration::from_secs(20),
        async || balance(addr, &ada).await == units("41"),
    )
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(balance(addr, &ada).await, units("41"), "each applied once");
    let (_, paid) = payment(addr, &ada, &id).await;
    assert_eq!(paid["status"], "paid");
    assert_eq!(paid["refunded_minor"], 500);
    // The refund came first and was not sent back: the gateway asked the provider about its
    // payment and credited that first.
    let attempts = deliveries(&sim).await;
    let attempts = attempts.as_array().unwrap();
    assert_eq!(attempts[0]["kind"], "charge.refunded", "{attempts:?}");
    assert!(attempts.iter().all(|a| a["status"] == 200), "{attempts:?}");

    // A chargeback of 20 dollars: 40 units taken; won: given back.
    let (status, dispute) = stripe(
        &sim,
        "/_sim/stripe/disputes",
        &[("payment_intent", &intent_id), ("amount", "2000")],
    )
    .await;
    assert_eq!(status, 200, "{dispute}");
    wait_for("the chargeback", Duration::from_secs(20), async || {
        balance(addr, &ada).await == units("1")
    })
    .await;
    let dispute_id = dispute["id"].as_str().unwrap();
    let (status, _) = stripe(
        &sim,
        &format!("/_sim/stripe/disputes/{dispute_id}/close"),
        &[("status", "won")],
    )
    .await;
    assert_eq!(status, 200);
    wait_for("the chargeback won", Duration::from_secs(20), async || {
        balance(addr, &ada).await == units("41")
    })
    .await;

    // Automatic top-ups: 10 dollars (20 units) below 30 units, at most 20 dollars a day.
    let set = set_auto_topup(
        addr,
        &ada,
        json!({"enabled": true, "threshold": "30", "amount": "10", "daily_cap": "20"}),
    )
    .await;
    assert_eq!(set.status, 200, "{}", set.body);
    let above_cap = set_auto_topup(
        addr,
        &ada,
        json!({"enabled": true, "threshold": "30", "amount": "10", "daily_cap": "61"}),
    )
    .await;
    assert_eq!(
        above_cap.status, 400,
        "the operator's cap is 60: {}",
        above_cap.body
    );
    for (spend, after) in [("-20", "41"), ("-25", "36")] {
        assert!(cli(&config, &db, &["keys", "credit", &acme, spend]).ok);
        wait_for("an automatic top-up", Duration::from_secs(20), async || {
            balance(addr, &ada).await == units(after)
        })
        .await;
    }
    // The cap is reached: below the threshold again, nothing more today.
    assert!(cli(&config, &db, &["keys", "credit", &acme, "-20"]).ok);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(balance(addr, &ada).await, units("16"));
    let list = get(addr, &ada, "/portal/v1/payments").await.json();
    let automatic: Vec<&Value> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["automatic"] == true)
        .collect();
    assert_eq!(automatic.len(), 2, "{list}");
    assert!(automatic.iter().all(|p| p["status"] == "paid"));

    // Bob's card is declined off-session: nothing credited, his automatic top-up paused.
    let bobs = top_up(addr, &bob, "5", true).await;
    assert_eq!(pay(&sim, &bobs, "4242424242424242").await.0, 303);
    wait_for("bob's payment", Duration::from_secs(20), async || {
        balance(addr, &bob).await == units("11")
    })
    .await;
    let (_, bobs) = payment(addr, &bob, bobs["id"].as_str().unwrap()).await;
    let customer_id = stripe_get(
        &sim,
        &format!(
            "/v1/payment_intents/{}",
            bobs["intent_id"].as_str().unwrap()
        ),
    )
    .await;
    knobs(
        &sim,
        &StripeKnobs {
            decline_customers: vec![customer_id["customer"].as_str().unwrap().to_owned()],
            ..StripeKnobs::default()
        },
    )
    .await;
    let set = set_auto_topup(
        addr,
        &bob,
        json!({"enabled": true, "threshold": "20", "amount": "5", "daily_cap": "10"}),
    )
    .await;
    assert_eq!(set.status, 200, "{}", set.body);
    wait_for("the decline", Duration::from_secs(20), async || {
        let topup = get(addr, &bob, "/portal/v1/auto-topup").await.json();
        topup["auto_topup"]["paused"]
            .as_str()
            .is_some_and(|p| p.contains("declined"))
    })
    .await;
    assert_eq!(balance(addr, &bob).await, units("11"));

    let (report, _) = audit(&db, Some(&config));
    let found = violations_of(&report, &[&acme, &other, "pay_"]);
    assert!(found.is_empty(), "{found:?}");
}
