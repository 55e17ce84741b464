//! Rate limits and spend caps end to end (`docs/decisions.md`, "Rate limits and spend caps"):
//! requests per minute, per-minute units of a meter, daily budgets and concurrency, on a key and
//! on its account; refused at the boundary in each family's own shape with `Retry-After` and
//! the `x-ratelimit-*` headers, before any hold or upstream call, and admitted up to it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{TestGateway, fresh_minute};
use serde_json::{Value, json};
use std::time::Duration;
use tollgate_sim::KnobSettings;
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
first_byte_timeout_ms = 5000
idle_timeout_ms = 5000

[[channels]]
name = "ark"
format = "ark"
base_url = "sim"

[[channels]]
name = "genai"
format = "genai"
base_url = "sim"

[tasks]
workers = false

[models."text-embedding-3-small"]
kind = "embeddings"
channels = ["openai"]
price = { meter = "tokens", per_million_tokens = "0.02" }

[models."speech-2.8-hd"]
kind = "speech"
channels = ["t2a"]
price = { meter = "characters", per_million_characters = "100" }

[models."clipgen-cn-2.0-260128"]
kind = "clip-video"
channels = ["ark"]
price = { meter = "video_tokens", per_million_tokens = "2.4" }

[[channels]]
name = "video"
format = "generic-video"
base_url = "sim"

[[channels]]
name = "stt"
format = "stt"
base_url = "sim"
first_byte_timeout_ms = 5000
idle_timeout_ms = 5000

[models."imagine-video"]
kind = "generic-video"
channels = ["video"]
price = { meter = "video_seconds", per_second = "0.05" }

[models."asr-1.0"]
kind = "transcription"
channels = ["stt"]
price = { meter = "audio_seconds", per_second = "0.0001" }

[models."gen-2.5-flash"]
kind = "native-text"
channels = ["genai"]
price = { meter = "text_tokens", input_per_million_tokens = "0.30", output_per_million_tokens = "2.50" }
"#;

async fn key_with(gw: &TestGateway, account: &str, policy: AccessPolicy) -> (String, String) {
    let key = gw.key_with(account, policy).await;
    (key.id, key.secret)
}

fn embed() -> Value {
    json!({"model": "text-embedding-3-small", "input": "The quick brown fox jumps."})
}

fn header<'a>(reply: &'a common::Reply, name: &str) -> &'a str {
    reply
        .headers
        .get(name)
        .unwrap_or_else(|| panic!("no {name} header: {:?}", reply.headers))
        .to_str()
        .unwrap()
}

