//! Access policies end to end (`docs/decisions.md`, "Access policies"): allowed models (names,
//! globs, aliases resolved first), allowed endpoints, expiry and client networks, on an account
//! and on a key, refused in each endpoint family's own error shape before any hold or upstream
//! call, and admitted at the boundary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::TestGateway;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use std::time::Duration;
use tollgate_store::{AccessPolicy, PolicyHolder};

const CONFIG: &str = r#"
[[channels]]
name = "openai"
format = "openai-embeddings"
base_url = "sim"

[[channels]]
name = "t2a"
format = "t2a"
base_url = "sim"
first_byte_timeout_ms = 3000
idle_timeout_ms = 3000

[[channels]]
name = "ark"
format = "ark"
base_url = "sim"
first_byte_timeout_ms = 3000
idle_timeout_ms = 3000

[[channels]]
name = "genai"
format = "genai"
base_url = "sim"
first_byte_timeout_ms = 5000
idle_timeout_ms = 5000

[tasks]
workers = false

[models."text-embedding-3-small"]
kind = "embeddings"
channels = ["openai"]
price = { meter = "tokens", per_million_tokens = "0.02" }

[models."text-embedding-3-large"]
kind = "embeddings"
channels = ["openai"]
price = { meter = "tokens", per_million_tokens = "0.13" }

[models."speech-2.8-hd"]
kind = "speech"
channels = ["t2a"]
price = { meter = "characters", per_million_characters = "100" }

[models."speech-2.8-turbo"]
kind = "speech"
channels = ["t2a"]
price = { meter = "characters", per_million_characters = "60" }

[models."clipgen-cn-2.0-260128"]
kind = "clip-video"
channels = ["ark"]
price = { meter = "video_tokens", per_million_tokens = "2.4" }

[models."gen-2.5-flash"]
kind = "native-text"
channels = ["genai"]
price = { meter = "text_tokens", input_per_million_tokens = "0.30", output_per_million_tokens = "2.50" }

[aliases]
"tts-1" = "speech-2.8-turbo"
"#;

