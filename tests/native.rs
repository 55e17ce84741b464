//! Native text generation end to end (docs/api.md §2.9, §4.10–4.11, §5, §8 rule 7; wire-formats §6, §8)
//! against the simulated vendor: exact billing with thinking, fields the gateway does not model
//! reaching the upstream intact, streams relayed as they arrive and settled on the last usage,
//! validation before any upstream call, the three ways of passing a key, and the chat and
//! Responses bridges.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use bytes::Bytes;
use common::TestGateway;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tollgate_billing::{Amount, Tariff, Usage};
use tollgate_sim::KnobSettings;
use tollgate_store::LedgerKind;

const CONFIG: &str = r#"
[[channels]]
name = "genai"
format = "genai"
base_url = "sim"
first_byte_timeout_ms = 5000
idle_timeout_ms = 5000

[models."gen-2.5-flash"]
kind = "native-text"
channels = ["genai"]
price = { meter = "text_tokens", input_per_million_tokens = "0.30", output_per_million_tokens = "2.50" }

[models."gen-2.0-flash"]
kind = "native-text"
channels = ["genai"]
price = { meter = "text_tokens", input_per_million_tokens = "0.10", output_per_million_tokens = "0.40" }

[[channels]]
name = "openai"
format = "openai-embeddings"
base_url = "sim"

[models."text-embedding-3-small"]
kind = "embeddings"
channels = ["openai"]
price = { meter = "tokens", per_million_tokens = "0.02" }
"#;

const GENERATE: &str = "/v1beta/models/gen-2.5-flash:generateContent";
const STREAM: &str = "/v1beta/models/gen-2.5-flash:streamGenerateContent";
const SIM_GENERATE: &str = "POST /v1beta/models/{model}:generateContent";

fn flash() -> Tariff {
    serde_json::from_value(json!({"meter": "text_tokens",
        "input_per_million_tokens": "0.30", "output_per_million_tokens": "2.50"}))
    .unwrap()
}

fn charges(ledger: &[tollgate_store::LedgerEntry]) -> Vec<&tollgate_store::LedgerEntry> {
    ledger
        .iter()
        .filter(|e| e.kind == LedgerKind::Charge)
        .collect()
}

/// The charge of a `usageMetadata`: prompt at the input price, candidates + thoughts at the
/// output price, computed here from the raw counts.
fn expected_charge(usage: &Value) -> Amount {
    let n = |k: &str| usage[k].as_u64().unwrap_or(0);
    flash()
        .charge(&Usage::TextTokens {
            input: n("promptTokenCount") + n("toolUsePromptTokenCount"),
            output: n("candidatesTokenCount") + n("thoughtsTokenCount"),
        })
        .unwrap()
}

async fn post(
    gw: &TestGateway,
    path: &str,
    key_header: (&str, &str),
    body: &Value,
) -> common::Reply {
    gw.request(
        "POST",
        path,
        &[key_header, ("content-type", "application/json")],
        serde_json::to_vec(body).unwrap(),
    )
    .await
}

#[tokio::test]
async fn a_request_that_thinks_is_charged_prompt_at_input_and_candidates_plus_thoughts_at_output() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("1").await;
    let body = json!({
        "contents": [{"role": "user", "parts": [{"text": "Why is the sky blue? Explain Rayleigh scattering."}]}],
        "generationConfig": {"thinkingConfig": {"includeThoughts": true, "thinkingBudget": 1024}}
    });
    let reply = post(&gw, GENERATE, ("x-goog-api-key", &key), &body).await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let answer = reply.json();
    let usage = &answer["usageMetadata"];
    assert!(
        usage["thoughtsTokenCount"].as_u64().unwrap() > 0,
        "2.5 thinks: {usage}"
    );
    let parts = answer["candidates"][0]["content"]["parts"]
        .as_array()
        .unwrap();
    assert!(
        parts.iter().any(|p| p["thought"] == true),
        "includeThoughts shows thoughts"
    );
    let ledger = gw.store.ledger(&account).await.unwrap();
    let charged = charges(&ledger);
    assert_eq!(charged.len(), 1);
    let expected = expected_charge(usage);
    assert_eq!(-charged[0].amount.nanos(), expected.nanos());
    // Thoughts are output: without them the charge would be smaller.
    let without = flash()
        .charge(&Usage::TextTokens {
            input: usage["promptTokenCount"].as_u64().unwrap(),
            output: usage["candidatesTokenCount"].as_u64().unwrap(),
        })
        .unwrap();
    assert!(without.nanos() < expected.nanos());
    let quantity: Value = serde_json::from_str(charged[0].quantity.as_deref().unwrap()).unwrap();
    assert_eq!(
        quantity["text_tokens"]["output"].as_u64().unwrap(),
        usage["candidatesTokenCount"].as_u64().unwrap()
            + usage["thoughtsTokenCount"].as_u64().unwrap()
    );
    assert_eq!(
        gw.balance(&account).await.nanos(),
        1_000_000_000 - expected.nanos()
    );
}