/// One request per family, each family's credential header.
async fn send(gw: &TestGateway, key: &str, family: &str) -> common::Reply {
    let auth = format!("Bearer {key}");
    let (path, body, headers): (&str, Value, Vec<(&str, &str)>) = match family {
        "openai" => ("/v1/embeddings", embed(), vec![("authorization", &auth)]),
        "t2a" => (
            "/v1/t2a_v2",
            json!({"model": "speech-2.8-hd", "text": "Hello.",
                   "voice_setting": {"voice_id": "English_Graceful_Lady"}}),
            vec![("authorization", &auth)],
        ),
        "ark" => (
            "/api/v3/contents/generations/tasks",
            json!({"model": "clipgen-cn-2.0-260128",
                   "content": [{"type": "text", "text": "A lighthouse"}]}),
            vec![("authorization", &auth)],
        ),
        _ => (
            "/v1beta/models/gen-2.5-flash:generateContent",
            json!({"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]}),
            vec![("x-goog-api-key", key)],
        ),
    };
    let mut headers = headers;
    headers.push(("content-type", "application/json"));
    gw.request("POST", path, &headers, serde_json::to_vec(&body).unwrap())
        .await
}

#[tokio::test]
async fn requests_per_minute_are_admitted_to_the_limit_then_refused_in_each_familys_shape() {
    fresh_minute(20).await;
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, _) = gw.account("10").await;
    for family in ["openai", "t2a", "ark", "google"] {
        let (_, key) = key_with(
            &gw,
            &account,
            AccessPolicy {
                rpm: Some(3),
                ..AccessPolicy::default()
            },
        )
        .await;
        for n in 0..3u64 {
            let reply = send(&gw, &key, family).await;
            assert_eq!(
                reply.status,
                200,
                "{family} #{n}: {}",
                String::from_utf8_lossy(&reply.body)
            );
            assert_eq!(header(&reply, "x-ratelimit-limit-requests"), "3");
            assert_eq!(
                header(&reply, "x-ratelimit-remaining-requests"),
                (2 - n).to_string(),
                "{family} #{n}"
            );
            assert!(header(&reply, "x-ratelimit-reset-requests").ends_with('s'));
        }
        gw.settled(&account).await;
        let balance = gw.balance(&account).await;
        let calls: u64 = [
            "POST /v1/embeddings",
            "POST /v1/t2a_v2",
            "POST /api/v3/contents/generations/tasks",
            "POST /v1beta/models/{model}:generateContent",
        ]
        .iter()
        .map(|r| gw.calls(r))
        .sum();
        let reply = send(&gw, &key, family).await;
        let body = reply.json();
        match family {
            "t2a" => {
                assert_eq!(reply.status, 200, "t2a errors are HTTP 200");
                assert_eq!(body["base_resp"]["status_code"], 1002, "{body}");
            }
            "ark" => {
                assert_eq!(reply.status, 429, "{body}");
                assert_eq!(body["error"]["code"], "RateLimitExceeded", "{body}");
            }
            "google" => {
                assert_eq!(reply.status, 429, "{body}");
                assert_eq!(body["error"]["status"], "RESOURCE_EXHAUSTED", "{body}");
            }
            _ => {
                assert_eq!(reply.status, 429, "{body}");
                assert_eq!(body["error"]["code"], "rate_limit_exceeded", "{body}");
                assert_eq!(body["error"]["type"], "requests", "{body}");
            }
        }
        let retry: u64 = header(&reply, "retry-after").parse().unwrap();
        assert!((1..=60).contains(&retry), "{retry}");
        assert_eq!(header(&reply, "x-ratelimit-remaining-requests"), "0");
        let calls_after: u64 = [
            "POST /v1/embeddings",
            "POST /v1/t2a_v2",
            "POST /api/v3/contents/generations/tasks",
            "POST /v1beta/models/{model}:generateContent",
        ]
        .iter()
        .map(|r| gw.calls(r))
        .sum();
        assert_eq!(
            calls_after, calls,
            "{family}: a refused request reached the upstream"
        );
        gw.settled(&account).await;
        assert_eq!(
            gw.balance(&account).await,
            balance,
            "{family}: a refusal was charged"
        );
    }
    gw.stop().await;
}

#[tokio::test]
async fn an_accounts_rate_is_shared_by_its_keys_and_a_key_without_limits_sends_no_headers() {
    fresh_minute(20).await;
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, first) = gw.account("10").await;
    // Without limits: no headers.
    let reply = gw.post_json("/v1/embeddings", &first, &embed()).await;
    assert_eq!(reply.status, 200);
    assert!(reply.headers.get("x-ratelimit-limit-requests").is_none());
    gw.store
        .set_policy(
            &PolicyHolder::Account(account.clone()),
            &AccessPolicy {
                rpm: Some(4),
                ..AccessPolicy::default()
            },
        )
        .await
        .unwrap();
    // Two new keys (no cached lookups) share the account's four.
    let (_, a) = key_with(&gw, &account, AccessPolicy::default()).await;
    let (_, b) = key_with(&gw, &account, AccessPolicy::default()).await;
    let mut statuses = Vec::new();
    for key in [&a, &b, &a, &b, &a, &b] {
        statuses.push(gw.post_json("/v1/embeddings", key, &embed()).await.status);
    }
    assert_eq!(statuses, vec![200, 200, 200, 200, 429, 429]);
    gw.stop().await;
}

