//! Requests real clients send that once failed here, each in the client's exact shape: a lone
//! empty embedding input (LangChain), model pickers listing and fetching aliases, a top-level
//! JSON array, a missing `model`, a wrong Content-Type.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::TestGateway;
use serde_json::json;
use tollgate_settings::config::DEFAULT_CONFIG;

#[tokio::test]
async fn a_lone_empty_embedding_input_gets_a_vector_but_an_empty_item_of_a_batch_does_not() {
    let gw = TestGateway::start().await;
    let (account, key) = gw.account("1").await;
    // What LangChain's OpenAIEmbeddings sends for an empty document.
    let r = gw
        .post_json(
            "/v1/embeddings",
            &key,
            &json!({"model": "text-embedding-3-small", "input": "", "encoding_format": "base64"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.json());
    let body = r.json();
    assert_eq!(body["data"].as_array().unwrap().len(), 1);
    let vector =
        tollgate_embeddings::decode_base64(body["data"][0]["embedding"].as_str().unwrap()).unwrap();
    assert_eq!(vector.len(), 1536);
    gw.settled(&account).await;
    // Zero tokens counted, zero reported: nothing charged (docs/decisions.md, "Embeddings").
    assert_eq!(gw.balance(&account).await, "1".parse().unwrap());
    assert_eq!(gw.open_holds(&account).await, 0);

    let before = gw.upstream_calls();
    let r = gw
        .post_json(
            "/v1/embeddings",
            &key,
            &json!({"model": "text-embedding-3-small", "input": ["a", ""]}),
        )
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["param"], "input[1]");
    assert_eq!(gw.upstream_calls(), before);
    gw.stop().await;
}

#[tokio::test]
async fn aliases_are_listed_and_retrievable_like_models() {
    let gw = TestGateway::with_config(DEFAULT_CONFIG).await;
    let (_, key) = gw.account("1").await;
    let auth = format!("Bearer {key}");
    let r = gw
        .request("GET", "/v1/models", &[("authorization", auth.as_str())], "")
        .await;
    assert_eq!(r.status, 200);
    let ids: Vec<String> = r.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect();
    for name in [
        "tts-1",
        "whisper-1",
        "speech-2.8-turbo",
        "text-embedding-3-small",
    ] {
        assert!(
            ids.iter().any(|id| id == name),
            "{name} missing from {ids:?}"
        );
    }
    for alias in ["tts-1", "whisper-1", "gpt-4o-mini-tts"] {
        let r = gw
            .request(
                "GET",
                &format!("/v1/models/{alias}"),
                &[("authorization", auth.as_str())],
                "",
            )
            .await;
        assert_eq!(r.status, 200, "{alias}");
        assert_eq!(r.json()["id"], alias);
        assert_eq!(r.json()["object"], "model");
    }
    let r = gw
        .request(
            "GET",
            "/v1/models/tts-2",
            &[("authorization", auth.as_str())],
            "",
        )
        .await;
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"]["code"], "model_not_found");
    gw.stop().await;
}

#[tokio::test]
async fn messages_say_what_is_wrong() {
    let gw = TestGateway::with_config(DEFAULT_CONFIG).await;
    let (_, key) = gw.account("1").await;
    let auth = format!("Bearer {key}");
    let headers = [
        ("authorization", auth.as_str()),
        ("content-type", "application/json"),
    ];

    // A generic video request without `model`.
    let r = gw
        .request(
            "POST",
            "/v1/video/generations",
            &headers,
            r#"{"prompt":"waves at night"}"#,
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.json());
    let message = r.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("'model' is required"), "{message}");

    // A top-level array.
    let r = gw
        .request("POST", "/v1/embeddings", &headers, r#"["hello"]"#)
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["error"]["message"],
        "The request body must be a JSON object, not an array"
    );
    assert_eq!(r.json()["error"]["code"], "invalid_type");

    // 415 carries a code.
    let r = gw
        .request(
            "POST",
            "/v1/embeddings",
            &[
                ("authorization", auth.as_str()),
                ("content-type", "text/plain"),
            ],
            r#"{"model":"text-embedding-3-small","input":"x"}"#,
        )
        .await;
    assert_eq!(r.status, 415);
    assert_eq!(r.json()["error"]["code"], "unsupported_media_type");
    gw.stop().await;
}