/// One request per family: (label, method, path, credential header, body).
fn family_requests() -> Vec<(&'static str, &'static str, String, Value)> {
    vec![
        (
            "openai embeddings",
            "POST",
            "/v1/embeddings".into(),
            json!({"model": "text-embedding-3-small", "input": "hello"}),
        ),
        (
            "openai speech",
            "POST",
            "/v1/audio/speech".into(),
            json!({"model": "speech-2.8-hd", "input": "Hello there.", "voice": "alloy"}),
        ),
        (
            "t2a",
            "POST",
            "/v1/t2a_v2".into(),
            json!({"model": "speech-2.8-hd", "text": "Hello there.",
                   "voice_setting": {"voice_id": "English_Graceful_Lady"}}),
        ),
        (
            "ark",
            "POST",
            "/api/v3/contents/generations/tasks".into(),
            json!({"model": "clipgen-cn-2.0-260128",
                   "content": [{"type": "text", "text": "A lighthouse"}]}),
        ),
        (
            "google",
            "POST",
            "/v1beta/models/gen-2.5-flash:generateContent".into(),
            json!({"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]}),
        ),
    ]
}

async fn send(
    gw: &TestGateway,
    key: &str,
    method: &str,
    path: &str,
    body: &Value,
) -> common::Reply {
    let auth = format!("Bearer {key}");
    let google = path.starts_with("/v1beta");
    let headers: Vec<(&str, &str)> = if google {
        vec![
            ("x-goog-api-key", key),
            ("content-type", "application/json"),
        ]
    } else {
        vec![
            ("authorization", &auth),
            ("content-type", "application/json"),
        ]
    };
    gw.request(method, path, &headers, serde_json::to_vec(body).unwrap())
        .await
}

/// A new key on `account` whose own policy is `policy`: its secret.
async fn key_with(gw: &TestGateway, account: &str, policy: AccessPolicy) -> String {
    gw.key_with(account, policy).await.secret
}

fn models(list: &[&str]) -> AccessPolicy {
    AccessPolicy {
        models: Some(list.iter().map(|s| (*s).to_owned()).collect()),
        ..AccessPolicy::default()
    }
}

/// `POST /v1/embeddings` with `key`, optionally as relayed by a proxy for `forwarded`.
async fn post(gw: &TestGateway, key: &str, forwarded: Option<&str>) -> common::Reply {
    let body = json!({"model": "text-embedding-3-small", "input": "hi"});
    let auth = format!("Bearer {key}");
    let mut headers = vec![
        ("authorization", auth.as_str()),
        ("content-type", "application/json"),
    ];
    if let Some(f) = forwarded {
        headers.push(("x-forwarded-for", f));
    }
    gw.request(
        "POST",
        "/v1/embeddings",
        &headers,
        serde_json::to_vec(&body).unwrap(),
    )
    .await
}

/// The family's refusal: status and the machine-readable part of its body.
fn assert_refused(label: &str, reply: &common::Reply, code: &str) {
    let body = reply.json();
    match label {
        "t2a" => {
            assert_eq!(reply.status, 200, "{label}: t2a errors are HTTP 200");
            assert_eq!(body["base_resp"]["status_code"], 1004, "{label}: {body}");
        }
        "ark" => {
            assert_eq!(reply.status, 403, "{label}: {body}");
            assert_eq!(body["error"]["type"], "Forbidden", "{label}: {body}");
            assert_eq!(body["error"]["code"], "AccessDenied", "{label}: {body}");
        }
        "google" => {
            assert_eq!(reply.status, 403, "{label}: {body}");
            assert_eq!(
                body["error"]["status"], "PERMISSION_DENIED",
                "{label}: {body}"
            );
        }
        _ => {
            assert_eq!(reply.status, 403, "{label}: {body}");
            assert_eq!(body["error"]["code"], code, "{label}: {body}");
        }
    }
}

fn upstream_calls(gw: &TestGateway) -> u64 {
    [
        "POST /v1/embeddings",
        "POST /v1/t2a_v2",
        "POST /api/v3/contents/generations/tasks",
        "POST /v1beta/models/{model}:generateContent",
    ]
    .iter()
    .map(|r| gw.calls(r))
    .sum()
}

#[tokio::test]
async fn a_model_outside_the_policy_is_refused_in_every_family_before_the_upstream() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, _) = gw.account("10").await;
    let requests = family_requests();
    // Each family's model admitted alone: the others are refused.
    let allowed = [
        "text-embedding-*",
        "speech-2.8-hd",
        "speech-2.8-hd",
        "clipgen-*",
        "gen-2.5-fl?sh",
    ];
    for (i, (label, method, path, body)) in requests.iter().enumerate() {
        let key = key_with(&gw, &account, models(&[allowed[i]])).await;
        let reply = send(&gw, &key, method, path, body).await;
        assert!(
            reply.status == 200,
            "{label} admitted by {:?}: {} {}",
            allowed[i],
            reply.status,
            String::from_utf8_lossy(&reply.body)
        );
        if *label == "t2a" {
            assert_eq!(reply.json()["base_resp"]["status_code"], 0);
        }
        // What the admitted request leaves (a task keeps its hold until it ends).
        gw.settled(&account).await;
        let before = upstream_calls(&gw);
        let balance = gw.balance(&account).await;
        let holds = gw.open_holds(&account).await;
        for (other, method, path, body) in &requests {
            // Both speech endpoints share the admitted model.
            if allowed
                .iter()
                .zip(&requests)
                .any(|(a, r)| r.0 == *other && *a == allowed[i])
            {
                continue;
            }
            let reply = send(&gw, &key, method, path, body).await;
            assert_refused(other, &reply, "model_not_allowed");
            if !matches!(*other, "t2a" | "ark" | "google") {
                assert_eq!(reply.json()["error"]["param"], "model");
            }
        }
        assert_eq!(
            upstream_calls(&gw),
            before,
            "a refused request reached the upstream"
        );
        gw.settled(&account).await;
        assert_eq!(
            gw.balance(&account).await,
            balance,
            "a refused request was charged"
        );
        assert_eq!(gw.open_holds(&account).await, holds);
    }
    gw.stop().await;
}

