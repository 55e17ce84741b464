//! Alerts (`docs/decisions.md`, "Alerts"; `docs/operations.md`, "Alerts") on the built binary,
//! with a webhook receiver that verifies every Standard Webhooks signature:
//!
//! * two replicas on PostgreSQL see the same balance fall under an operator's correction, and
//!   one event is recorded; its receiver fails three times, both replicas are killed (-9)
//!   between the first failure and the rest, and the fourth attempt — after the restart —
//!   delivers it; the balance restored resolves it; a redelivery posts the same `webhook-id`;
//! * a replica stopped (SIGSTOP) in the middle of an attempt, past its lease, cannot record it:
//!   the other replica delivers, and the stalled one's late answer is fenced;
//! * on one replica: a key spending with no baseline is disabled by its rule, the others keep
//!   working; a budget's percentages fire once each; a channel's circuit opening is posted in
//!   the Slack format; a rule added through the admin API fires; bad rules are refused by name;
//! * a customer's balance alert, set in the portal: signed with its own secret, fired and
//!   resolved, its URL held to the address rule for customers, out of another account's reach.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::{Gateway, Scratch, http};
use tollgate_alerts::Secret;
use tollgate_sim::KnobSettings;
use tollgate_store::Store;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const SECRET_VAR: &str = "TOLLGATE_TEST_ALERT_SECRET";
const EMBED: &str = r#"{"model":"text-embedding-3-small","input":"alerts"}"#;

/// The tests on PostgreSQL one at a time: every replica's courier takes any delivery due in
/// its database, so one test's replicas would deliver the other's.
static ON_POSTGRES: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// One request the receiver got.
#[derive(Debug, Clone)]
struct Posted {
    id: String,
    timestamp: String,
    signature: String,
    body: Value,
    raw: Bytes,
}

/// A webhook receiver: answers each request with the next of `script` (a status and a delay),
/// then 200; keeps every request, and checks each signature as a receiver must.
struct Receiver {
    url: String,
    posted: Arc<Mutex<Vec<Posted>>>,
}

