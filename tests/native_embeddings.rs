//! The native embeddings methods end to end (`:embedContent`, `:batchEmbedContents`; docs/api.md
//! §2.10): a real HTTP client with the native key header → the gateway → an OpenAI-format
//! embeddings channel (the simulator over HTTP). Each answer is checked against
//! `/v1/embeddings`' for the same texts, and each charge against the tokens the upstream counted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Reply, TestGateway, norm};
use serde_json::{Value, json};
use tollgate_billing::Amount;
use tollgate_store::{AccessPolicy, LedgerKind, UsageFilter};

const EMBED: &str = "/v1beta/models/text-embedding-3-small:embedContent";
const BATCH: &str = "/v1beta/models/text-embedding-3-small:batchEmbedContents";

async fn post(gw: &TestGateway, path: &str, key: &str, body: &Value) -> Reply {
    gw.request(
        "POST",
        path,
        &[
            ("x-goog-api-key", key),
            ("content-type", "application/json"),
        ],
        serde_json::to_vec(body).unwrap(),
    )
    .await
}

fn content(text: &str) -> Value {
    json!({"parts": [{"text": text}]})
}

/// What `account` (opened with 1) has been charged.
async fn spent(gw: &TestGateway, account: &str) -> Amount {
    Amount::from_nanos(1_000_000_000 - gw.balance(account).await.nanos())
}

/// What `/v1/embeddings` answers for `inputs` on a fresh account: the vectors and what it
/// charged.
async fn openai_reference(
    gw: &TestGateway,
    inputs: &[&str],
    dimensions: Option<u32>,
) -> (Vec<Value>, Amount) {
    let (account, key) = gw.account("1").await;
    let mut body = json!({"model": "text-embedding-3-small", "input": inputs});
    if let Some(d) = dimensions {
        body["dimensions"] = json!(d);
    }
    let r = gw.post_json("/v1/embeddings", &key, &body).await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let vectors = r.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["embedding"].clone())
        .collect();
    (vectors, spent(gw, &account).await)
}

#[tokio::test]
async fn embed_content_answers_the_vendor_shape_and_is_charged_like_v1_embeddings() {
    let gw = TestGateway::start().await;
    let (account, key) = gw.account("1").await;
    let text = "What is the meaning of life?";
    let r = post(&gw, EMBED, &key, &json!({"content": content(text)})).await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let body = r.json();
    let values: Vec<f32> = serde_json::from_value(body["embedding"]["values"].clone()).unwrap();
    assert_eq!(values.len(), 1536);
    assert!((norm(&values) - 1.0).abs() < 1e-4);

    let (reference, reference_charge) = openai_reference(&gw, &[text], None).await;
    assert_eq!(
        body["embedding"]["values"], reference[0],
        "the same vector as /v1/embeddings"
    );
    let charged = spent(&gw, &account).await;
    assert_eq!(charged, reference_charge);
    assert!(charged > Amount::ZERO);
    let ledger = gw.store.ledger(&account).await.unwrap();
    assert_eq!(ledger.len(), 2);
    assert_eq!(ledger[1].kind, LedgerKind::Charge);
    assert!(
        !ledger[1].estimated,
        "the upstream's count, not the local one"
    );

    // The usage log says which endpoint, model and request.
    let records = gw
        .store
        .usage_records(
            &UsageFilter {
                account_id: Some(account.clone()),
                ..UsageFilter::default()
            },
            10,
            None,
        )
        .await
        .unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].endpoint, "embeddings");
    assert_eq!(records[0].model.as_deref(), Some("text-embedding-3-small"));
    assert_eq!(records[0].charge, charged);
    assert_eq!(
        records[0].request_id.as_deref(),
        r.headers.get("x-request-id").and_then(|v| v.to_str().ok())
    );
    assert_eq!(gw.open_holds(&account).await, 0);
    gw.stop().await;
}