#[tokio::test]
async fn fields_the_gateway_does_not_model_reach_the_upstream_intact() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (_, key) = gw.account("1").await;
    // Written by hand, in an order and spelling of our own: the upstream must get exactly this.
    let sent = r#"{"contents":[{"role":"user","parts":[{"text":"Weather in Paris?"}]},{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"c2lnbmF0dXJlLWJ5dGVz"}]},{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"temp_c":21.5,"sky":"clear"}}}]}],
      "tools":[{"functionDeclarations":[{"name":"get_weather","description":"Current weather","parameters":{"type":"OBJECT","properties":{"city":{"type":"STRING","enum":["Paris","Rome"]},"units":{"type":"STRING","nullable":true}},"required":["city"]}}]}],
      "toolConfig":{"functionCallingConfig":{"mode":"AUTO"}},
      "safetySettings":[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_ONLY_HIGH"},{"category":"HARM_CATEGORY_DANGEROUS_CONTENT","threshold":"BLOCK_NONE"}],
      "generationConfig":{"temperature":0.25,"topK":40.0,"responseLogprobs":false,"mediaResolution":"MEDIA_RESOLUTION_LOW","thinkingConfig":{"thinkingBudget":-1,"futureKnob":{"a":[1,2.50,"x"]}}},
      "labels":{"team":"search"},"somethingNew":{"nested":[null,true,1e3]}}"#;
    let reply = gw
        .request(
            "POST",
            GENERATE,
            &[
                ("x-goog-api-key", &key),
                ("content-type", "application/json"),
            ],
            sent,
        )
        .await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let received = gw
        .sim
        .genai_last_request()
        .expect("the simulator saw the request");
    assert_eq!(
        String::from_utf8_lossy(&received),
        sent,
        "the body reaches the upstream byte for byte"
    );
    // The same through the chat bridge: the thought signature goes back with the tool call.
    let chat = json!({"model": "gen-2.5-flash", "messages": [
        {"role": "user", "content": "Weather in Paris? [call]"}],
        "tools": [{"type": "function", "function": {"name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]});
    let first = gw
        .post_json("/v1/chat/completions", &key, &chat)
        .await
        .json();
    assert_eq!(
        first["choices"][0]["finish_reason"], "tool_calls",
        "{first}"
    );
    let call = first["choices"][0]["message"]["tool_calls"][0].clone();
    assert_eq!(call["function"]["name"], "get_weather");
    let followup = json!({"model": "gen-2.5-flash", "messages": [
        {"role": "user", "content": "Weather in Paris? [call]"},
        {"role": "assistant", "content": null, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call["id"], "content": "{\"temp_c\": 21}"}],
        "tools": chat["tools"]});
    let second = gw.post_json("/v1/chat/completions", &key, &followup).await;
    assert_eq!(
        second.status,
        200,
        "{}",
        String::from_utf8_lossy(&second.body)
    );
    let upstream: Value = serde_json::from_slice(&gw.sim.genai_last_request().unwrap()).unwrap();
    let model_turn = &upstream["contents"][1];
    assert_eq!(model_turn["role"], "model");
    assert_eq!(
        model_turn["parts"][0]["functionCall"]["name"],
        "get_weather"
    );
    assert!(
        model_turn["parts"][0]["thoughtSignature"].is_string(),
        "{upstream}"
    );
    assert_eq!(
        upstream["contents"][2]["parts"][0]["functionResponse"]["name"],
        "get_weather"
    );
}

/// Reads an SSE body as it arrives: (arrival time, data) per event.
async fn sse_events(response: http::Response<hyper::body::Incoming>) -> Vec<(Duration, String)> {
    use http_body_util::BodyExt;
    let started = Instant::now();
    let mut body = response.into_body();
    let mut buffer = String::new();
    let mut events = Vec::new();
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame.unwrap().into_data() else {
            continue;
        };
        buffer.push_str(std::str::from_utf8(&data).unwrap());
        while let Some(end) = buffer.find("\r\n\r\n").or_else(|| buffer.find("\n\n")) {
            let event: String = buffer.drain(..end).collect();
            buffer.drain(..if buffer.starts_with("\r\n\r\n") { 4 } else { 2 });
            // The data line, also after an `event:` line (the Responses stream names its events).
            if let Some(data) = event.lines().find_map(|line| line.strip_prefix("data: ")) {
                events.push((started.elapsed(), data.to_owned()));
            }
        }
    }
    events
}

async fn open_stream(
    gw: &TestGateway,
    path: &str,
    key: &str,
    body: &Value,
) -> http::Response<hyper::body::Incoming> {
    use http_body_util::Full;
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;
    let client: Client<_, Full<bytes::Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let request = http::Request::post(format!("http://{}{path}", gw.addr))
        .header("x-vendor-api-key", key)
        .header("authorization", format!("Bearer {key}"))
        .header("content-type", "application/json")
        .body(Full::new(bytes::Bytes::from(
            serde_json::to_vec(body).unwrap(),
        )))
        .unwrap();
    client.request(request).await.unwrap()
}

#[tokio::test]
async fn streams_are_relayed_as_they_arrive_and_settled_on_the_last_usage() {
    let gw = TestGateway::with_config(CONFIG).await;
    gw.set_knobs(KnobSettings {
        frame_interval_ms: Some(40),
        ..Default::default()
    });
    let (account, key) = gw.account("1").await;
    let body = json!({"contents": [{"parts": [{"text": "Tell me a long story about the sea and the wind and the stars."}]}]});
    let response = open_stream(&gw, &format!("{STREAM}?alt=sse"), &key, &body).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let events = sse_events(response).await;
    assert!(events.len() >= 4, "{} events", events.len());
    let (first, last) = (events[0].0, events[events.len() - 1].0);
    assert!(
        last - first >= Duration::from_millis(100),
        "frames arrive over time: {first:?} .. {last:?}"
    );
    let frames: Vec<Value> = events
        .iter()
        .map(|(_, d)| serde_json::from_str(d).unwrap())
        .collect();
    let final_usage = &frames.last().unwrap()["usageMetadata"];
    assert!(frames.last().unwrap()["candidates"][0]["finishReason"].is_string());
    let ledger = gw.store.ledger(&account).await.unwrap();
    assert_eq!(
        -charges(&ledger)[0].amount.nanos(),
        expected_charge(final_usage).nanos(),
        "the last usage, never a sum"
    );

    // Without alt=sse: the vendor's JSON array, all at once.
    let reply = post(&gw, STREAM, ("x-goog-api-key", &key), &body).await;
    assert_eq!(reply.status, 200);
    let array = reply.json();
    assert!(
        array.as_array().unwrap()[0]["candidates"].is_array(),
        "{array}"
    );
}

#[tokio::test]
async fn an_abandoned_or_cut_stream_is_settled_on_what_was_seen_and_marked() {
    let gw = TestGateway::with_config(CONFIG).await;
    gw.set_knobs(KnobSettings {
        frame_interval_ms: Some(100),
        ..Default::default()
    });
    let (account, key) = gw.account("1").await;
    let body = json!({"contents": [{"parts": [{"text": "A long answer please, about rivers and mountains and valleys."}]}]});
    let response = open_stream(&gw, &format!("{STREAM}?alt=sse"), &key, &body).await;
    // Read two events, then hang up.
    {
        use http_body_util::BodyExt;
        let mut body = response.into_body();
        let mut seen = 0;
        while seen < 2 {
            if let Some(Ok(frame)) = body.frame().await
                && frame.is_data()
            {
                seen += 1;
            }
        }
    }
    let started = Instant::now();
    let charge = loop {
        let ledger = gw.store.ledger(&account).await.unwrap();
        if let Some(c) = charges(&ledger).first().map(|c| (*c).clone()) {
            break c;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "never settled");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        charge
            .note
            .as_deref()
            .unwrap()
            .starts_with("partial: client disconnected"),
        "{charge:?}"
    );
    assert!(charge.amount.nanos() < 0);
    assert_eq!(
        gw.store.find_account(&account).await.unwrap().held,
        Amount::ZERO
    );

    // The upstream fails mid-stream: the client gets the vendor's error event; what was
    // delivered is settled, marked partial.
    gw.set_knobs(KnobSettings {
        error_after_frames: Some(2),
        ..Default::default()
    });
    let (account, key) = gw.account("1").await;
    let events =
        sse_events(open_stream(&gw, &format!("{STREAM}?alt=sse"), &key, &body).await).await;
    let last: Value = serde_json::from_str(&events.last().unwrap().1).unwrap();
    assert!(last["error"]["status"].is_string(), "{last}");
    let ledger = gw.store.ledger(&account).await.unwrap();
    assert!(
        charges(&ledger)[0]
            .note
            .as_deref()
            .unwrap()
            .contains("upstream cut the stream")
    );
}

#[tokio::test]
async fn every_rule_is_checked_before_the_upstream_with_the_field_named() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("1").await;
    let text = json!([{"role": "user", "parts": [{"text": "hi"}]}]);
    let cases = [
        (json!({}), "contents"),
        (json!({"contents": []}), "contents"),
        (
            json!({"contents": [{"role": "system", "parts": [{"text": "x"}]}]}),
            "contents[0].role",
        ),
        (
            json!({"contents": [{"role": "user", "parts": []}]}),
            "contents[0].parts",
        ),
        (
            json!({"contents": text, "generationConfig": {"thinkingConfig": {"thinkingBudget": 999_999}}}),
            "thinkingBudget",
        ),
        (
            json!({"contents": text, "generationConfig": {"thinkingConfig": {"thinkingBudget": 1.5}}}),
            "thinkingBudget",
        ),
        (
            json!({"contents": text, "generationConfig": {"thinkingConfig": {"thinkingBudget": 1024, "thinkingLevel": "HIGH"}}}),
            "thinkingLevel",
        ),
        (
            json!({"contents": text, "generationConfig": {"maxOutputTokens": 0}}),
            "maxOutputTokens",
        ),
        (
            json!({"contents": text, "generationConfig": {"maxOutputTokens": 70_000}}),
            "maxOutputTokens",
        ),
    ];
    for (body, field) in &cases {
        let reply = post(&gw, GENERATE, ("x-goog-api-key", &key), body).await;
        assert_eq!(
            reply.status,
            400,
            "{body}: {}",
            String::from_utf8_lossy(&reply.body)
        );
        let error = &reply.json()["error"];
        assert_eq!(error["status"], "INVALID_ARGUMENT", "{body}");
        assert!(
            error["message"].as_str().unwrap().contains(field),
            "{body}: {error}"
        );
    }
    // 2.0 does not think at all.
    let reply = post(
        &gw,
        "/v1beta/models/gen-2.0-flash:generateContent",
        ("x-goog-api-key", &key),
        &json!({"contents": text, "generationConfig": {"thinkingConfig": {"thinkingBudget": 512}}}),
    )
    .await;
    assert_eq!(reply.status, 400);
    let reply = post(
        &gw,
        "/v1beta/models/gen-9-ultra:generateContent",
        ("x-goog-api-key", &key),
        &json!({"contents": text}),
    )
    .await;
    assert_eq!(
        (reply.status, reply.json()["error"]["status"].as_str()),
        (404, Some("NOT_FOUND"))
    );
    assert_eq!(gw.calls(SIM_GENERATE), 0, "nothing reached the upstream");
    assert_eq!(gw.balance(&account).await, "1".parse().unwrap());
}

#[tokio::test]
async fn keys_are_taken_from_each_place_the_vendor_allows_and_refused_in_its_shape() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (_, key) = gw.account("1").await;
    let body = json!({"contents": [{"parts": [{"text": "hi"}]}]});
    for header in ["x-vendor-api-key", "x-goog-api-key"] {
        assert_eq!(
            post(&gw, GENERATE, (header, &key), &body).await.status,
            200,
            "{header}"
        );
    }
    let with_query = post(&gw, &format!("{GENERATE}?key={key}"), ("x-none", ""), &body).await;
    assert_eq!(with_query.status, 200);
    let under_v1 = post(
        &gw,
        "/v1/models/gen-2.5-flash:generateContent",
        ("x-goog-api-key", &key),
        &body,
    )
    .await;
    assert_eq!(under_v1.status, 200, "the SDK's /v1 prefix");
    let bad = post(&gw, GENERATE, ("x-goog-api-key", "tg-not-a-key"), &body).await;
    assert_eq!(
        (bad.status, bad.json()["error"]["status"].as_str()),
        (400, Some("INVALID_ARGUMENT"))
    );
    assert_eq!(
        bad.json()["error"]["details"][0]["reason"],
        "API_KEY_INVALID"
    );
    let missing = post(&gw, GENERATE, ("x-none", ""), &body).await;
    assert_eq!(
        (missing.status, missing.json()["error"]["status"].as_str()),
        (403, Some("PERMISSION_DENIED"))
    );

    // countTokens answers without a charge; the model list in the vendor's shape.
    let (account, key) = gw.account("1").await;
    let counted = post(
        &gw,
        "/v1beta/models/gen-2.5-flash:countTokens",
        ("x-goog-api-key", &key),
        &body,
    )
    .await;
    assert_eq!(counted.status, 200);
    assert!(counted.json()["totalTokens"].as_u64().unwrap() > 0);
    assert_eq!(gw.balance(&account).await, "1".parse().unwrap());
    for path in ["/v1beta/models", "/v1/models"] {
        let list = gw
            .request("GET", path, &[("x-goog-api-key", &key)], "")
            .await
            .json();
        let names: Vec<&str> = list["models"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["name"].as_str().unwrap())
            .collect();
        assert!(
            names.contains(&"models/gen-2.5-flash")
                && !names.contains(&"models/text-embedding-3-small"),
            "{path}: {names:?}"
        );
    }
    let one = gw
        .request(
            "GET",
            "/v1beta/models/gen-2.5-flash",
            &[("x-goog-api-key", &key)],
            "",
        )
        .await
        .json();
    assert_eq!(one["outputTokenLimit"], 65536);
    // With a Bearer key, /v1/models stays OpenAI's list.
    let openai = gw.get("/v1/models", &key).await.json();
    assert_eq!(openai["object"], "list");
}

#[tokio::test]
async fn chat_completions_bridge_native_models_whole_and_streamed() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("1").await;
    let chat = json!({"model": "gen-2.5-flash", "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is a rainbow?"}]});
    let reply = gw.post_json("/v1/chat/completions", &key, &chat).await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let answer = reply.json();
    assert_eq!(answer["object"], "chat.completion");
    let usage = &answer["usage"];
    let reasoning = usage["completion_tokens_details"]["reasoning_tokens"]
        .as_u64()
        .unwrap();
    assert!(reasoning > 0, "2.5 thinks by default: {usage}");
    let upstream: Value = serde_json::from_slice(&gw.sim.genai_last_request().unwrap()).unwrap();
    assert_eq!(
        upstream["systemInstruction"]["parts"][0]["text"],
        "Be brief."
    );
    let expected = flash()
        .charge(&Usage::TextTokens {
            input: usage["prompt_tokens"].as_u64().unwrap(),
            output: usage["completion_tokens"].as_u64().unwrap(),
        })
        .unwrap();
    let ledger = gw.store.ledger(&account).await.unwrap();
    assert_eq!(-charges(&ledger)[0].amount.nanos(), expected.nanos());

    let mut streamed = chat.clone();
    streamed["stream"] = json!(true);
    streamed["stream_options"] = json!({"include_usage": true});
    let events = sse_events(open_stream(&gw, "/v1/chat/completions", &key, &streamed).await).await;
    assert_eq!(events.last().unwrap().1, "[DONE]");
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|(_, d)| serde_json::from_str(d).unwrap())
        .collect();
    assert!(
        chunks
            .iter()
            .all(|c| c["object"] == "chat.completion.chunk")
    );
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert!(
        text.starts_with("Simulated reply"),
        "thoughts are not content: {text}"
    );
    let usage_chunk = chunks.last().unwrap();
    assert_eq!(usage_chunk["choices"], json!([]));
    assert!(
        usage_chunk["usage"]["completion_tokens_details"]["reasoning_tokens"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(
        chunks
            .iter()
            .any(|c| c["choices"][0]["finish_reason"] == "stop")
    );

    // Only native models are served here.
    let other = gw.post_json("/v1/chat/completions", &key, &json!({"model": "text-embedding-3-small", "messages": [{"role": "user", "content": "x"}]})).await;
    assert_eq!(other.status, 400);
    assert_eq!(other.json()["error"]["code"], "model_not_found");
}

#[tokio::test]
async fn the_responses_bridge_serves_native_models_whole_and_streamed() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("1").await;
    let request = json!({"model": "gen-2.5-flash", "instructions": "Be brief.",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "What is a rainbow?"}]}],
        "max_output_tokens": 2048, "metadata": {"ticket": "42"}});
    let reply = gw.post_json("/v1/responses", &key, &request).await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let whole = reply.json();
    assert_eq!(
        (&whole["object"], &whole["status"]),
        (&json!("response"), &json!("completed"))
    );
    assert!(
        whole["id"].as_str().unwrap().starts_with("resp_"),
        "{whole}"
    );
    assert_eq!(whole["metadata"], json!({"ticket": "42"}));
    assert_eq!(whole["max_output_tokens"], 2048);
    let text = whole["output"][0]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("Simulated reply"),
        "thoughts are not output text: {text}"
    );
    let usage = &whole["usage"];
    assert!(
        usage["output_tokens_details"]["reasoning_tokens"]
            .as_u64()
            .unwrap()
            > 0,
        "{usage}"
    );
    let upstream: Value = serde_json::from_slice(&gw.sim.genai_last_request().unwrap()).unwrap();
    assert_eq!(
        upstream["systemInstruction"]["parts"][0]["text"],
        "Be brief."
    );
    assert_eq!(upstream["generationConfig"]["maxOutputTokens"], 2048);
    let priced = |usage: &Value| {
        flash()
            .charge(&Usage::TextTokens {
                input: usage["input_tokens"].as_u64().unwrap(),
                output: usage["output_tokens"].as_u64().unwrap(),
            })
            .unwrap()
    };
    let ledger = gw.store.ledger(&account).await.unwrap();
    assert_eq!(-charges(&ledger)[0].amount.nanos(), priced(usage).nanos());

    // Streamed: the event grammar, the same text, settled on the final usage.
    let mut streamed = request.clone();
    streamed["stream"] = json!(true);
    let response = open_stream(&gw, "/v1/responses", &key, &streamed).await;
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let events: Vec<Value> = sse_events(response)
        .await
        .iter()
        .map(|(_, data)| serde_json::from_str(data).unwrap())
        .collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types[..2], ["response.created", "response.in_progress"]);
    assert_eq!(*types.last().unwrap(), "response.completed");
    let numbers: Vec<u64> = events
        .iter()
        .map(|e| e["sequence_number"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, (0..events.len() as u64).collect::<Vec<_>>());
    let deltas: String = events
        .iter()
        .filter(|e| e["type"] == "response.output_text.delta")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, text);
    let completed = &events.last().unwrap()["response"];
    assert_eq!(completed["output"][0]["content"][0]["text"], text);
    gw.settled(&account).await;
    let ledger = gw.store.ledger(&account).await.unwrap();
    let charged = charges(&ledger);
    assert_eq!(charged.len(), 2);
    assert_eq!(
        -charged[1].amount.nanos(),
        priced(&completed["usage"]).nanos()
    );

    // Refused before the upstream, in OpenAI's shape, naming the field; nothing held or charged.
    let calls = gw.calls(SIM_GENERATE);
    for (body, param) in [
        (
            json!({"model": "gen-2.5-flash", "input": "Hi", "previous_response_id": "resp_1"}),
            "previous_response_id",
        ),
        (
            json!({"model": "gen-2.5-flash", "input": "Hi", "tools": [{"type": "web_search"}]}),
            "tools[0].type",
        ),
        (
            json!({"model": "gen-2.5-flash", "input": [{"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}]}),
            "input[0].content[0].file_id",
        ),
        (json!({"model": "gen-2.5-flash"}), "input"),
    ] {
        let reply = gw.post_json("/v1/responses", &key, &body).await;
        assert_eq!(reply.status, 400, "{body}");
        let error = &reply.json()["error"];
        assert_eq!(
            (&error["type"], &error["param"]),
            (&json!("invalid_request_error"), &json!(param)),
            "{error}"
        );
    }
    let other = gw
        .post_json(
            "/v1/responses",
            &key,
            &json!({"model": "text-embedding-3-small", "input": "x"}),
        )
        .await;
    assert_eq!(other.status, 400);
    assert_eq!(other.json()["error"]["code"], "model_not_found");
    assert_eq!(gw.calls(SIM_GENERATE), calls);
    assert_eq!(gw.open_holds(&account).await, 0);
    assert_eq!(charges(&gw.store.ledger(&account).await.unwrap()).len(), 2);
}

#[tokio::test]
async fn a_responses_requests_input_tokens_are_counted_by_the_channel_and_free() {
    const SIM_COUNT: &str = "POST /v1beta/models/{model}:countTokens";
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("1").await;
    let request = json!({"model": "gen-2.5-flash", "instructions": "Be brief.",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "What is a rainbow made of, and why is it curved?"}]}]});

    // The count, in the Responses format, from the channel's countTokens of the translated
    // request: the system instruction goes with the turns, the upstream model inside.
    let reply = gw
        .post_json("/v1/responses/input_tokens", &key, &request)
        .await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let counted = reply.json();
    assert_eq!(counted["object"], "response.input_tokens");
    assert_eq!(
        counted.as_object().unwrap().len(),
        2,
        "only the count crosses: {counted}"
    );
    let input_tokens = counted["input_tokens"].as_u64().unwrap();
    let upstream: Value = serde_json::from_slice(&gw.sim.genai_last_request().unwrap()).unwrap();
    let inner = &upstream["generateContentRequest"];
    assert_eq!(inner["model"], "models/gen-2.5-flash", "{upstream}");
    assert_eq!(inner["systemInstruction"]["parts"][0]["text"], "Be brief.");
    assert_eq!(gw.calls(SIM_COUNT), 1);

    // The same request, answered: the count is what it is billed as input.
    let answered = gw.post_json("/v1/responses", &key, &request).await;
    assert_eq!(answered.status, 200);
    assert_eq!(
        answered.json()["usage"]["input_tokens"].as_u64(),
        Some(input_tokens)
    );
    gw.settled(&account).await;
    assert_eq!(
        charges(&gw.store.ledger(&account).await.unwrap()).len(),
        1,
        "the count is not charged, the answer is"
    );

    // Refused as /v1/responses refuses, before the upstream, naming the field.
    for (body, param) in [
        (
            json!({"model": "gen-2.5-flash", "input": "Hi", "previous_response_id": "resp_1"}),
            "previous_response_id",
        ),
        (
            json!({"model": "gen-2.5-flash", "input": "Hi", "tools": [{"type": "web_search"}]}),
            "tools[0].type",
        ),
        (json!({"model": "gen-2.5-flash"}), "input"),
    ] {
        let reply = gw
            .post_json("/v1/responses/input_tokens", &key, &body)
            .await;
        assert_eq!(reply.status, 400, "{body}");
        assert_eq!(reply.json()["error"]["param"], param, "{body}");
    }
    let other = gw
        .post_json(
            "/v1/responses/input_tokens",
            &key,
            &json!({"model": "text-embedding-3-small", "input": "x"}),
        )
        .await;
    assert_eq!(other.status, 400);
    assert_eq!(other.json()["error"]["code"], "model_not_found");
    // The access policies' model rule holds for a count too.
    let narrow = gw
        .key_with(
            &account,
            tollgate_store::AccessPolicy {
                models: Some(vec!["text-embedding-*".to_owned()]),
                ..tollgate_store::AccessPolicy::default()
            },
        )
        .await
        .secret;
    let refused = gw
        .post_json("/v1/responses/input_tokens", &narrow, &request)
        .await;
    assert_eq!(refused.status, 403);
    assert_eq!(refused.json()["error"]["code"], "model_not_allowed");
    assert_eq!(
        gw.calls(SIM_COUNT),
        1,
        "no refused count reached the upstream"
    );
    assert_eq!(gw.open_holds(&account).await, 0);
}