#[tokio::test]
async fn aliases_resolve_first_and_a_key_narrows_its_account() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, account_key) = gw.account("10").await;
    gw.store
        .set_policy(
            &PolicyHolder::Account(account.clone()),
            &models(&["text-embedding-*", "speech-2.8-turbo"]),
        )
        .await
        .unwrap();
    let speech = |model: &str| json!({"model": model, "input": "Hello.", "voice": "alloy"});
    // The alias tts-1 is speech-2.8-turbo: admitted; speech-2.8-hd is not.
    let reply = gw
        .post_json("/v1/audio/speech", &account_key, &speech("tts-1"))
        .await;
    assert_eq!(reply.status, 200);
    let reply = gw
        .post_json("/v1/audio/speech", &account_key, &speech("speech-2.8-hd"))
        .await;
    assert_eq!(reply.status, 403);
    assert_eq!(reply.json()["error"]["code"], "model_not_allowed");
    assert!(
        reply.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("speech-2.8-hd")
    );
    // A key allowing everything cannot widen its account's policy.
    let wide = key_with(&gw, &account, models(&["*"])).await;
    let reply = gw
        .post_json("/v1/audio/speech", &wide, &speech("speech-2.8-hd"))
        .await;
    assert_eq!(reply.status, 403);
    // A narrower key narrows.
    let narrow = key_with(&gw, &account, models(&["text-embedding-3-small"])).await;
    let embed = |model: &str| json!({"model": model, "input": "hi"});
    assert_eq!(
        gw.post_json("/v1/embeddings", &narrow, &embed("text-embedding-3-small"))
            .await
            .status,
        200
    );
    assert_eq!(
        gw.post_json("/v1/embeddings", &narrow, &embed("text-embedding-3-large"))
            .await
            .status,
        403
    );
    // Listings show only what the key may use, aliases included.
    let listed: Vec<String> = gw.get("/v1/models", &narrow).await.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(listed, vec!["text-embedding-3-small".to_owned()]);
    let listed: Vec<String> = gw.get("/v1/models", &account_key).await.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        listed.contains(&"tts-1".to_owned()) && listed.contains(&"speech-2.8-turbo".to_owned())
    );
    assert!(
        !listed
            .iter()
            .any(|m| m == "speech-2.8-hd" || m == "gen-2.5-flash")
    );
    assert_eq!(
        gw.get("/v1/models/speech-2.8-hd", &account_key)
            .await
            .status,
        403
    );
    gw.stop().await;
}

#[tokio::test]
async fn endpoints_outside_the_policy_are_refused_and_listings_stay_open() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, _) = gw.account("10").await;
    let key = key_with(
        &gw,
        &account,
        AccessPolicy {
            endpoints: Some(vec!["embeddings".into(), "native".into()]),
            ..AccessPolicy::default()
        },
    )
    .await;
    for (label, method, path, body) in family_requests() {
        let reply = send(&gw, &key, method, &path, &body).await;
        if matches!(label, "openai embeddings" | "google") {
            assert_eq!(reply.status, 200, "{label}");
        } else {
            assert_refused(label, &reply, "endpoint_not_allowed");
        }
    }
    // Task reads belong to their endpoint too.
    let reply = gw
        .get("/api/v3/contents/generations/tasks?page_size=1", &key)
        .await;
    assert_eq!(reply.status, 403);
    assert_eq!(gw.get("/v1/models", &key).await.status, 200);
    let metrics = gw.state.metrics.render();
    assert!(
        metrics.contains("tollgate_policy_refusals_total{rule=\"endpoint\"} 4"),
        "{metrics}"
    );
    // Issue 22 item 11: a revoked key no longer exists as a credential — 401 in each family's
    // shape, what clients read as "authenticate again" — while a disabled one stays 403; its
    // account's other keys are unaffected.
    let revoked = gw.store.create_key(&account, "revoked").await.unwrap();
    gw.store.revoke_key(&revoked.id).await.unwrap();
    assert!(gw.store.enable_key(&revoked.id).await.is_err());
    let (paused, paused_key) = gw.account("1").await;
    gw.store.set_disabled(&paused, true).await.unwrap();
    for (family, method, path, body) in family_requests() {
        let reply = send(&gw, &revoked.secret, method, &path, &body).await;
        let error = reply.json();
        match family {
            "openai embeddings" | "openai speech" => {
                assert_eq!(reply.status, 401, "{family}: {error}");
                assert_eq!(error["error"]["code"], "invalid_api_key", "{family}");
            }
            // The vendor's own shape: HTTP 200 and base_resp 1004 (authentication).
            "t2a" => assert_eq!(error["base_resp"]["status_code"], 1004, "{family}: {error}"),
            "ark" => {
                assert_eq!(reply.status, 401, "{family}: {error}");
                assert_eq!(error["error"]["code"], "AuthenticationError", "{family}");
            }
            _ => {
                // Google's answer to a key that is not valid: 400 with API_KEY_INVALID.
                assert_eq!(reply.status, 400, "{family}: {error}");
                assert_eq!(error["error"]["details"][0]["reason"], "API_KEY_INVALID");
            }
        }
        let reply = send(&gw, &paused_key, method, &path, &body).await;
        if family != "t2a" {
            assert_eq!(reply.status, 403, "{family} disabled: {}", reply.json());
        }
    }
    assert_eq!(post(&gw, &key, None).await.status, 200);
    gw.stop().await;
}