impl Receiver {
    async fn start(script: Vec<(u16, Duration)>) -> Receiver {
        let posted = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(script.into_iter()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let kept = posted.clone();
        tokio::spawn(async move {
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                let (kept, script) = (kept.clone(), script.clone());
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(
                        move |request: http::Request<hyper::body::Incoming>| {
                            let (kept, script) = (kept.clone(), script.clone());
                            async move {
                                let header = |name: &str| {
                                    request
                                        .headers()
                                        .get(name)
                                        .map(|v| v.to_str().unwrap().to_owned())
                                        .unwrap_or_default()
                                };
                                let (id, timestamp, signature) = (
                                    header("webhook-id"),
                                    header("webhook-timestamp"),
                                    header("webhook-signature"),
                                );
                                assert_eq!(header("content-type"), "application/json");
                                let raw = request.into_body().collect().await.unwrap().to_bytes();
                                let body: Value = serde_json::from_slice(&raw).unwrap();
                                kept.lock().unwrap().push(Posted {
                                    id,
                                    timestamp,
                                    signature,
                                    body,
                                    raw,
                                });
                                let next = script.lock().unwrap().next();
                                let (status, delay) = next.unwrap_or((200, Duration::ZERO));
                                tokio::time::sleep(delay).await;
                                let mut response = http::Response::new(Full::new(Bytes::from(
                                    format!("answer {status}"),
                                )));
                                *response.status_mut() =
                                    http::StatusCode::from_u16(status).unwrap();
                                Ok::<_, std::convert::Infallible>(response)
                            }
                        },
                    );
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Receiver {
            url: format!("http://{addr}/hook"),
            posted,
        }
    }

    fn posted(&self) -> Vec<Posted> {
        self.posted.lock().unwrap().clone()
    }

    /// Waits (up to `within`) until `n` requests have come.
    async fn until(&self, n: usize, within: Duration) -> Vec<Posted> {
        let started = Instant::now();
        loop {
            let posted = self.posted();
            if posted.len() >= n {
                return posted;
            }
            assert!(
                started.elapsed() < within,
                "{} of {n} webhooks after {within:?}: {posted:#?}",
                posted.len()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// What a receiver does with each request: the signature over id, timestamp and body, and a
/// timestamp within five minutes.
fn verify(posted: &Posted) {
    verify_with(SECRET, posted);
}

/// [`verify`] with the secret `secret` (a customer's alert's own).
fn verify_with(secret: &str, posted: &Posted) {
    let secret: Secret = secret.parse().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    secret
        .verify(
            &posted.id,
            &posted.timestamp,
            &posted.signature,
            &posted.raw,
            now,
            300,
        )
        .unwrap_or_else(|e| panic!("{e}: {posted:?}"));
    // And a body tampered with is refused.
    let mut tampered = posted.raw.to_vec();
    tampered.push(b' ');
    assert!(
        secret
            .verify(
                &posted.id,
                &posted.timestamp,
                &posted.signature,
                &tampered,
                now,
                300
            )
            .is_err()
    );
}

async fn admin(addr: &str, token: &str, method: &str, path: &str, body: Option<&str>) -> Value {
    let (status, text) = http(addr, method, path, Some(token), body).await.unwrap();
    assert!(
        (200..300).contains(&status),
        "{method} {path}: {status} {text}"
    );
    serde_json::from_str(&text).unwrap()
}

/// Waits (up to `within`) until `check` holds of the admin API's answer at `path`.
async fn until_admin(
    addr: &str,
    token: &str,
    path: &str,
    within: Duration,
    check: impl Fn(&Value) -> bool,
) -> Value {
    let started = Instant::now();
    loop {
        let value = admin(addr, token, "GET", path, None).await;
        if check(&value) {
            return value;
        }
        assert!(
            started.elapsed() < within,
            "{path} after {within:?}: {value:#}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// An embeddings request with `key`: its status.
async fn embed(addr: &str, key: &str, body: &str) -> u16 {
    http(addr, "POST", "/v1/embeddings", Some(key), Some(body))
        .await
        .unwrap()
        .0
}

fn signal(gateway: &Gateway, name: &str) {
    let status = Command::new("kill")
        .args([name, &gateway.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// The embeddings configuration of `support`, with `extra` (alert rules, `[alerting]`) added.
fn config_with(
    scratch: &Scratch,
    upstream: &str,
    channel: &str,
    extra: &str,
) -> std::path::PathBuf {
    let path = support::embeddings_config(scratch, upstream, channel);
    let mut text = std::fs::read_to_string(&path).unwrap();
    // The receivers of these tests listen on loopback: the operator lists them, as one lists
    // an internal receiver (`[outbound]`, "One address rule").
    if !extra.contains("[outbound]") {
        text.push_str("\n[outbound]\ntrusted_hosts = [\"127.0.0.1\"]\n");
    }
    text.push_str(extra);
    std::fs::write(&path, text).unwrap();
    path
}

/// What the PostgreSQL tests share: an account of this run's own with 10, an admin token, and a
/// configuration whose one rule (named for this run: levels and events are shared by everything
/// on the database) fires when the account's balance is under 5, posting to `receiver`.
struct LowBalance {
    db: String,
    account: tollgate_store::Account,
    token: String,
    rule: String,
    config: std::path::PathBuf,
    _sim: tollgate_sim::SimHandle,
}

impl LowBalance {
    async fn new(scratch: &Scratch, db: &str, receiver: &Receiver, alerting: &str) -> LowBalance {
        let sim = tollgate_sim::start("127.0.0.1:0".parse().unwrap(), KnobSettings::default())
            .await
            .unwrap();
        let store = Store::connect(db).await.unwrap();
        let name = format!("alerts-{}", scratch.tag);
        let (account, _) = store
            .create_account(&name, "10".parse().unwrap())
            .await
            .unwrap();
        let (_, token) = store.create_admin_token(&name, false).await.unwrap();
        let rule = format!("low-{}", scratch.tag);
        let config = config_with(
            scratch,
            &sim.base_url(),
            &format!("openai-{}", scratch.tag),
            &format!(
                r#"
[alerting]
evaluate_seconds = 1
{alerting}

[[alerts]]
name = "{rule}"
when = "balance_below"
threshold = "5"
account = "{name}"
webhook_url = "{url}"
secret_env = "{SECRET_VAR}"
"#,
                url = receiver.url
            ),
        );
        LowBalance {
            db: db.to_owned(),
            account,
            token,
            rule,
            config,
            _sim: sim,
        }
    }

    async fn start(&self, scratch: &Scratch, name: &str) -> Gateway {
        let env = [(SECRET_VAR, SECRET)];
        Gateway::start_with(scratch, name, &self.config, &self.db, "127.0.0.1:0", &env).await
    }

    /// The operator's correction, through `gateway`'s admin API: the balance to 4.
    async fn correct(&self, gateway: &Gateway) {
        let credit = json!({"amount": "-6", "reason": "correction", "allow_negative": false});
        admin(
            &gateway.addr,
            &self.token,
            "POST",
            &self.credits(),
            Some(&credit.to_string()),
        )
        .await;
    }

    fn credits(&self) -> String {
        format!("/admin/v1/accounts/{}/credits", self.account.id)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_event_across_replicas_survives_a_crash_and_reaches_a_receiver_failing_three_times() {
    let Ok(db) = std::env::var("TOLLGATE_TEST_POSTGRES_URL") else {
        eprintln!("skipped: TOLLGATE_TEST_POSTGRES_URL is not set");
        return;
    };
    let _alone = ON_POSTGRES.lock().await;
    let scratch = Scratch::new("alerts-pg");
    let receiver = Receiver::start(vec![(500, Duration::ZERO); 3]).await;
    let setup = LowBalance::new(
        &scratch,
        &db,
        &receiver,
        "retry_seconds = [3, 1, 1, 1]\ntimeout_seconds = 5",
    )
    .await;
    let (token, rule, account) = (setup.token.clone(), &setup.rule, &setup.account);
    let (mut a, mut b) = tokio::join!(
        setup.start(&scratch, "replica-a"),
        setup.start(&scratch, "replica-b")
    );

    // The operator's correction takes the balance under the threshold: both replicas judge it
    // within a second of each other.
    setup.correct(&a).await;

    // The first attempt fails (500) and is recorded; then both replicas crash.
    let first = receiver.until(1, Duration::from_secs(15)).await;
    let deliveries = format!("/admin/v1/alerts/deliveries?rule={rule}");
    let listed = until_admin(&b.addr, &token, &deliveries, Duration::from_secs(10), |v| {
        v["data"][0]["attempts"] == 1
    })
    .await;
    let delivery = listed["data"][0]["id"].as_str().unwrap().to_owned();
    a.kill();
    b.kill();
    assert_eq!(first[0].id, delivery, "the webhook-id is the delivery's id");
    let (a, b) = tokio::join!(
        setup.start(&scratch, "replica-a2"),
        setup.start(&scratch, "replica-b2")
    );

    // Two more failures, and the fourth attempt is answered 200, after the restart.
    let posted = receiver.until(4, Duration::from_secs(30)).await;
    let one = until_admin(
        &a.addr,
        &token,
        &format!("/admin/v1/alerts/deliveries/{delivery}"),
        Duration::from_secs(10),
        |v| v["state"] == "delivered",
    )
    .await;
    let statuses: Vec<i64> = one["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["status"].as_i64().unwrap())
        .collect();
    assert_eq!(statuses, [500, 500, 500, 200], "{one:#}");
    assert!(
        one["history"][0]["answer"].is_null(),
        "no receiver body is kept: {one:#}"
    );
    assert_eq!(one["attempts"], 4);
    for p in &posted[..4] {
        verify(p);
        assert_eq!(p.id, delivery, "every retry carries the same webhook-id");
        assert_eq!(p.body["type"], "alert.fired");
        assert_eq!(p.body["data"]["rule"], rule.as_str());
        assert_eq!(p.body["data"]["facts"]["balance"], "4");
        assert_eq!(p.body["data"]["facts"]["threshold"], "5");
    }
    assert_eq!(posted[0].raw, posted[3].raw, "the same body each time");
    assert!(
        posted[1].timestamp >= posted[0].timestamp,
        "each attempt signed at its own time"
    );

    // Exactly one event, though two replicas (then two more) judged the rule every second.
    let events = admin(
        &b.addr,
        &token,
        "GET",
        &format!("/admin/v1/alerts/events?rule={rule}"),
        None,
    )
    .await;
    assert_eq!(events["data"].as_array().unwrap().len(), 1, "{events:#}");
    let rules = admin(&b.addr, &token, "GET", "/admin/v1/alerts", None).await;
    let mine = rules["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == rule.as_str())
        .unwrap();
    assert_eq!(mine["source"], "config");
    assert_eq!(
        mine["firing"][0]["subject"],
        format!("account:{}", account.id)
    );

    // The balance restored: one resolution, its own delivery, its own id.
    let credit = json!({"amount": "10", "reason": "top-up"});
    admin(
        &b.addr,
        &token,
        "POST",
        &setup.credits(),
        Some(&credit.to_string()),
    )
    .await;
    let posted = receiver.until(5, Duration::from_secs(15)).await;
    verify(&posted[4]);
    assert_eq!(posted[4].body["type"], "alert.resolved");
    assert_ne!(posted[4].id, delivery);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        receiver.posted().len(),
        5,
        "nothing more: no repeat of either"
    );

    // A redelivery: the same webhook-id, a fifth attempt in the history.
    let again = admin(
        &a.addr,
        &token,
        "POST",
        &format!("/admin/v1/alerts/deliveries/{delivery}/redeliver"),
        None,
    )
    .await;
    assert_eq!(again["id"], delivery.as_str());
    let posted = receiver.until(6, Duration::from_secs(10)).await;
    verify(&posted[5]);
    assert_eq!(posted[5].id, delivery);
    until_admin(
        &b.addr,
        &token,
        &format!("/admin/v1/alerts/deliveries/{delivery}"),
        Duration::from_secs(10),
        |v| v["attempts"] == 5 && v["state"] == "delivered",
    )
    .await;
    let changes = admin(
        &a.addr,
        &token,
        "GET",
        &format!("/admin/v1/changes?target={delivery}"),
        None,
    )
    .await;
    assert_eq!(changes["data"][0]["action"], "alert.redeliver");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_stopped_mid_attempt_past_its_lease_cannot_record_it() {
    let Ok(db) = std::env::var("TOLLGATE_TEST_POSTGRES_URL") else {
        eprintln!("skipped: TOLLGATE_TEST_POSTGRES_URL is not set");
        return;
    };
    let _alone = ON_POSTGRES.lock().await;
    let scratch = Scratch::new("alerts-stop");
    // The first request is answered 200 after 30 s: long after its sender's attempt timed out
    // (3 s), which it cannot notice until it is continued.
    let receiver = Receiver::start(vec![(200, Duration::from_secs(30))]).await;
    // An attempt may take 3 s; a lease lasts 2 × 3 + 10 = 16 s.
    let setup = LowBalance::new(
        &scratch,
        &db,
        &receiver,
        "retry_seconds = [1, 1]\ntimeout_seconds = 3",
    )
    .await;
    let token = setup.token.clone();
    // A alone first, so that A takes the delivery.
    let a = setup.start(&scratch, "replica-a").await;
    setup.correct(&a).await;
    let first = receiver.until(1, Duration::from_secs(15)).await;
    signal(&a, "-STOP");
    let b = setup.start(&scratch, "replica-b").await;
    // B takes the delivery once A's lease has lapsed, and delivers it.
    let posted = receiver.until(2, Duration::from_secs(30)).await;
    assert_eq!(
        posted[1].id, first[0].id,
        "the same webhook-id: the receiver drops it"
    );
    let delivery = format!("/admin/v1/alerts/deliveries/{}", first[0].id);
    let one = until_admin(&b.addr, &token, &delivery, Duration::from_secs(10), |v| {
        v["state"] == "delivered"
    })
    .await;
    signal(&a, "-CONT");
    // A wakes to its attempt's end (timed out, or answered) and tries to record it: fenced.
    let started = Instant::now();
    loop {
        let log = std::fs::read_to_string(&a.log).unwrap();
        if log.contains("its lease passed to another replica") {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "replica A never reported its fenced attempt"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let after = admin(&b.addr, &token, "GET", &delivery, None).await;
    assert_eq!(
        after["attempts"], 1,
        "only B's attempt is recorded: {after:#}"
    );
    assert_eq!(after["history"].as_array().unwrap().len(), 1);
    assert_eq!(after["history"][0]["status"], 200);
    assert_eq!(after["history"], one["history"]);
    assert_ne!(
        after["history"][0]["replica"].as_str(),
        None,
        "the replica that made it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_act_on_a_runaway_key_budgets_and_circuits_on_one_replica() {
    let scratch = Scratch::new("alerts-one");
    let db = scratch.sqlite_url();
    let sim = tollgate_sim::start("127.0.0.1:0".parse().unwrap(), KnobSettings::default())
        .await
        .unwrap();
    let standard = Receiver::start(Vec::new()).await;
    let slack = Receiver::start(Vec::new()).await;
    let store = Store::connect(&db).await.unwrap();
    let (leaky, leaked) = store
        .create_account("leaky", "10".parse().unwrap())
        .await
        .unwrap();
    let other = store.create_key(&leaky.id, "the other key").await.unwrap();
    let (budgeted, budget_key) = store
        .create_account("budgeted", "10".parse().unwrap())
        .await
        .unwrap();
    let (_, plain) = store
        .create_account("plain", "10".parse().unwrap())
        .await
        .unwrap();
    let (_, token) = store.create_admin_token("ops", false).await.unwrap();
    store.close().await;
    let config = config_with(
        &scratch,
        &sim.base_url(),
        "openai",
        &format!(
            r#"
[[channels]]
name = "dead"
format = "openai-embeddings"
base_url = "http://127.0.0.1:9"

[models."dead-embedding"]
kind = "embeddings"
channels = ["dead"]
price = {{ meter = "tokens", per_million_tokens = "0.02" }}

[alerting]
evaluate_seconds = 1
retry_seconds = [1]

[[alerts]]
name = "runaway"
when = "spend_velocity"
account = "leaky"
key = "{leaked_id}"
window_minutes = 1
min_spend = "0.000000001"
action = "disable"
webhook_url = "{std}"
secret_env = "{SECRET_VAR}"

[[alerts]]
name = "budget"
when = "budget_used"
account = "budgeted"
percents = [50, 90]
webhook_url = "{std}"
secret_env = "{SECRET_VAR}"

[[alerts]]
name = "circuits"
when = "channel_circuit"
channel = "dead"
format = "slack"
webhook_url = "{slack}"
"#,
            std = standard.url,
            slack = slack.url,
            leaked_id = leaked.id
        ),
    );
    let env = [(SECRET_VAR, SECRET)];
    let gw = Gateway::start_with(&scratch, "one", &config, &db, "127.0.0.1:0", &env).await;
    let addr = gw.addr.as_str();

    // The leaked key spends with no history at all: its rule disables it, and only it.
    assert_eq!(embed(addr, &leaked.secret, EMBED).await, 200);
    let started = Instant::now();
    loop {
        let status = embed(addr, &leaked.secret, EMBED).await;
        if status == 403 || status == 401 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "the runaway key still answers {status}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        embed(addr, &other.secret, EMBED).await,
        200,
        "the account's other key is untouched"
    );
    let posted = standard.until(1, Duration::from_secs(10)).await;
    verify(&posted[0]);
    assert_eq!(posted[0].body["data"]["rule"], "runaway");
    assert_eq!(
        posted[0].body["data"]["action"],
        format!("key {} disabled", leaked.id)
    );
    let changes = admin(
        addr,
        &token,
        "GET",
        &format!("/admin/v1/changes?target={}", leaked.id),
        None,
    )
    .await;
    assert_eq!(changes["data"][0]["actor"], "alert:runaway");
    assert_eq!(changes["data"][0]["action"], "alert.disable");

    // A daily budget of ten requests: one request measures what a request costs.
    let budgeted_embed = || embed(addr, &budget_key.secret, EMBED);
    assert_eq!(budgeted_embed().await, 200);
    let account = admin(
        addr,
        &token,
        "GET",
        &format!("/admin/v1/accounts/{}", budgeted.id),
        None,
    )
    .await;
    let balance: tollgate_billing::Amount = account["balance"].as_str().unwrap().parse().unwrap();
    let per_request = 10_000_000_000 - balance.nanos();
    assert!(per_request > 0, "{account:#}");
    let policy =
        json!({"daily_budget": tollgate_billing::Amount::from_nanos(per_request * 10).to_string()});
    admin(
        addr,
        &token,
        "PATCH",
        &format!("/admin/v1/accounts/{}/policy", budgeted.id),
        Some(&policy.to_string()),
    )
    .await;
    // To 60 %, a round of the judge, then to 100 %.
    for _ in 0..5 {
        assert_eq!(budgeted_embed().await, 200);
    }
    tokio::time::sleep(Duration::from_millis(2500)).await;
    for _ in 0..4 {
        budgeted_embed().await;
    }
    let budget_events = until_admin(
        addr,
        &token,
        "/admin/v1/alerts/events?rule=budget",
        Duration::from_secs(10),
        |v| v["data"].as_array().unwrap().len() >= 2,
    )
    .await;
    let levels: Vec<i64> = budget_events["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["level"].as_i64().unwrap())
        .collect();
    assert_eq!(levels, [90, 50], "newest first: {budget_events:#}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    // The CLI is the API's twin: the same deliveries, and a redelivery.
    let listed = support::cli(
        &config,
        &db,
        &["alerts", "deliveries", "--rule", "budget", "--json"],
    );
    assert!(listed.ok, "{}", listed.said());
    let listed: Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(listed["data"].as_array().unwrap().len(), 2, "{listed:#}");
    let id = listed["data"][0]["id"].as_str().unwrap();
    let shown = support::cli(&config, &db, &["alerts", "show", id]);
    let shown: Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(shown["history"][0]["status"], 200, "{shown:#}");
    let before = standard.posted().len();
    assert!(support::cli(&config, &db, &["alerts", "redeliver", id]).ok);
    let posted = standard.until(before + 1, Duration::from_secs(10)).await;
    assert_eq!(posted[before].id, id);
    let table = support::cli(&config, &db, &["alerts", "events", "--rule", "budget"]);
    assert!(table.stdout.contains("alert.fired"), "{}", table.said());
    let again = admin(
        addr,
        &token,
        "GET",
        "/admin/v1/alerts/events?rule=budget",
        None,
    )
    .await;
    assert_eq!(again["data"].as_array().unwrap().len(), 2, "once each");

    // A dead channel's circuit opens: posted to the Slack-format receiver, unsigned.
    for _ in 0..6 {
        let body = r#"{"model":"dead-embedding","input":"x"}"#;
        embed(addr, &plain.secret, body).await;
    }
    let posted = slack.until(1, Duration::from_secs(10)).await;
    assert_eq!(
        posted[0].body,
        json!({"text": "tollgate alert circuits fired: channel dead's circuit opened (on 1 of the replicas)"})
    );
    assert_eq!(posted[0].signature, "", "no secret, no signature");

    // A rule added through the admin API is judged like the file's.
    let rule = json!({
        "name": "api-low", "when": "balance_below", "threshold": "1000", "account": "budgeted",
        "webhook_url": standard.url, "secret_env": SECRET_VAR,
    });
    let added = admin(
        addr,
        &token,
        "POST",
        "/admin/v1/alerts",
        Some(&rule.to_string()),
    )
    .await;
    assert_eq!(added["source"], "admin");
    until_admin(
        addr,
        &token,
        "/admin/v1/alerts/events?rule=api-low",
        Duration::from_secs(10),
        |v| v["data"].as_array().unwrap().len() == 1,
    )
    .await;
    admin(addr, &token, "DELETE", "/admin/v1/alerts/api-low", None).await;

    // Bad rules are refused by field, in the admin API's shape.
    for (rule, field) in [
        (
            json!({"name": "x", "when": "balance_below", "webhook_url": standard.url, "secret_env": SECRET_VAR}),
            "threshold",
        ),
        (
            json!({"name": "x", "when": "channel_circuit", "webhook_url": standard.url, "secret_env": "TOLLGATE_TEST_NO_SUCH_VAR"}),
            "secret_env",
        ),
        (
            json!({"name": "x", "when": "channel_circuit", "webhook_url": standard.url, "secret_env": SECRET_VAR, "action": "disable"}),
            "action",
        ),
    ] {
        let (status, text) = http(
            addr,
            "POST",
            "/admin/v1/alerts",
            Some(&token),
            Some(&rule.to_string()),
        )
        .await
        .unwrap();
        assert_eq!(status, 400, "{text}");
        let error: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(error["error"]["param"], field, "{text}");
    }
    let (status, text) = http(addr, "POST", "/admin/v1/alerts", Some(&token), Some(
        &json!({"name": "runaway", "when": "channel_circuit", "webhook_url": standard.url, "secret_env": SECRET_VAR}).to_string(),
    ))
    .await
    .unwrap();
    assert_eq!(status, 409, "a configuration rule's name: {text}");
}

/// `tollgate config check` and the start refuse a rule whose secret is missing or malformed.
#[test]
fn a_rule_that_could_never_be_signed_is_refused_at_start() {
    let scratch = Scratch::new("alerts-check");
    let config = config_with(
        &scratch,
        "http://127.0.0.1:9",
        "openai",
        &format!(
            r#"
[[alerts]]
name = "low"
when = "balance_below"
threshold = "5"
webhook_url = "http://127.0.0.1:9/hook"
secret_env = "{SECRET_VAR}"
"#
        ),
    );
    let check = |secret: Option<&str>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_tollgate"));
        command
            .args(["config", "check", "--config"])
            .arg(&config)
            .env_remove(SECRET_VAR);
        if let Some(secret) = secret {
            command.env(SECRET_VAR, secret);
        }
        let out = command.output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned()
                + &String::from_utf8_lossy(&out.stdout),
        )
    };
    let (ok, said) = check(None);
    assert!(!ok, "{said}");
    assert!(
        said.contains(&format!("the environment variable {SECRET_VAR} is not set")),
        "{said}"
    );
    let (ok, said) = check(Some("not-a-secret"));
    assert!(!ok);
    assert!(said.contains("whsec_"), "{said}");
    let (ok, said) = check(Some(SECRET));
    assert!(ok, "{said}");
}

/// A receiver that takes every request and never finishes its answer: the status line, then a
/// byte of a header every half second, for as long as the connection stays. Counts requests,
/// and the most connections it had open at once.
struct Trickler {
    url: String,
    requests: Arc<Mutex<usize>>,
    most_at_once: Arc<Mutex<usize>>,
}

impl Trickler {
    async fn start() -> Trickler {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(0));
        let open = Arc::new(Mutex::new(0usize));
        let most_at_once = Arc::new(Mutex::new(0));
        let (counted, most) = (requests.clone(), most_at_once.clone());
        tokio::spawn(async move {
            loop {
                let (mut stream, _) = listener.accept().await.unwrap();
                let (counted, open, most) = (counted.clone(), open.clone(), most.clone());
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    if stream.read(&mut buf).await.unwrap_or(0) == 0 {
                        return;
                    }
                    *counted.lock().unwrap() += 1;
                    let now_open = {
                        let mut open = open.lock().unwrap();
                        *open += 1;
                        *open
                    };
                    {
                        let mut most = most.lock().unwrap();
                        *most = (*most).max(now_open);
                    }
                    let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nX-Slow: ").await;
                    // Open until the gateway closes its side, seen at once by a read (a write
                    // would see it only at the next byte, up to a second later, and count an
                    // attempt that had ended as still open).
                    let (mut read, mut write) = stream.split();
                    loop {
                        tokio::select! {
                            _ = tokio::time::sleep(Duration::from_millis(500)) => {
                                if write.write_all(b"a").await.is_err() {
                                    break;
                                }
                            }
                            n = read.read(&mut buf) => {
                                if matches!(n, Ok(0) | Err(_)) {
                                    break;
                                }
                            }
                        }
                    }
                    *open.lock().unwrap() -= 1;
                });
            }
        });
        Trickler {
            url: format!("http://{addr}/hook"),
            requests,
            most_at_once,
        }
    }
}

/// Issue 42 items 6 and 7. The adversaries: whoever holds an admin token (or writes the
/// configuration) and points an alert at the gateway's own network — the gateway posted to
/// loopback and a read-only token read 4 KiB of the answer back from the delivery log — and the
/// slow receiver: attempts were awaited together and read with an idle timeout only, so one
/// byte every 5 s held an attempt past its lease and kept another customer's alert pending for
/// 51 s. Now a webhook URL passes the one address rule (a public host, or one the operator
/// lists in `[outbound] trusted_hosts`) at `config check`, in the admin API and at delivery;
/// the log keeps an attempt's status and timing, never the receiver's body; every attempt has
/// one deadline and runs on its own; and a receiver has at most one attempt in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_pass_the_address_rule_and_a_slow_receiver_holds_up_only_itself() {
    let scratch = Scratch::new("alerts-outbound");
    let db = format!("sqlite://{}", scratch.dir.join("t.db").display());
    let sim = tollgate_sim::start("127.0.0.1:0".parse().unwrap(), KnobSettings::default())
        .await
        .unwrap();

    // Not listed: refused by `config check`, naming the field and the way out.
    let metadata = Receiver::start(Vec::new()).await;
    let unlisted = config_with(
        &scratch,
        &sim.base_url(),
        "openai",
        &format!(
            "\n[outbound]\ntrusted_hosts = []\n\n[[alerts]]\nname = \"inside\"\nwhen = \"balance_below\"\nthreshold = \"5\"\nformat = \"slack\"\nwebhook_url = \"{}\"\n",
            metadata.url
        ),
    );
    let out = Command::new(env!("CARGO_BIN_EXE_tollgate"))
        .args(["config", "check", "--config"])
        .arg(&unlisted)
        .output()
        .unwrap();
    let said =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("webhook_url") && said.contains("trusted_hosts"),
        "{said}"
    );

    // A gateway that lists nothing: the admin API refuses the same URL by field, and a rule
    // written straight into the database (an insider) is refused at delivery: nothing reaches
    // the "metadata" server.
    let store = Store::connect(&db).await.unwrap();
    let (_, _) = store
        .create_account("poor", "1".parse().unwrap())
        .await
        .unwrap();
    let (_, token) = store.create_admin_token("ops", false).await.unwrap();
    let plain = config_with(
        &scratch,
        &sim.base_url(),
        "openai",
        "\n[outbound]\ntrusted_hosts = []\n\n[alerting]\nevaluate_seconds = 1\nretry_seconds = [1]\ntimeout_seconds = 2\n",
    );
    let gw = Gateway::start_with(&scratch, "plain", &plain, &db, "127.0.0.1:0", &[]).await;
    let rule = json!({"name": "inside", "when": "balance_below", "threshold": "5",
                      "account": "poor", "format": "slack", "webhook_url": metadata.url});
    let (status, text) = http(
        &gw.addr,
        "POST",
        "/admin/v1/alerts",
        Some(&token),
        Some(&rule.to_string()),
    )
    .await
    .unwrap();
    assert_eq!(status, 400, "{text}");
    let error: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(error["error"]["param"], "webhook_url", "{text}");
    store
        .put_alert_rule("inside", &rule, "intruder")
        .await
        .unwrap();
    let refused = until_admin(
        &gw.addr,
        &token,
        "/admin/v1/alerts/deliveries?rule=inside",
        Duration::from_secs(15),
        |v| v["data"][0]["attempts"].as_i64().unwrap_or(0) >= 1,
    )
    .await;
    let id = refused["data"][0]["id"].as_str().unwrap().to_owned();
    let shown = admin(
        &gw.addr,
        &token,
        "GET",
        &format!("/admin/v1/alerts/deliveries/{id}"),
        None,
    )
    .await;
    let attempt = &shown["history"][0];
    assert!(attempt["status"].is_null(), "{shown:#}");
    assert!(
        attempt["error"].as_str().unwrap().contains("address rule"),
        "{shown:#}"
    );
    assert!(metadata.posted().is_empty(), "nothing was posted inside");
    store.delete_alert_rule("inside", "ops").await.unwrap();
    drop(gw);

    // Listed: a receiver that trickles forever, and a good one. Each account's alert goes to
    // its own; the trickler's two rules share it.
    let slow = Trickler::start().await;
    let good = Receiver::start(Vec::new()).await;
    for name in ["slow-a", "slow-b", "quick"] {
        store
            .create_account(name, "1".parse().unwrap())
            .await
            .unwrap();
    }
    let config = config_with(
        &scratch,
        &sim.base_url(),
        "openai",
        &format!(
            r#"
[alerting]
evaluate_seconds = 1
retry_seconds = [1]
timeout_seconds = 2

[[alerts]]
name = "slow-a"
when = "balance_below"
threshold = "5"
account = "slow-a"
format = "slack"
webhook_url = "{slow}"

[[alerts]]
name = "slow-b"
when = "balance_below"
threshold = "5"
account = "slow-b"
format = "slack"
webhook_url = "{slow}"

[[alerts]]
name = "quick"
when = "balance_below"
threshold = "5"
account = "quick"
format = "slack"
webhook_url = "{good}"
"#,
            slow = slow.url,
            good = good.url
        ),
    );
    let gw = Gateway::start_with(&scratch, "slow", &config, &db, "127.0.0.1:0", &[]).await;
    let started = Instant::now();
    good.until(1, Duration::from_secs(6)).await;
    let quick_after = started.elapsed();
    // The trickler's attempts each end at the deadline, one at a time.
    let given_up = until_admin(
        &gw.addr,
        &token,
        "/admin/v1/alerts/deliveries?rule=slow-a",
        Duration::from_secs(20),
        |v| v["data"][0]["attempts"].as_i64().unwrap_or(0) >= 2,
    )
    .await;
    let id = given_up["data"][0]["id"].as_str().unwrap().to_owned();
    let shown = admin(
        &gw.addr,
        &token,
        "GET",
        &format!("/admin/v1/alerts/deliveries/{id}"),
        None,
    )
    .await;
    for attempt in shown["history"].as_array().unwrap() {
        assert!(
            attempt["answer"].is_null(),
            "no receiver's body is kept: {shown:#}"
        );
        assert!(
            attempt["duration_ms"].as_i64().unwrap() < 3_000,
            "an attempt ends at its deadline: {shown:#}"
        );
    }
    assert!(*slow.requests.lock().unwrap() >= 2);
    assert_eq!(
        *slow.most_at_once.lock().unwrap(),
        1,
        "one attempt at a time to one receiver"
    );
    eprintln!("the quick receiver's alert arrived after {quick_after:?} beside a trickler");
    drop(gw);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_customer_sets_a_balance_alert_in_the_portal() {
    use support::portal::{accept, call, get, invitation, sign_in};
    let scratch = Scratch::new("alerts-portal");
    let db = scratch.sqlite_url();
    let sim = tollgate_sim::start("127.0.0.1:0".parse().unwrap(), KnobSettings::default())
        .await
        .unwrap();
    let receiver = Receiver::start(Vec::new()).await;
    // The receiver listens on loopback: the operator opens it to customers, as it would a
    // staging receiver (`[portal] alert_hosts`, beside `[outbound] trusted_hosts`).
    let config = config_with(
        &scratch,
        &sim.base_url(),
        "openai",
        "\n[alerting]\nevaluate_seconds = 1\n\n[portal]\nalert_hosts = [\"127.0.0.1\"]\n",
    );
    for name in ["acme", "other"] {
        let made = support::cli(
            &config,
            &db,
            &["keys", "create", "--name", name, "--balance", "10"],
        );
        assert!(made.ok, "{}", made.said());
    }
    let ada_token = invitation(&config, &db, "acme", "ada@example.com");
    let bob_token = invitation(&config, &db, "other", "bob@example.com");
    let gateway = Gateway::start(&scratch, "gateway", &config, &db).await;
    let addr = gateway.addr.as_str();
    let password = "correct horse battery staple";
    let mut people = Vec::new();
    for (token, email) in [
        (&ada_token, "ada@example.com"),
        (&bob_token, "bob@example.com"),
    ] {
        assert_eq!(accept(addr, token, password).await.status, 200);
        people.push(
            sign_in(addr, json!({"email": email, "password": password}))
                .await
                .ok()
                .unwrap(),
        );
    }
    let (ada, bob) = (&people[0], &people[1]);
    let post = |body: Value| {
        let (cookie, csrf) = (ada.cookie.clone(), ada.csrf.clone());
        async move {
            call(
                addr,
                "POST",
                "/portal/v1/balance-alerts",
                Some(&cookie),
                Some(&csrf),
                Some(body),
            )
            .await
        }
    };

    // Refused by name: a private address, a name that is not public, a format without a URL,
    // a negative threshold; and a write without the CSRF token.
    for (body, param) in [
        (
            json!({"threshold": "5", "webhook_url": "http://10.0.0.1/hook"}),
            "webhook_url",
        ),
        (
            json!({"threshold": "5", "webhook_url": "http://metadata.internal/"}),
            "webhook_url",
        ),
        (
            json!({"threshold": "5", "webhook_url": "javascript:alert(1)"}),
            "webhook_url",
        ),
        (json!({"threshold": "5", "format": "slack"}), "format"),
        (json!({"threshold": "-1"}), "threshold"),
    ] {
        let refused = post(body.clone()).await;
        assert_eq!(refused.status, 400, "{body}: {}", refused.body);
        assert_eq!(refused.json()["error"]["param"], param, "{}", refused.body);
    }
    let no_csrf = call(
        addr,
        "POST",
        "/portal/v1/balance-alerts",
        Some(&ada.cookie),
        None,
        Some(json!({"threshold": "5"})),
    )
    .await;
    assert_eq!(no_csrf.status, 403, "{}", no_csrf.body);

    // A signed alert below 5, and a banner-only one below 20 (the balance is 10).
    let made = post(json!({"threshold": "5", "webhook_url": receiver.url})).await;
    assert_eq!(made.status, 201, "{}", made.body);
    let made = made.json();
    let (id, secret) = (
        made["id"].as_str().unwrap().to_owned(),
        made["signing_secret"].as_str().unwrap().to_owned(),
    );
    assert!(
        id.starts_with("bal_") && secret.starts_with("whsec_"),
        "{made}"
    );
    let banner = post(json!({"threshold": "20"})).await;
    assert_eq!(banner.status, 201, "{}", banner.body);
    assert!(
        banner.json().get("signing_secret").is_none(),
        "{}",
        banner.body
    );
    let listed = get(addr, ada, "/portal/v1/balance-alerts").await.json();
    let below: Vec<bool> = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["below"].as_bool().unwrap())
        .collect();
    assert_eq!(below, [false, true], "{listed:#}");
    assert!(
        !listed.to_string().contains(&secret),
        "the secret is shown once: {listed:#}"
    );

    // Another account's person sees none of them and cannot delete one.
    let theirs = get(addr, bob, "/portal/v1/balance-alerts").await.json();
    assert_eq!(theirs["data"], json!([]), "{theirs:#}");
    let path = format!("/portal/v1/balance-alerts/{id}");
    let not_bobs = call(
        addr,
        "DELETE",
        &path,
        Some(&bob.cookie),
        Some(&bob.csrf),
        None,
    )
    .await;
    assert_eq!(not_bobs.status, 404, "{}", not_bobs.body);

    // The balance falls under 5: one event, signed with the alert's own secret.
    assert!(support::cli(&config, &db, &["keys", "credit", "acme", "-6"]).ok);
    let posted = receiver.until(1, Duration::from_secs(20)).await;
    verify_with(&secret, &posted[0]);
    assert_eq!(posted[0].body["type"], "alert.fired");
    assert_eq!(posted[0].body["data"]["rule"], id.as_str());
    assert_eq!(posted[0].body["data"]["facts"]["balance"], "4");
    // The other account, as low, is no business of this alert.
    assert!(support::cli(&config, &db, &["keys", "credit", "other", "-9"]).ok);
    // Back above: resolved, once.
    assert!(support::cli(&config, &db, &["keys", "credit", "acme", "6"]).ok);
    let posted = receiver.until(2, Duration::from_secs(20)).await;
    verify_with(&secret, &posted[1]);
    assert_eq!(posted[1].body["type"], "alert.resolved");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(receiver.posted().len(), 2, "{:#?}", receiver.posted());

    // Deleted, it posts no more; at most five an account.
    let deleted = call(
        addr,
        "DELETE",
        &path,
        Some(&ada.cookie),
        Some(&ada.csrf),
        None,
    )
    .await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    assert!(support::cli(&config, &db, &["keys", "credit", "acme", "-8"]).ok);
    for _ in 0..4 {
        assert_eq!(post(json!({"threshold": "1"})).await.status, 201);
    }
    let sixth = post(json!({"threshold": "1"})).await;
    assert_eq!(sixth.status, 400, "{}", sixth.body);
    assert!(
        sixth.body.contains("too_many_balance_alerts"),
        "{}",
        sixth.body
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(receiver.posted().len(), 2, "a deleted alert posts nothing");
    drop(gateway);
}