// ------------------------------------------------------ media the client cannot make cheap

/// The one charge row of `account`, and that it is what the vendor's usage prices at exactly,
/// with nothing capped.
async fn charged_as_the_vendor_counted(gw: &TestGateway, account: &str, usage: &Value) -> Amount {
    gw.settled(account).await;
    let ledger = gw.store.ledger(account).await.unwrap();
    let rows = charges(&ledger);
    assert_eq!(rows.len(), 1, "{ledger:#?}");
    let charged = rows[0].amount.checked_neg().unwrap();
    assert_eq!(charged, expected_charge(usage), "{:?} for {usage}", rows[0]);
    assert_eq!(rows[0].anomaly, None, "nothing capped: {:?}", rows[0]);
    charged
}

/// What the account holds right now (the replica's leases cover holds; the engine knows).
fn held_now(gw: &TestGateway) -> usize {
    gw.state.ledger.open_holds_total()
}

/// Issue 22 item 2: `maxOutputTokens: 1` and 14 MB of inline audio (875 s of WAV). The
/// gateway measures the audio (32 tokens a second, the vendor's rate) and holds for it; the
/// charge is exactly the vendor's count. Before, every media part was held as 258 tokens and
/// the settlement capped at twice the hold: about 680 tokens charged for 28,000 counted.
#[tokio::test]
async fn inline_audio_is_measured_held_and_charged_as_the_vendor_counts_it() {
    use base64::Engine as _;
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("1").await;
    let audio = base64::engine::general_purpose::STANDARD.encode(common::silent_wav(875));
    let body = json!({
        "contents": [{"role": "user", "parts": [
            {"text": "Transcribe this."},
            {"inlineData": {"mimeType": "audio/wav", "data": audio}}
        ]}],
        "generationConfig": {"maxOutputTokens": 1, "thinkingConfig": {"thinkingBudget": 0}}
    });
    let reply = post(&gw, GENERATE, ("x-goog-api-key", &key), &body).await;
    let (usage, prompt) = answered_usage(&reply);
    assert!(prompt >= 28_000, "the vendor counted the audio: {usage}");
    let charged = charged_as_the_vendor_counted(&gw, &account, &usage).await;
    eprintln!("875 s of inline audio: {prompt} prompt tokens, charged {charged}");
    assert_eq!(held_now(&gw), 0);
}