#[tokio::test]
async fn per_minute_tokens_count_the_metered_units_and_send_token_headers() {
    fresh_minute(20).await;
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, _) = gw.account("10").await;
    // The input is 6 tokens (cl100k_base): three fit in 20, the fourth does not.
    let (_, key) = key_with(
        &gw,
        &account,
        AccessPolicy {
            per_minute: Some([("tokens".to_owned(), 20)].into()),
            ..AccessPolicy::default()
        },
    )
    .await;
    for n in 0..3u64 {
        let reply = gw.post_json("/v1/embeddings", &key, &embed()).await;
        assert_eq!(reply.status, 200, "#{n}");
        assert_eq!(header(&reply, "x-ratelimit-limit-tokens"), "20");
        assert!(reply.headers.get("x-ratelimit-limit-requests").is_none());
    }
    let reply = gw.post_json("/v1/embeddings", &key, &embed()).await;
    assert_eq!(reply.status, 429);
    assert_eq!(reply.json()["error"]["code"], "rate_limit_exceeded");
    assert!(
        reply.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("20 tokens per minute")
    );
    assert_eq!(header(&reply, "x-ratelimit-remaining-tokens"), "0");
    gw.stop().await;
}

#[tokio::test]
async fn a_daily_budget_is_a_quota_not_a_rate_and_the_balance_still_counts() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, _) = gw.account("10").await;
    // 6 tokens at 0.02 per million: 120 nano-units a request; 300 allow two.
    let (key_id, key) = key_with(
        &gw,
        &account,
        AccessPolicy {
            daily_budget: Some("0.0000003".parse().unwrap()),
            ..AccessPolicy::default()
        },
    )
    .await;
    for _ in 0..2 {
        assert_eq!(
            gw.post_json("/v1/embeddings", &key, &embed()).await.status,
            200
        );
    }
    let reply = gw.post_json("/v1/embeddings", &key, &embed()).await;
    assert_eq!(reply.status, 429);
    let body = reply.json();
    assert_eq!(body["error"]["code"], "insufficient_quota", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("daily budget")
    );
    assert_eq!(header(&reply, "x-should-retry"), "false");
    let retry: u64 = header(&reply, "retry-after").parse().unwrap();
    assert!(retry <= 86_400);
    // t2a says so with 1008, as for a short balance.
    let reply = send(&gw, &key, "t2a").await;
    assert_eq!(reply.json()["base_resp"]["status_code"], 1008);
    // The operator sees it: refusals by limit, what is left of the budget, what was charged.
    gw.settled(&account).await;
    let metrics = gw.get("/metrics", "").await;
    let text = String::from_utf8_lossy(&metrics.body);
    assert!(
        text.contains("tollgate_limit_refusals_total{limit=\"spend_day\"} 2"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "tollgate_budget_remaining_nanos{{holder=\"{key_id}\",period=\"day\"}} 60"
        )),
        "{text}"
    );
    assert!(
        text.contains("tollgate_charged_nanos_total{group=\"none\"} 240"),
        "{text}"
    );
    gw.stop().await;
}