#[tokio::test]
async fn an_expired_key_is_refused_but_a_stream_it_started_finishes() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, _) = gw.account("10").await;
    let now = tollgate_journal::clock::now_millis();
    let expired = key_with(
        &gw,
        &account,
        AccessPolicy {
            expires_at: Some(now - 1),
            ..AccessPolicy::default()
        },
    )
    .await;
    let embed = json!({"model": "text-embedding-3-small", "input": "hi"});
    let reply = gw.post_json("/v1/embeddings", &expired, &embed).await;
    assert_eq!(reply.status, 401);
    assert_eq!(reply.json()["error"]["code"], "api_key_expired");
    let reply = send(
        &gw,
        &expired,
        "POST",
        "/api/v3/contents/generations/tasks",
        &family_requests()[3].3,
    )
    .await;
    assert_eq!(reply.status, 401);
    assert_eq!(reply.json()["error"]["type"], "Unauthorized");

    // Expiring in 1.5 s: a stream started before it runs to its end after it.
    let soon = key_with(
        &gw,
        &account,
        AccessPolicy {
            expires_at: Some(now + 1_500),
            ..AccessPolicy::default()
        },
    )
    .await;
    let stream = json!({"model": "speech-2.8-hd", "text": "A stream that outlives its key. ".repeat(20),
        "stream": true, "voice_setting": {"voice_id": "English_Graceful_Lady"}});
    let response = gw.open("/v1/t2a_v2", &soon, &stream).await;
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    let first = body.frame().await.unwrap().unwrap();
    assert!(first.is_data());
    let wait = (now + 1_600 - tollgate_journal::clock::now_millis()).max(0);
    tokio::time::sleep(Duration::from_millis(u64::try_from(wait).unwrap())).await;
    let rest = body.collect().await.unwrap().to_bytes();
    let text = String::from_utf8_lossy(&rest);
    assert!(
        text.contains("\"status\":2"),
        "the stream ended early: …{}",
        &text[text.len().saturating_sub(300)..]
    );
    let reply = gw.post_json("/v1/embeddings", &soon, &embed).await;
    assert_eq!(reply.status, 401);
    gw.settled(&account).await;
    assert_eq!(gw.open_holds(&account).await, 0);
    gw.stop().await;
}

#[tokio::test]
async fn networks_are_the_peer_unless_a_trusted_proxy_names_the_client() {
    let networks = AccessPolicy {
        networks: Some(vec![
            "10.0.0.0/8".parse().unwrap(),
            "2001:db8::/32".parse().unwrap(),
        ]),
        ..AccessPolicy::default()
    };
    // No trusted proxy: the loopback peer is the client, whatever the header says.
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, _) = gw.account("10").await;
    let key = key_with(&gw, &account, networks.clone()).await;
    let reply = post(&gw, &key, None).await;
    assert_eq!(reply.status, 403);
    assert_eq!(reply.json()["error"]["code"], "network_not_allowed");
    assert!(
        reply.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("127.0.0.1")
    );
    assert_eq!(post(&gw, &key, Some("10.1.2.3")).await.status, 403);
    gw.stop().await;

    // Loopback trusted: X-Forwarded-For names the client, read from the right.
    let config =
        format!("{CONFIG}\n[server]\ndrain_seconds = 0\ntrusted_proxies = [\"127.0.0.0/8\"]\n");
    let gw = TestGateway::with_config(&config).await;
    let (account, _) = gw.account("10").await;
    let key = key_with(&gw, &account, networks).await;
    assert_eq!(post(&gw, &key, Some("10.1.2.3")).await.status, 200);
    assert_eq!(
        post(&gw, &key, Some("2001:db8::7, 127.0.0.5")).await.status,
        200
    );
    // A client that forges the leftmost entry is still itself.
    let reply = post(&gw, &key, Some("10.1.2.3, 198.51.100.9")).await;
    assert_eq!(reply.status, 403);
    assert!(
        reply.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("198.51.100.9")
    );
    assert_eq!(post(&gw, &key, None).await.status, 403);
    gw.stop().await;
}