/// The client who makes its text cheap to count: a megabyte of spaces is 8,192 tokens to
/// `cl100k_base` (one token for 128 spaces) and 262,144 to the vendor (the simulator counts
/// `ceil(bytes / 4)`). Held at the count alone, the settlement was capped at twice a hold of
/// about 10,000 tokens, and the operator paid the vendor for the rest. The text is now held for
/// at least one token per 8 bytes (docs/decisions.md, "Native generation"), and charged as
/// counted.
#[tokio::test]
async fn text_made_cheap_to_count_is_charged_as_the_vendor_counts_it() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("1").await;
    let body = json!({
        "contents": [{"role": "user", "parts": [{"text": " ".repeat(1 << 20)}]}],
        "generationConfig": {"maxOutputTokens": 1, "thinkingConfig": {"thinkingBudget": 0}}
    });
    let reply = post(&gw, GENERATE, ("x-goog-api-key", &key), &body).await;
    let (usage, prompt) = answered_usage(&reply);
    assert!(prompt >= 262_144, "the vendor counted every space: {usage}");
    let charged = charged_as_the_vendor_counted(&gw, &account, &usage).await;
    eprintln!("a megabyte of spaces: {prompt} prompt tokens, charged {charged}");
    assert_eq!(held_now(&gw), 0);
}