#[tokio::test]
async fn concurrency_counts_a_stream_until_its_end_and_a_client_that_leaves_frees_its_slot() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, _) = gw.account("10").await;
    let (_, key) = key_with(
        &gw,
        &account,
        AccessPolicy {
            concurrency: Some(1),
            ..AccessPolicy::default()
        },
    )
    .await;
    // A slow stream: frames every 200 ms.
    gw.set_knobs(KnobSettings {
        frame_interval_ms: Some(200),
        ..KnobSettings::default()
    });
    let stream = json!({"model": "speech-2.8-hd", "text": "Hello there, this is a slow stream.",
                        "stream": true, "voice_setting": {"voice_id": "English_Graceful_Lady"}});
    let open = gw.open("/v1/t2a_v2", &key, &stream).await;
    assert_eq!(open.status(), 200);
    // While it streams, a second request is refused.
    let reply = gw.post_json("/v1/embeddings", &key, &embed()).await;
    assert_eq!(
        reply.status,
        429,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    assert_eq!(reply.json()["error"]["code"], "rate_limit_exceeded");
    assert!(
        reply.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("in flight")
    );
    // The client leaves mid-stream: its slot is freed once the gateway notices.
    drop(open);
    let mut admitted = false;
    for _ in 0..50 {
        if gw.post_json("/v1/embeddings", &key, &embed()).await.status == 200 {
            admitted = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(admitted, "the slot of a client that left was never freed");
    gw.set_knobs(KnobSettings::default());
    gw.settled(&account).await;
    gw.stop().await;
}

#[tokio::test]
async fn video_tasks_in_flight_are_counted_in_the_database() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, _) = gw.account("10").await;
    let (_, key) = key_with(
        &gw,
        &account,
        AccessPolicy {
            tasks_in_flight: Some(1),
            ..AccessPolicy::default()
        },
    )
    .await;
    // No pollers here: a created task stays in flight.
    assert_eq!(send(&gw, &key, "ark").await.status, 200);
    let creates = gw.calls("POST /api/v3/contents/generations/tasks");
    let reply = send(&gw, &key, "ark").await;
    assert_eq!(
        reply.status,
        429,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    assert_eq!(reply.json()["error"]["code"], "RateLimitExceeded");
    assert!(
        reply.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("1 at once")
    );
    assert_eq!(
        gw.calls("POST /api/v3/contents/generations/tasks"),
        creates,
        "the refused task reached the upstream"
    );
    assert_eq!(
        gw.open_holds(&account).await,
        1,
        "only the first task's hold"
    );
    gw.stop().await;
}

/// One billable endpoint's request: (label, path, upstream route, content type, body).
type EndpointRequest = (&'static str, &'static str, &'static str, String, Vec<u8>);

/// A request body with its content type.
type Body = (String, Vec<u8>);

/// Every billable endpoint.
fn every_endpoint() -> Vec<EndpointRequest> {
    let json = |v: Value| {
        (
            "application/json".to_owned(),
            serde_json::to_vec(&v).unwrap(),
        )
    };
    let audio = common::wav("Hello from the limits test.");
    let form = |model: &str| {
        let (ct, body) = common::multipart(&[("model", model)], "a.wav", &audio);
        (ct, body)
    };
    let native = json!({"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]});
    let rows: Vec<(&str, &str, &str, Body)> = vec![
        (
            "embeddings",
            "/v1/embeddings",
            "POST /v1/embeddings",
            json(embed()),
        ),
        (
            "speech",
            "/v1/audio/speech",
            "POST /v1/t2a_v2",
            json(json!({"model": "speech-2.8-hd", "input": "Hello.", "voice": "alloy"})),
        ),
        (
            "t2a",
            "/v1/t2a_v2",
            "POST /v1/t2a_v2",
            json(json!({"model": "speech-2.8-hd", "text": "Hello.",
                        "voice_setting": {"voice_id": "English_Graceful_Lady"}})),
        ),
        (
            "transcriptions",
            "/v1/audio/transcriptions",
            "POST /v1/speech_to_text",
            form("asr-1.0"),
        ),
        (
            "speech_to_text",
            "/v1/speech_to_text",
            "POST /v1/speech_to_text",
            form("asr-1.0"),
        ),
        (
            "clip_tasks",
            "/api/v3/contents/generations/tasks",
            "POST /api/v3/contents/generations/tasks",
            json(json!({"model": "clipgen-cn-2.0-260128",
                        "content": [{"type": "text", "text": "A lighthouse"}]})),
        ),
        (
            "video_generations",
            "/v1/video/generations",
            "POST /v1/video/generations",
            json(json!({"model": "imagine-video", "prompt": "A lighthouse", "duration": 3})),
        ),
        (
            "native",
            "/v1beta/models/gen-2.5-flash:generateContent",
            "POST /v1beta/models/{model}:generateContent",
            json(native.clone()),
        ),
        (
            "native stream",
            "/v1beta/models/gen-2.5-flash:streamGenerateContent?alt=sse",
            "POST /v1beta/models/{model}:streamGenerateContent",
            json(native),
        ),
        (
            "chat",
            "/v1/chat/completions",
            "POST /v1beta/models/{model}:generateContent",
            json(
                json!({"model": "gen-2.5-flash", "messages": [{"role": "user", "content": "Hi"}]}),
            ),
        ),
        (
            "responses",
            "/v1/responses",
            "POST /v1beta/models/{model}:generateContent",
            json(json!({"model": "gen-2.5-flash", "input": "Hi"})),
        ),
    ];
    rows.into_iter()
        .map(|(label, path, route, (ct, body))| (label, path, route, ct, body))
        .collect()
}

#[tokio::test]
async fn every_billable_endpoint_admits_to_the_rate_and_refuses_past_it_before_the_upstream() {
    fresh_minute(20).await;
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, _) = gw.account("10").await;
    for (label, path, route, content_type, body) in every_endpoint() {
        let (_, key) = key_with(
            &gw,
            &account,
            AccessPolicy {
                rpm: Some(1),
                ..AccessPolicy::default()
            },
        )
        .await;
        let auth = format!("Bearer {key}");
        let headers = [
            ("authorization", auth.as_str()),
            ("x-goog-api-key", key.as_str()),
            ("content-type", content_type.as_str()),
        ];
        let first = gw.request("POST", path, &headers, body.clone()).await;
        assert_eq!(
            first.status,
            200,
            "{label}: {}",
            String::from_utf8_lossy(&first.body[..first.body.len().min(300)])
        );
        assert_eq!(header(&first, "x-ratelimit-limit-requests"), "1", "{label}");
        assert_eq!(
            header(&first, "x-ratelimit-remaining-requests"),
            "0",
            "{label}"
        );
        let calls = gw.calls(route);
        let second = gw.request("POST", path, &headers, body).await;
        let text = String::from_utf8_lossy(&second.body).into_owned();
        let refused =
            second.status == 429 || (second.status == 200 && text.contains("\"status_code\":1002"));
        assert!(refused, "{label}: {} {text}", second.status);
        assert!(second.headers.get("retry-after").is_some(), "{label}");
        assert_eq!(
            header(&second, "x-ratelimit-remaining-requests"),
            "0",
            "{label}"
        );
        assert_eq!(
            gw.calls(route),
            calls,
            "{label}: the refusal reached the upstream"
        );
    }
    gw.settled(&account).await;
    gw.stop().await;
}

#[tokio::test]
async fn open_streams_are_limited_apart_from_whole_answers() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, _) = gw.account("10").await;
    let (_, key) = key_with(
        &gw,
        &account,
        AccessPolicy {
            streams: Some(1),
            ..AccessPolicy::default()
        },
    )
    .await;
    gw.set_knobs(KnobSettings {
        frame_interval_ms: Some(200),
        ..KnobSettings::default()
    });
    let stream = json!({"model": "speech-2.8-hd", "text": "Hello there, this is a slow stream.",
                        "stream": true, "voice_setting": {"voice_id": "English_Graceful_Lady"}});
    let open = gw.open("/v1/t2a_v2", &key, &stream).await;
    assert_eq!(open.status(), 200);
    // A second stream — of another family — is refused before its upstream call…
    let calls = gw.calls("POST /v1beta/models/{model}:streamGenerateContent");
    let reply = gw
        .request(
            "POST",
            "/v1beta/models/gen-2.5-flash:streamGenerateContent?alt=sse",
            &[
                ("x-goog-api-key", &key),
                ("content-type", "application/json"),
            ],
            serde_json::to_vec(&json!({"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]}))
                .unwrap(),
        )
        .await;
    assert_eq!(
        reply.status,
        429,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    assert!(String::from_utf8_lossy(&reply.body).contains("streams open"));
    assert_eq!(
        gw.calls("POST /v1beta/models/{model}:streamGenerateContent"),
        calls
    );
    // …while a whole answer is not a stream.
    assert_eq!(
        gw.post_json("/v1/embeddings", &key, &embed()).await.status,
        200
    );
    // The client leaves: its stream's slot comes back.
    drop(open);
    let mut reopened = false;
    for _ in 0..50 {
        let again = gw.open("/v1/t2a_v2", &key, &stream).await;
        if again.status() == 200 {
            reopened = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        reopened,
        "the slot of a stream whose client left was never freed"
    );
    gw.set_knobs(KnobSettings::default());
    gw.settled(&account).await;
    gw.stop().await;
}