#[tokio::test]
async fn price_groups_scale_every_charge_and_the_ledger_says_so() {
    let gw = TestGateway::with_config(CONFIG).await;
    // Names of this run's own: groups are shared by everything on a shared database.
    let (gold_group, premium_group) = (
        format!("gold-{}", common::unique()),
        format!("premium-{}", common::unique()),
    );
    gw.store
        .set_price_group(&gold_group, "0.5".parse().unwrap())
        .await
        .unwrap();
    gw.store
        .set_price_group(&premium_group, "1.5".parse().unwrap())
        .await
        .unwrap();
    let in_group = |group: &str| AccessPolicy {
        group: Some(group.to_owned()),
        ..AccessPolicy::default()
    };
    // List prices, an account in gold, and in it a key of its own in premium.
    let (list, list_key) = gw.account("10").await;
    let (gold, gold_key) = gw.account("10").await;
    gw.store
        .set_policy(&PolicyHolder::Account(gold.clone()), &in_group(&gold_group))
        .await
        .unwrap();
    let premium_key = key_with(&gw, &gold, in_group(&premium_group)).await;
    let embed =
        json!({"model": "text-embedding-3-large", "input": "The same words, three prices."});
    for key in [&list_key, &gold_key, &premium_key] {
        assert_eq!(
            gw.post_json("/v1/embeddings", key, &embed).await.status,
            200
        );
    }
    gw.settled(&list).await;
    gw.settled(&gold).await;
    let charges =
        |rows: Vec<tollgate_store::LedgerEntry>| -> Vec<(i64, Option<String>, Option<String>)> {
            rows.into_iter()
                .filter(|r| r.kind == tollgate_store::LedgerKind::Charge)
                .map(|r| (-r.amount.nanos(), r.price_group, r.price_multiplier))
                .collect()
        };
    let listed = charges(gw.store.ledger(&list).await.unwrap());
    assert_eq!(listed.len(), 1);
    let (list_price, group, multiplier) = listed[0].clone();
    assert_eq!((group, multiplier), (None, None));
    assert!(list_price > 0 && list_price % 2 == 0, "{list_price}");
    let mut grouped = charges(gw.store.ledger(&gold).await.unwrap());
    grouped.sort();
    assert_eq!(
        grouped,
        vec![
            (list_price / 2, Some(gold_group.clone()), Some("0.5".into())),
            (
                list_price * 3 / 2,
                Some(premium_group.clone()),
                Some("1.5".into())
            ),
        ]
    );

    // A model of its own in the group: its multiplier, recorded as the one used; the group's
    // other models keep the group's. (A new key: the cached lookups keep the group they read
    // for up to the lookup's freshness.)
    gw.store
        .set_model_multiplier(
            &gold_group,
            "text-embedding-3-large",
            Some("0.25".parse().unwrap()),
        )
        .await
        .unwrap();
    let fresh_gold = key_with(&gw, &gold, AccessPolicy::default()).await;
    assert_eq!(
        gw.post_json("/v1/embeddings", &fresh_gold, &embed)
            .await
            .status,
        200
    );
    gw.settled(&gold).await;
    let rows = charges(gw.store.ledger(&gold).await.unwrap());
    assert!(
        // Rounded up to the nano-unit once, like every charge.
        rows.contains(&(
            (list_price + 3) / 4,
            Some(gold_group.clone()),
            Some("0.25".into())
        )),
        "{rows:?}"
    );

    // A video task holds, and will settle, at its group's prices, snapshot at submit.
    let task = &family_requests()[3];
    assert_eq!(
        send(&gw, &list_key, task.1, &task.2, &task.3).await.status,
        200
    );
    assert_eq!(
        send(&gw, &gold_key, task.1, &task.2, &task.3).await.status,
        200
    );
    let held = |id: String| {
        let store = gw.store.clone();
        async move { store.find_account(&id).await.unwrap().held.nanos() }
    };
    let (list_held, gold_held) = (held(list.clone()).await, held(gold.clone()).await);
    assert!(list_held > 0);
    assert_eq!(gold_held * 2, list_held);
    gw.stop().await;
}