/// Issue 42 item 1. The adversary: any client who puts the bulk of a prompt where the hold did
/// not count — an `executableCode` or `codeExecutionResult` part (passed through to the vendor,
/// which counts it as text), the answer's `responseSchema`, the same schema through the chat
/// bridge's `response_format`. Before, an 810 KB `executableCode` part the vendor counted at
/// 202,534 tokens was charged 0.0000152: the settlement was capped at twice a hold that counted
/// only the text parts. Each is now held for its JSON and charged exactly as counted.
#[tokio::test]
async fn every_part_kind_and_field_is_charged_as_the_vendor_counts_it() {
    let gw = TestGateway::with_config(CONFIG).await;
    let bulk = "x = 1\n".repeat(135_000); // 810 KB of code: 6 bytes a line
    let config = json!({"maxOutputTokens": 1, "thinkingConfig": {"thinkingBudget": 0}});
    let native = [
        json!({"contents": [{"role": "user", "parts": [{"text": "run it"},
            {"executableCode": {"language": "PYTHON", "code": bulk}}]}], "generationConfig": config}),
        json!({"contents": [{"role": "user", "parts": [{"text": "and the output?"},
            {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": bulk}}]}],
            "generationConfig": config}),
        json!({"contents": [{"role": "user", "parts": [{"text": "a colour"}]}],
            "generationConfig": {"maxOutputTokens": 1, "thinkingConfig": {"thinkingBudget": 0},
                "responseMimeType": "application/json",
                "responseSchema": {"type": "STRING", "description": bulk}}}),
    ];
    for body in native {
        let (account, key) = gw.account("1").await;
        let reply = post(&gw, GENERATE, ("x-goog-api-key", &key), &body).await;
        let (usage, prompt) = answered_usage(&reply);
        assert!(prompt >= 202_500, "the vendor counted the bulk: {usage}");
        let charged = charged_as_the_vendor_counted(&gw, &account, &usage).await;
        eprintln!("810 KB outside the text parts: {prompt} prompt tokens, charged {charged}");
    }
    // The chat bridge's JSON schema becomes the native `responseSchema`.
    let (account, key) = gw.account("1").await;
    let chat = json!({"model": "gen-2.5-flash", "max_completion_tokens": 1,
        "reasoning_effort": "none",
        "messages": [{"role": "user", "content": "a colour"}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "colour",
            "schema": {"type": "string", "description": bulk}}}});
    let reply = gw.post_json("/v1/chat/completions", &key, &chat).await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let prompt = reply.json()["usage"]["prompt_tokens"].as_u64().unwrap();
    assert!(prompt >= 202_500, "the vendor counted the schema: {prompt}");
    gw.settled(&account).await;
    let ledger = gw.store.ledger(&account).await.unwrap();
    let rows = charges(&ledger);
    assert_eq!(rows.len(), 1, "{ledger:#?}");
    assert_eq!(rows[0].anomaly, None, "nothing capped: {:?}", rows[0]);
    assert_eq!(held_now(&gw), 0);
}

/// A `cachedContent` adds a cache the gateway never saw to the prompt: the client's word only,
/// so the hold covers the model's whole input limit, and an account that cannot cover it is
/// refused before the vendor is asked.
#[tokio::test]
async fn cached_content_is_held_to_the_input_limit() {
    let gw = TestGateway::with_config(CONFIG).await;
    let body = json!({
        "contents": [{"role": "user", "parts": [{"text": "and the summary?"}]}],
        "cachedContent": "cachedContents/a-very-large-cache",
        "generationConfig": {"maxOutputTokens": 16, "thinkingConfig": {"thinkingBudget": 0}}
    });
    let (poor, poor_key) = gw.account("0.3").await;
    let refused = post(&gw, GENERATE, ("x-goog-api-key", &poor_key), &body).await;
    assert_eq!(
        refused.status,
        429,
        "{}",
        String::from_utf8_lossy(&refused.body)
    );
    assert_eq!(gw.store.ledger(&poor).await.unwrap().len(), 1);
    assert_eq!(gw.calls(SIM_GENERATE), 0, "never reached the vendor");
    assert_eq!(held_now(&gw), 0);
}

/// Issue 42 item 2. The adversary: a client who sends a real 12-second MP4 with its movie
/// header's duration set to 0 (a fragmented MP4 carries 0 there legitimately). Before, it was
/// held at 0 tokens of video and could be charged at most 0.0000152 — an hour of video the same.
/// The length is measured from the samples' own timing, so the hold and the vendor's count
/// (the simulator decodes the same way) agree, and the charge is exact.
#[tokio::test]
async fn a_video_whose_header_says_nothing_is_charged_for_its_samples() {
    use base64::Engine as _;
    let gw = TestGateway::with_config(CONFIG).await;
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/crates/probe/tests/fixtures");
    for file in ["video_12s.mp4", "video_12s_fragmented.mp4"] {
        let mut mp4 = std::fs::read(format!("{fixtures}/{file}")).unwrap();
        let at = mp4.windows(4).position(|w| w == b"mvhd").unwrap() + 4;
        assert_eq!(mp4[at], 0, "a version 0 mvhd");
        mp4[at + 16..at + 20].fill(0);
        let (account, key) = gw.account("1").await;
        let body = json!({
            "contents": [{"role": "user", "parts": [
                {"text": "What happens in this video?"},
                {"inlineData": {"mimeType": "video/mp4",
                    "data": base64::engine::general_purpose::STANDARD.encode(&mp4)}}
            ]}],
            "generationConfig": {"maxOutputTokens": 1, "thinkingConfig": {"thinkingBudget": 0}}
        });
        let reply = post(&gw, GENERATE, ("x-goog-api-key", &key), &body).await;
        let (usage, prompt) = answered_usage(&reply);
        assert!(prompt >= 12 * 263, "the vendor decoded 12 s: {usage}");
        let charged = charged_as_the_vendor_counted(&gw, &account, &usage).await;
        eprintln!("{file} with mvhd 0: {prompt} prompt tokens, charged {charged}");
    }
    assert_eq!(held_now(&gw), 0);
}

/// A 200's `usageMetadata`, and its prompt tokens (what the vendor counted).
fn answered_usage(reply: &common::Reply) -> (serde_json::Value, u64) {
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let usage = reply.json()["usageMetadata"].clone();
    let prompt = usage["promptTokenCount"].as_u64().unwrap();
    (usage, prompt)
}

/// A `fileData` URI: the vendor fetches what the gateway never sees, so the hold covers the
/// model's whole input limit and the settlement charges the vendor's count up to it. A minute
/// of real video here (the simulator's renderer's longest): 263 tokens a second.
#[tokio::test]
async fn a_file_data_video_is_held_to_the_input_limit_and_charged_as_counted() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("1").await;
    let video = Bytes::from(
        tollgate_sim::video::render_mp4(&tollgate_sim::video::VideoSpec {
            seconds: 60.0,
            aspect_ratio: "16:9".into(),
            seed: 3,
        })
        .unwrap(),
    );
    let host = common::file_server(move |_| (200, video.clone())).await;
    let body = json!({
        "contents": [{"role": "user", "parts": [
            {"text": "What happens in this video?"},
            {"fileData": {"mimeType": "video/mp4", "fileUri": format!("{host}/clip.mp4")}}
        ]}],
        "generationConfig": {"maxOutputTokens": 16, "thinkingConfig": {"thinkingBudget": 0}}
    });
    // The hold: the model's input limit (1,048,576 tokens at 0.30 a million) and the output.
    let full = flash()
        .charge(&Usage::TextTokens {
            input: 1_048_576,
            output: 16,
        })
        .unwrap();
    let (poor, poor_key) = gw.account("0.3").await;
    let refused = post(&gw, GENERATE, ("x-goog-api-key", &poor_key), &body).await;
    assert_eq!(
        refused.status, 429,
        "an account that cannot cover {full} is refused"
    );
    assert!(gw.store.ledger(&poor).await.unwrap().len() == 1);

    let reply = post(&gw, GENERATE, ("x-goog-api-key", &key), &body).await;
    let (usage, prompt) = answered_usage(&reply);
    assert!(prompt >= 60 * 263, "the vendor counted the video: {usage}");
    let charged = charged_as_the_vendor_counted(&gw, &account, &usage).await;
    eprintln!("a minute of video by URI: held {full}, {prompt} prompt tokens, charged {charged}");
}

/// The same holes through the chat bridge: `input_audio` inline, and an image by URL (a
/// `fileData` the vendor fetches: a 1,600 × 900 PNG is six 768-pixel tiles).
#[tokio::test]
async fn chat_audio_and_images_by_url_are_charged_as_the_vendor_counts_them() {
    use base64::Engine as _;
    let gw = TestGateway::with_config(CONFIG).await;
    let png = Bytes::from(common::png(1_600, 900));
    let host = common::file_server(move |_| (200, png.clone())).await;
    let audio = base64::engine::general_purpose::STANDARD.encode(common::silent_wav(300));
    for (what, part) in [
        (
            "audio",
            json!({"type": "input_audio", "input_audio": {"data": audio, "format": "wav"}}),
        ),
        (
            "image",
            json!({"type": "image_url", "image_url": {"url": format!("{host}/chart.png")}}),
        ),
    ] {
        let (account, key) = gw.account("1").await;
        let body = json!({"model": "gen-2.5-flash", "max_tokens": 1, "reasoning_effort": "none",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Describe it."}, part]}]});
        let reply = gw.post_json("/v1/chat/completions", &key, &body).await;
        assert_eq!(
            reply.status,
            200,
            "{what}: {}",
            String::from_utf8_lossy(&reply.body)
        );
        let usage = reply.json()["usage"].clone();
        let native = json!({
            "promptTokenCount": usage["prompt_tokens"],
            "candidatesTokenCount": usage["completion_tokens"],
        });
        let floor = if what == "audio" { 300 * 32 } else { 6 * 258 };
        assert!(
            usage["prompt_tokens"].as_u64().unwrap() >= floor,
            "{what}: {usage}"
        );
        charged_as_the_vendor_counted(&gw, &account, &native).await;
    }
}

/// And through the Responses bridge: `input_audio`, and `input_file` by URL (a video).
#[tokio::test]
async fn responses_audio_and_files_by_url_are_charged_as_the_vendor_counts_them() {
    use base64::Engine as _;
    let gw = TestGateway::with_config(CONFIG).await;
    let video = Bytes::from(
        tollgate_sim::video::render_mp4(&tollgate_sim::video::VideoSpec {
            seconds: 20.0,
            aspect_ratio: "1:1".into(),
            seed: 5,
        })
        .unwrap(),
    );
    let host = common::file_server(move |_| (200, video.clone())).await;
    let audio = base64::engine::general_purpose::STANDARD.encode(common::silent_wav(200));
    for (what, part, floor) in [
        (
            "audio",
            json!({"type": "input_audio", "input_audio": {"data": audio, "format": "wav"}}),
            200 * 32,
        ),
        (
            "video",
            json!({"type": "input_file", "file_url": format!("{host}/talk.mp4")}),
            20 * 263,
        ),
    ] {
        let (account, key) = gw.account("1").await;
        let body = json!({"model": "gen-2.5-flash", "max_output_tokens": 1,
            "reasoning": {"effort": "none"},
            "input": [{"role": "user", "content": [{"type": "input_text", "text": "Summarise."}, part]}]});
        let reply = gw.post_json("/v1/responses", &key, &body).await;
        assert_eq!(
            reply.status,
            200,
            "{what}: {}",
            String::from_utf8_lossy(&reply.body)
        );
        let usage = reply.json()["usage"].clone();
        assert!(
            usage["input_tokens"].as_u64().unwrap() >= floor,
            "{what}: {usage}"
        );
        let native = json!({
            "promptTokenCount": usage["input_tokens"],
            "candidatesTokenCount": usage["output_tokens"],
        });
        charged_as_the_vendor_counted(&gw, &account, &native).await;
    }
}

/// A channel whose `countTokens` answer is not a count (a page, a count that is not a number):
/// both counting endpoints answer 502 in their own shape, none of the channel's bytes reach the
/// client, and nothing is held or charged (`generation::count_tokens`).
#[tokio::test]
async fn a_count_the_channel_cannot_vouch_for_is_a_502_and_none_of_its_bytes() {
    for answer in [
        "<html>vendor-secret-page</html>",
        r#"{"totalTokens": "vendor-secret-many"}"#,
    ] {
        let vendor = common::typed_server(move |_| {
            (
                200,
                Some("application/json".to_owned()),
                Bytes::from_static(answer.as_bytes()),
            )
        })
        .await;
        let config = format!(
            r#"
[[channels]]
name = "garbled"
format = "genai"
base_url = "{vendor}"

[models."gen-garbled"]
kind = "native-text"
channels = ["garbled"]
price = {{ meter = "text_tokens", input_per_million_tokens = "0.30", output_per_million_tokens = "2.50" }}
"#
        );
        let gw = TestGateway::with_config(&config).await;
        let (account, key) = gw.account("1").await;

        let native = post(
            &gw,
            "/v1beta/models/gen-garbled:countTokens",
            ("x-goog-api-key", &key),
            &json!({"contents": [{"parts": [{"text": "How many?"}]}]}),
        )
        .await;
        let bridged = gw
            .post_json(
                "/v1/responses/input_tokens",
                &key,
                &json!({"model": "gen-garbled", "input": "How many?"}),
            )
            .await;
        for (reply, shape) in [(&native, "status"), (&bridged, "type")] {
            let text = String::from_utf8_lossy(&reply.body).into_owned();
            assert_eq!(reply.status, 502, "{answer}: {text}");
            assert!(reply.json()["error"][shape].is_string(), "{text}");
            assert!(!text.contains("vendor-secret"), "relayed: {text}");
        }
        gw.settled(&account).await;
        assert_eq!(gw.balance(&account).await, "1".parse().unwrap());
        assert!(gw.store.ledger(&account).await.unwrap().len() <= 1);
    }
}
