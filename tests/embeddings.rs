//! `/v1/embeddings` end to end: a real HTTP client → the gateway → the simulator over HTTP,
//! with the store's ledger checked after each call.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{TestGateway, norm};
use serde_json::json;
use std::time::Duration;
use tollgate_billing::Amount;
use tollgate_embeddings::decode_base64;
use tollgate_sim::KnobSettings;
use tollgate_store::LedgerKind;

const PATH: &str = "/v1/embeddings";

#[tokio::test]
async fn a_batch_comes_back_in_order_and_is_charged_exactly_tokens_times_price() {
    let gw = TestGateway::start().await;
    let (account, key) = gw.account("1").await;
    let inputs = ["The quick brown fox", "jumps over", "the lazy dog."];
    let r = gw
        .post_json(
            PATH,
            &key,
            &json!({"model": "text-embedding-3-small", "input": inputs}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert!(r.headers.contains_key("x-request-id"));
    let body = r.json();
    assert_eq!(body["object"], "list");
    assert_eq!(body["model"], "text-embedding-3-small");
    let data = body["data"].as_array().unwrap();
    assert_eq!(data.len(), 3);
    for (i, item) in data.iter().enumerate() {
        assert_eq!(item["index"], i);
        let v: Vec<f32> = serde_json::from_value(item["embedding"].clone()).unwrap();
        assert_eq!(v.len(), 1536, "native dimension");
        assert!((norm(&v) - 1.0).abs() < 1e-4);
    }
    // Same input, same vector (the simulator is deterministic): order is by input, not arrival.
    let single = gw
        .post_json(
            PATH,
            &key,
            &json!({"model": "text-embedding-3-small", "input": inputs[1]}),
        )
        .await
        .json();
    assert_eq!(single["data"][0]["embedding"], data[1]["embedding"]);

    // 0.02 per million tokens = 20 nano-units a token, charged on the upstream's usage.
    let tokens = body["usage"]["prompt_tokens"].as_u64().unwrap();
    let single_tokens = single["usage"]["prompt_tokens"].as_u64().unwrap();
    assert!(tokens > 0);
    let charged = i64::try_from(20 * (tokens + single_tokens)).unwrap();
    assert_eq!(
        gw.balance(&account).await,
        Amount::from_nanos(1_000_000_000 - charged)
    );
    let ledger = gw.store.ledger(&account).await.unwrap();
    assert_eq!(
        ledger.len(),
        3,
        "the opening credit and one charge per request"
    );
    assert_eq!(ledger[1].kind, LedgerKind::Charge);
    assert_eq!(
        ledger[1].amount,
        Amount::from_nanos(-i64::try_from(20 * tokens).unwrap())
    );
    assert!(!ledger[1].estimated);
    let a = gw.store.find_account(&account).await.unwrap();
    assert_eq!(a.held, Amount::ZERO);
}

#[tokio::test]
async fn dimensions_shorten_and_renormalise_and_base64_is_little_endian_f32() {
    let gw = TestGateway::start().await;
    let (_, key) = gw.account("1").await;
    let r = gw
        .post_json(
            PATH,
            &key,
            &json!({"model": "text-embedding-3-large", "input": ["a", "b"], "dimensions": 256, "encoding_format": "base64"}),
        )
        .await;
    assert_eq!(r.status, 200);
    for item in r.json()["data"].as_array().unwrap() {
        let v = decode_base64(item["embedding"].as_str().unwrap()).unwrap();
        assert_eq!(v.len(), 256);
        assert!((norm(&v) - 1.0).abs() < 1e-4);
    }
    // The alias resolves to its public model, which the response names.
    let r = gw
        .post_json(
            PATH,
            &key,
            &json!({"model": "embed-small", "input": "x", "dimensions": 8}),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["model"], "text-embedding-3-small");
    let r = gw
        .post_json(
            PATH,
            &key,
            &json!({"model": "embed-small", "input": [[1, 2, 3], [4]]}),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["usage"]["prompt_tokens"], 4);
}

#[tokio::test]
async fn missing_wrong_and_disabled_keys_are_refused_in_openai_shape() {
    let gw = TestGateway::start().await;
    let body =
        serde_json::to_vec(&json!({"model": "text-embedding-3-small", "input": "x"})).unwrap();
    let r = gw.request("POST", PATH, &[], body.clone()).await;
    assert_eq!(r.status, 401);
    assert_eq!(r.json()["error"]["code"], "missing_api_key");
    let r = gw
        .request(
            "POST",
            PATH,
            &[("authorization", "Bearer tg-000000000000000000")],
            body.clone(),
        )
        .await;
    assert_eq!(r.status, 401);
    let e = r.json();
    assert_eq!(e["error"]["type"], "invalid_request_error");
    assert_eq!(e["error"]["code"], "invalid_api_key");
    assert!(e["error"].as_object().unwrap().contains_key("param"));
    let (account, key) = gw.account("1").await;
    gw.store.set_disabled(&account, true).await.unwrap();
    let r = gw
        .post_json(
            PATH,
            &key,
            &json!({"model": "text-embedding-3-small", "input": "x"}),
        )
        .await;
    assert_eq!(r.status, 403);
    assert_eq!(gw.upstream_calls(), 0);
}

#[tokio::test]
async fn a_short_balance_is_429_insufficient_quota_with_no_upstream_call() {
    let gw = TestGateway::start().await;
    let (account, key) = gw.account("0.00000001").await; // 10 nano-units: not one token's worth twice
    let r = gw
        .post_json(
            PATH,
            &key,
            &json!({"model": "text-embedding-3-small", "input": "hello there world"}),
        )
        .await;
    assert_eq!(r.status, 429);
    let e = r.json();
    assert_eq!(e["error"]["type"], "insufficient_quota");
    assert_eq!(e["error"]["code"], "insufficient_quota");
    assert_eq!(gw.upstream_calls(), 0);
    assert_eq!(gw.balance(&account).await, Amount::from_nanos(10));
    assert_eq!(gw.store.ledger(&account).await.unwrap().len(), 1);
}

#[tokio::test]
async fn bad_input_is_400_naming_the_field_and_never_reaches_the_upstream() {
    let gw = TestGateway::start().await;
    let (account, key) = gw.account("1").await;
    let auth = format!("Bearer {key}");
    let cases: Vec<(serde_json::Value, &str)> = vec![
        (json!({"model": "nope", "input": "x"}), "model"),
        (json!({"input": "x"}), "model"),
        (json!({"model": "text-embedding-3-small"}), "input"),
        (
            json!({"model": "text-embedding-3-small", "input": []}),
            "input",
        ),
        (
            json!({"model": "text-embedding-3-small", "input": ["ok", ""]}),
            "input[1]",
        ),
        (
            json!({"model": "text-embedding-3-small", "input": vec!["a"; 2049]}),
            "input",
        ),
        (
            json!({"model": "text-embedding-3-small", "input": "x", "dimensions": 0}),
            "dimensions",
        ),
        (
            json!({"model": "text-embedding-3-small", "input": "x", "dimensions": 1537}),
            "dimensions",
        ),
        (
            json!({"model": "text-embedding-ada-002", "input": "x", "dimensions": 8}),
            "dimensions",
        ),
        (
            json!({"model": "text-embedding-3-small", "input": "x", "encoding_format": "hex"}),
            "encoding_format",
        ),
        (
            json!({"model": "text-embedding-3-small", "input": "word ".repeat(8200)}),
            "input",
        ),
    ];
    for (body, field) in cases {
        let r = gw.post_json(PATH, &key, &body).await;
        assert_eq!(
            r.status,
            400,
            "{body}: {}",
            String::from_utf8_lossy(&r.body)
        );
        let e = r.json();
        assert_eq!(e["error"]["param"], field, "{e}");
        assert_eq!(e["error"]["type"], "invalid_request_error");
        assert!(
            e["error"]["message"]
                .as_str()
                .unwrap()
                .contains(field.split('[').next().unwrap()),
            "{e}"
        );
    }
    let r = gw
        .request(
            "POST",
            PATH,
            &[
                ("authorization", &auth),
                ("content-type", "application/json"),
            ],
            "{\"model\": ",
        )
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["code"], "invalid_json");
    let r = gw
        .request(
            "POST",
            PATH,
            &[("authorization", &auth), ("content-type", "text/plain")],
            "hi",
        )
        .await;
    assert_eq!(r.status, 415);
    assert_eq!(gw.upstream_calls(), 0);
    assert_eq!(gw.store.ledger(&account).await.unwrap().len(), 1);
    assert_eq!(gw.open_holds(&account).await, 0);
}

/// The client who sends what is costly to count (docs/decisions.md, "Counting tokens"): the
/// gateway counts every input before it holds anything. A megabyte of spaces — the tokenizer
/// the gateway used before panicked on it and answered 500 — is 7,814 tokens, under the 8,192
/// an input may have: relayed and charged exactly. Four megabytes of one letter — which it took
/// time quadratic in the letters to count — is 500,000 tokens: refused naming the input, with
/// nothing held or sent.
#[tokio::test]
async fn inputs_costly_to_count_are_counted_then_charged_or_refused() {
    // The endpoint's default limit of 8 MiB (the test gateway's is 64 KiB).
    let config = common::MODELS.replace("embeddings = 65536", "embeddings = 8388608");
    let gw = TestGateway::with_config(&config).await;
    let (account, key) = gw.account("1").await;
    let spaces = format!("{}x", " ".repeat(1_000_000));
    let r = gw
        .post_json(
            PATH,
            &key,
            &json!({"model": "text-embedding-3-small", "input": spaces}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["usage"]["prompt_tokens"], 7_814);
    settle_down(&gw, &account).await;
    assert_eq!(
        gw.balance(&account).await,
        Amount::from_nanos(1_000_000_000 - 20 * 7_814)
    );

    let letters = "a".repeat(4_000_000);
    let r = gw
        .post_json(
            PATH,
            &key,
            &json!({"model": "text-embedding-3-small", "input": ["hello", letters]}),
        )
        .await;
    assert_eq!(r.status, 400, "{}", String::from_utf8_lossy(&r.body));
    let e = r.json();
    assert_eq!(e["error"]["type"], "invalid_request_error");
    assert_eq!(e["error"]["param"], "input[1]", "{e}");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("has 500000 tokens"),
        "{e}"
    );
    assert_eq!(gw.upstream_calls(), 1, "the refused request was not sent");
    assert_eq!(gw.store.ledger(&account).await.unwrap().len(), 2);
    assert_eq!(gw.open_holds(&account).await, 0);
}

#[tokio::test]
async fn an_oversized_body_is_413_in_openai_shape() {
    let gw = TestGateway::start().await;
    let (_, key) = gw.account("1").await;
    // The test configuration sets the embeddings limit to 64 KiB.
    let big = "a ".repeat(40_000);
    let r = gw
        .post_json(
            PATH,
            &key,
            &json!({"model": "text-embedding-3-small", "input": big}),
        )
        .await;
    assert_eq!(r.status, 413);
    assert_eq!(r.json()["error"]["code"], "request_too_large");
    assert_eq!(gw.upstream_calls(), 0);
}

#[tokio::test]
async fn upstream_5xx_is_502_and_the_hold_is_released_in_full() {
    let gw = TestGateway::start().await;
    let (account, key) = gw.account("1").await;
    gw.set_knobs(KnobSettings {
        fail_status: Some(500),
        ..KnobSettings::default()
    });
    let r = gw
        .post_json(
            PATH,
            &key,
            &json!({"model": "text-embedding-3-small", "input": "hello"}),
        )
        .await;
    assert_eq!(r.status, 502, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["error"]["type"], "server_error");
    assert_eq!(gw.upstream_calls(), 1);
    settle_down(&gw, &account).await;
    assert_eq!(
        gw.balance(&account).await,
        Amount::from_nanos(1_000_000_000)
    );
    assert_eq!(
        gw.store.ledger(&account).await.unwrap().len(),
        1,
        "no charge row"
    );
}

#[tokio::test]
async fn an_upstream_timeout_is_504_and_the_hold_is_released_in_full() {
    let gw = TestGateway::start().await;
    let (account, key) = gw.account("1").await;
    gw.set_knobs(KnobSettings {
        stall: true,
        ..KnobSettings::default()
    });
    let r = gw
        .post_json(
            PATH,
            &key,
            &json!({"model": "text-embedding-3-small", "input": "hello"}),
        )
        .await;
    assert_eq!(r.status, 504);
    assert_eq!(r.json()["error"]["code"], "upstream_timeout");
    settle_down(&gw, &account).await;
    assert_eq!(
        gw.balance(&account).await,
        Amount::from_nanos(1_000_000_000)
    );
}

#[tokio::test]
async fn a_refusing_channel_fails_over_to_the_next() {
    let gw = TestGateway::start().await;
    let (account, key) = gw.account("1").await;
    gw.set_knobs(KnobSettings {
        fail_status: Some(503),
        fail_times: Some(1),
        ..KnobSettings::default()
    });
    let r = gw
        .post_json(
            PATH,
            &key,
            &json!({"model": "text-embedding-3-large", "input": "hello"}),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        gw.upstream_calls(),
        2,
        "the primary refused, the secondary answered"
    );
    assert_eq!(gw.store.ledger(&account).await.unwrap().len(), 2);
    // A 429 passes through as 429 once no channel is left.
    gw.set_knobs(KnobSettings {
        fail_status: Some(429),
        ..KnobSettings::default()
    });
    let r = gw
        .post_json(
            PATH,
            &key,
            &json!({"model": "text-embedding-3-small", "input": "hello"}),
        )
        .await;
    assert_eq!(r.status, 429);
    assert!(r.headers.contains_key("retry-after"));
}

#[tokio::test]
async fn unsupported_and_unknown_endpoints_answer_in_their_family_shape() {
    let gw = TestGateway::start().await;
    let r = gw
        .request("POST", "/v1/audio/translations", &[], "{}")
        .await;
    assert_eq!(r.status, 404, "a 4xx that SDKs do not retry");
    assert_eq!(r.json()["error"]["code"], "unsupported_endpoint");
    assert_eq!(r.json()["error"]["type"], "invalid_request_error");
    let r = gw.request("GET", PATH, &[], "").await;
    assert_eq!(r.status, 405);
    assert_eq!(r.headers["allow"], "POST");
    let r = gw.request("GET", "/nowhere", &[], "").await;
    assert_eq!(r.status, 404);
}

#[tokio::test]
async fn health_readiness_metrics_and_model_list() {
    let gw = TestGateway::start().await;
    assert_eq!(gw.request("GET", "/healthz", &[], "").await.status, 200);
    assert_eq!(gw.request("GET", "/readyz", &[], "").await.status, 200);
    let (_, key) = gw.account("1").await;
    gw.post_json(
        PATH,
        &key,
        &json!({"model": "text-embedding-3-small", "input": "x"}),
    )
    .await;
    let auth = format!("Bearer {key}");
    let models = gw
        .request("GET", "/v1/models", &[("authorization", &auth)], "")
        .await
        .json();
    let ids: Vec<_> = models["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].clone())
        .collect();
    assert!(ids.contains(&json!("text-embedding-3-small")));
    let text =
        String::from_utf8(gw.request("GET", "/metrics", &[], "").await.body.to_vec()).unwrap();
    assert!(
        text.contains("tollgate_requests_total{endpoint=\"embeddings\",status=\"200\"} 1"),
        "{text}"
    );
    assert!(text.contains("tollgate_upstream_duration_seconds_count{endpoint=\"embeddings\"} 1"));
    assert!(text.contains("tollgate_gateway_overhead_seconds_count{endpoint=\"embeddings\"} 1"));
    assert!(text.contains("tollgate_holds_total{outcome=\"settled\"} 1"));
}

#[tokio::test]
async fn shutdown_lets_in_flight_requests_finish() {
    let mut gw = TestGateway::start().await;
    let (account, key) = gw.account("1").await;
    gw.set_knobs(KnobSettings {
        latency_ms: 300,
        ..KnobSettings::default()
    });
    let addr = gw.addr;
    let in_flight = tokio::spawn(async move {
        let client =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build_http::<http_body_util::Full<bytes::Bytes>>();
        let request = hyper::Request::post(format!("http://{addr}{PATH}"))
            .header("authorization", format!("Bearer {key}"))
            .body(http_body_util::Full::new(bytes::Bytes::from(
                r#"{"model":"text-embedding-3-small","input":"slow"}"#,
            )))
            .unwrap();
        client.request(request).await.unwrap().status().as_u16()
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    gw.trigger_shutdown();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(gw.state.is_draining());
    // New connections are refused while the old one finishes.
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
    assert_eq!(in_flight.await.unwrap(), 200);
    assert_eq!(
        gw.store.ledger(&account).await.unwrap().len(),
        2,
        "and it was charged"
    );
    gw.stop().await;
}

/// Releases happen right after the response; give them a moment, then check no hold is open.
async fn settle_down(gw: &TestGateway, account: &str) {
    for _ in 0..50 {
        if gw.open_holds(account).await == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("a hold stayed open");
}

#[tokio::test]
async fn http2_prior_knowledge_is_served() {
    let gw = TestGateway::start().await;
    let (_, key) = gw.account("1").await;
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .http2_only(true)
        .build_http::<http_body_util::Full<bytes::Bytes>>();
    let request = hyper::Request::post(format!("http://{}{PATH}", gw.addr))
        .header("authorization", format!("Bearer {key}"))
        .body(http_body_util::Full::new(bytes::Bytes::from(
            r#"{"model":"text-embedding-3-small","input":["h2","too"]}"#,
        )))
        .unwrap();
    let response = client.request(request).await.unwrap();
    assert_eq!(response.version(), http::Version::HTTP_2);
    assert_eq!(response.status(), 200);
    assert!(response.headers().contains_key("x-request-id"));
}

/// Issue 22 item 4: an upstream that refuses the gateway's own key answers with a message that
/// quotes part of the key (as OpenAI's does), and one that fails with an HTML page that names
/// a secret. The client sees neither — a generic message in its family's shape, nothing
/// charged — while the operator's log has the detail with the request's id and `/metrics`
/// counts each by channel and status.
#[tokio::test]
async fn vendor_error_bodies_never_reach_the_client() {
    let html = common::file_server(|_| {
        (
            502,
            bytes::Bytes::from_static(
                b"<html><body>upstream key sk-live-0123456789 rejected by proxy</body></html>",
            ),
        )
    })
    .await;
    let config = format!(
        r#"
[[channels]]
name = "revoked"
format = "openai-embeddings"
base_url = "sim"
api_key_env = "REVOKED_KEY"

[[channels]]
name = "html"
format = "openai-embeddings"
base_url = "{html}"

[models."embed-revoked"]
kind = "embeddings"
channels = ["revoked"]
price = {{ meter = "tokens", per_million_tokens = "0.02" }}

[models."embed-html"]
kind = "embeddings"
channels = ["html"]
price = {{ meter = "tokens", per_million_tokens = "0.02" }}
"#
    );
    let secret = "sk-proj-operator0secret0key0abcd";
    let gw = TestGateway::with_config_env(&config, move |name| {
        (name == "REVOKED_KEY").then(|| secret.to_owned())
    })
    .await;
    gw.set_knobs(KnobSettings {
        refuse_keys: vec![secret.into()],
        ..KnobSettings::default()
    });
    let (account, key) = gw.account("1").await;
    let r = gw
        .post_json(PATH, &key, &json!({"model": "embed-revoked", "input": "x"}))
        .await;
    let text = String::from_utf8_lossy(&r.body).into_owned();
    assert_eq!(r.status, 502, "{text}");
    assert_eq!(
        r.json()["error"]["message"],
        "The upstream refused the gateway's credentials; the request was not charged"
    );
    assert!(!text.contains("abcd") && !text.contains("sk-"), "{text}");

    let r = gw
        .post_json(PATH, &key, &json!({"model": "embed-html", "input": "x"}))
        .await;
    let text = String::from_utf8_lossy(&r.body).into_owned();
    assert_eq!(r.status, 502, "{text}");
    assert_eq!(
        r.json()["error"]["message"],
        "The upstream failed with HTTP 502; the request was not charged"
    );
    assert!(
        !text.contains("html") && !text.contains("sk-live"),
        "{text}"
    );
    assert_eq!(
        gw.balance(&account).await,
        Amount::from_nanos(1_000_000_000)
    );

    let metrics = String::from_utf8_lossy(&gw.get("/metrics", &key).await.body).into_owned();
    for line in [
        r#"tollgate_channel_upstream_errors_total{channel="revoked",status="401"} 1"#,
        r#"tollgate_channel_upstream_errors_total{channel="html",status="502"} 1"#,
    ] {
        assert!(metrics.contains(line), "missing {line}");
    }
}

/// Issue 42 item 9: a vendor's 4xx in its own format reaches the client (it says what was
/// wrong with the request), but not the vendor account's ids and addresses it quotes.
#[tokio::test]
async fn a_vendors_refusal_reaches_the_client_without_its_ids_and_addresses() {
    let vendor = common::typed_server(|_| {
        (
            400,
            Some("application/json".to_owned()),
            bytes::Bytes::from_static(
                br#"{"error":{"message":"Rate tier of org-Xa83kd9QmT exceeded for project proj_abc123XYZ at shard 10.20.30.40:8443 (see http://quota.vendor.internal/limits, ask ops@vendor.example)","type":"invalid_request_error","code":"bad"}}"#,
            ),
        )
    })
    .await;
    let config = format!(
        r#"
[[channels]]
name = "picky"
format = "openai-embeddings"
base_url = "{vendor}"

[models."embed-picky"]
kind = "embeddings"
channels = ["picky"]
price = {{ meter = "tokens", per_million_tokens = "0.02" }}
"#
    );
    let gw = TestGateway::with_config(&config).await;
    let (_, key) = gw.account("1").await;
    let r = gw
        .post_json(PATH, &key, &json!({"model": "embed-picky", "input": "x"}))
        .await;
    let text = String::from_utf8_lossy(&r.body).into_owned();
    assert_eq!(r.status, 400, "{text}");
    let message = r.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(
        message.contains("Rate tier of"),
        "the vendor's words: {message}"
    );
    for secret in [
        "org-Xa83kd9QmT",
        "proj_abc123XYZ",
        "10.20.30.40",
        "quota.vendor.internal",
        "ops@vendor.example",
    ] {
        assert!(
            !text.contains(secret),
            "{secret} reached the client: {text}"
        );
    }
}

/// An upstream's answer with one vector, `embedding` as written, and one token of usage.
fn answer_with(embedding: &str) -> bytes::Bytes {
    bytes::Bytes::from(format!(
        r#"{{"object":"list","data":[{{"object":"embedding","index":0,"embedding":{embedding}}}],"model":"vendor","usage":{{"prompt_tokens":1,"total_tokens":1}}}}"#
    ))
}

/// Channels that answer their own way (docs/decisions.md, "Embeddings passed through"): a
/// vector already as the client asked is relayed as the channel wrote it; one in the other
/// encoding, too long, or with escapes in its base64 is converted; and a channel that lies
/// about what a vector is — a string among the numbers, two vectors for one input — is the
/// channel's failure: 502, nothing charged, no hold left, none of its bytes relayed.
#[tokio::test]
async fn a_channels_vectors_are_relayed_checked_or_converted_and_a_lying_answer_is_not_charged() {
    const WIDE: &str = "[ 0.6000000238418579,\n 0.800000011920929 ]";
    let answers = [
        ("wide", answer_with(WIDE)),
        // 1.9999999 is `////Pw==`; PHP's json_encode writes `/` as `\/`.
        ("php", answer_with(r#""\/\/\/\/Pw==""#)),
        ("stringy", answer_with(r#"[0.25,"0.75"]"#)),
        ("nested", answer_with("[[0.6],[0.8]]")),
        (
            "twice",
            bytes::Bytes::from_static(
                br#"{"data":[{"index":0,"embedding":[1.0]},{"index":0,"embedding":[1.0]}],"usage":{"prompt_tokens":1,"total_tokens":1}}"#,
            ),
        ),
    ];
    let mut config = String::new();
    for (name, body) in answers {
        let base = common::file_server(move |_| (200, body.clone())).await;
        config.push_str(&format!(
            r#"
[[channels]]
name = "{name}"
format = "openai-embeddings"
base_url = "{base}"

[models."embed-{name}"]
kind = "embeddings"
channels = ["{name}"]
upstream_model = "text-embedding-3-small"
price = {{ meter = "tokens", per_million_tokens = "1000" }}
"#
        ));
    }
    let gw = TestGateway::with_config(&config).await;
    let (account, key) = gw.account("1").await;

    // As asked (float, no length): the channel's own bytes, spelling and white space included.
    let r = gw
        .post_json(PATH, &key, &json!({"model": "embed-wide", "input": "x"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(
        r.text().contains(&format!(
            r#""index":0,"embedding":{WIDE}}}],"model":"embed-wide""#
        )),
        "{}",
        r.text()
    );
    // Asked in base64: converted, exactly the channel's float32 values.
    let r = gw
        .post_json(
            PATH,
            &key,
            &json!({"model": "embed-wide", "input": "x", "encoding_format": "base64"}),
        )
        .await;
    let text = r.json()["data"][0]["embedding"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(decode_base64(&text).unwrap(), vec![0.6f32, 0.8]);
    // Shorter than the channel's: truncated and renormalised.
    let r = gw
        .post_json(
            PATH,
            &key,
            &json!({"model": "embed-wide", "input": "x", "dimensions": 1}),
        )
        .await;
    assert_eq!(r.json()["data"][0]["embedding"], json!([1.0]));
    // Escaped base64: unescaped and written canonically, in either encoding.
    let r = gw
        .post_json(
            PATH,
            &key,
            &json!({"model": "embed-php", "input": "x", "encoding_format": "base64"}),
        )
        .await;
    assert_eq!(r.json()["data"][0]["embedding"], "////Pw==", "{}", r.text());
    let r = gw
        .post_json(PATH, &key, &json!({"model": "embed-php", "input": "x"}))
        .await;
    let values: Vec<f32> =
        serde_json::from_value(r.json()["data"][0]["embedding"].clone()).unwrap();
    assert_eq!(values, vec![1.9999999f32]);
    gw.settled(&account).await;
    // Five answers, one token each at 1,000 a million.
    assert_eq!(
        gw.balance(&account).await,
        Amount::from_nanos(1_000_000_000 - 5 * 1_000_000)
    );

    let (account, key) = gw.account("1").await;
    for model in ["embed-stringy", "embed-nested", "embed-twice"] {
        for format in ["float", "base64"] {
            let r = gw
                .post_json(
                    PATH,
                    &key,
                    &json!({"model": model, "input": "x", "encoding_format": format}),
                )
                .await;
            assert_eq!(r.status, 502, "{model}: {}", r.text());
            assert_eq!(
                r.json()["error"]["message"],
                "The upstream's answer was broken; the request was not charged",
                "{model}"
            );
            assert!(!r.text().contains("0.75") && !r.text().contains("[0.6]"));
        }
    }
    gw.settled(&account).await;
    assert_eq!(gw.open_holds(&account).await, 0);
    assert_eq!(
        gw.balance(&account).await,
        Amount::from_nanos(1_000_000_000)
    );
}