#[tokio::test]
async fn a_batch_keeps_its_order_shares_a_dimensionality_and_is_charged_once() {
    let gw = TestGateway::start().await;
    let (account, key) = gw.account("1").await;
    let texts = ["The quick brown fox", "jumps over", "the lazy dog."];
    let requests: Vec<Value> = texts
        .iter()
        .map(|t| {
            json!({"model": "models/text-embedding-3-small", "content": content(t),
                   "taskType": "RETRIEVAL_DOCUMENT", "title": "Fox", "outputDimensionality": 256})
        })
        .collect();
    // The /v1/ path and snake_case fields are the same method.
    let r = post(
        &gw,
        "/v1/models/text-embedding-3-small:batchEmbedContents",
        &key,
        &json!({"requests": requests}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let embeddings = r.json()["embeddings"].as_array().unwrap().clone();
    assert_eq!(embeddings.len(), 3);
    let (reference, reference_charge) = openai_reference(&gw, &texts, Some(256)).await;
    for (i, e) in embeddings.iter().enumerate() {
        assert_eq!(e["values"].as_array().unwrap().len(), 256);
        assert_eq!(e["values"], reference[i], "vector {i} in order");
    }
    let ledger = gw.store.ledger(&account).await.unwrap();
    assert_eq!(ledger.len(), 2, "one charge for the whole batch");
    assert_eq!(spent(&gw, &account).await, reference_charge);
    // One request alone: the vector of the batch's first.
    let r = post(
        &gw,
        EMBED,
        &key,
        &json!({"content": content(texts[0]), "output_dimensionality": 256}),
    )
    .await;
    assert_eq!(r.json()["embedding"]["values"], reference[0]);
    gw.stop().await;
}

#[tokio::test]
async fn bad_requests_are_400_in_the_vendor_shape_naming_the_field_and_never_reach_the_upstream() {
    let gw = TestGateway::start().await;
    let (account, key) = gw.account("1").await;
    let ok = |t: &str| json!({"model": "models/text-embedding-3-small", "content": content(t)});
    let cases: Vec<(&str, Value, &str)> = vec![
        (EMBED, json!({}), "content.parts"),
        (EMBED, json!({"content": {"parts": []}}), "content.parts"),
        (
            EMBED,
            json!({"content": {"parts": [{"inlineData": {"mimeType": "image/png", "data": "AA=="}}]}}),
            "content.parts[0]",
        ),
        (
            EMBED,
            json!({"content": content("x"), "taskType": "POETRY"}),
            "taskType",
        ),
        (
            EMBED,
            json!({"content": content("x"), "title": "t"}),
            "title",
        ),
        (
            EMBED,
            json!({"content": content("x"), "outputDimensionality": 0}),
            "outputDimensionality",
        ),
        // Past the model's 1536: the shared embeddings rule, in the native field's name.
        (
            EMBED,
            json!({"content": content("x"), "outputDimensionality": 4096}),
            "outputDimensionality",
        ),
        (
            EMBED,
            json!({"model": "models/other", "content": content("x")}),
            "model",
        ),
        (
            EMBED,
            json!({"content": content(&"word ".repeat(8200))}),
            "content",
        ),
        (BATCH, json!({"requests": []}), "requests"),
        (
            BATCH,
            json!({"requests": [ok("a"), {"model": "models/other", "content": content("b")}]}),
            "requests[1].model",
        ),
        (BATCH, json!({"requests": vec![ok("a"); 101]}), "requests"),
        (
            BATCH,
            json!({"requests": [ok("a"), ok(&"word ".repeat(8200))]}),
            "requests[1].content",
        ),
    ];
    for (path, body, field) in &cases {
        let r = post(&gw, path, &key, body).await;
        assert_eq!(
            r.status,
            400,
            "{body}: {}",
            String::from_utf8_lossy(&r.body)
        );
        let error = &r.json()["error"];
        assert_eq!(error["status"], "INVALID_ARGUMENT", "{body}: {error}");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains(&format!("'{field}'")),
            "{body}: {error}"
        );
    }
    // Not an embeddings model, or none at all: the vendor's 404.
    for path in [
        "/v1beta/models/nope:embedContent",
        "/v1beta/models/gen-2.5-flash:embedContent",
    ] {
        let r = post(&gw, path, &key, &json!({"content": content("x")})).await;
        assert_eq!(r.status, 404, "{path}");
        assert_eq!(r.json()["error"]["status"], "NOT_FOUND");
    }
    let r = gw.get(EMBED, &key).await;
    assert_eq!(r.status, 405);
    assert_eq!(gw.upstream_calls(), 0);
    assert_eq!(gw.store.ledger(&account).await.unwrap().len(), 1);
    assert_eq!(gw.open_holds(&account).await, 0);
    gw.stop().await;
}

#[tokio::test]
async fn credentials_policies_and_balance_apply_as_to_every_embedding() {
    let gw = TestGateway::start().await;
    let body = json!({"content": content("x")});
    // No key, a wrong key: the vendor's own answers.
    let r = gw
        .request(
            "POST",
            EMBED,
            &[("content-type", "application/json")],
            serde_json::to_vec(&body).unwrap(),
        )
        .await;
    assert_eq!(r.status, 403, "{}", String::from_utf8_lossy(&r.body));
    let r = post(&gw, EMBED, "tg-nope", &body).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["details"][0]["reason"], "API_KEY_INVALID");
    // A key allowed only native generation may not embed: the policy's endpoint is
    // `embeddings`, whichever shape asks.
    let (account, _) = gw.account("1").await;
    let native_only = gw
        .key_with(
            &account,
            AccessPolicy {
                endpoints: Some(vec!["native".into()]),
                ..AccessPolicy::default()
            },
        )
        .await;
    let r = post(&gw, EMBED, &native_only.secret, &body).await;
    assert_eq!(r.status, 403, "{}", String::from_utf8_lossy(&r.body));
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("embeddings")
    );
    // A balance that cannot cover the hold: 429, no upstream call.
    let (poor, poor_key) = gw.account("0").await;
    let r = post(&gw, EMBED, &poor_key, &body).await;
    assert_eq!(r.status, 429, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["error"]["status"], "RESOURCE_EXHAUSTED");
    assert_eq!(gw.upstream_calls(), 0);
    assert_eq!(gw.open_holds(&poor).await, 0);
    gw.stop().await;
}
