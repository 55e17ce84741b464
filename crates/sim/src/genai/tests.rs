//! The native routes over real HTTP.

use crate::{KnobSettings, SimHandle, start};
use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

async fn sim(knobs: KnobSettings) -> SimHandle {
    start("127.0.0.1:0".parse().unwrap(), knobs).await.unwrap()
}

struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    /// The body frames as they arrived, with their arrival time.
    frames: Vec<(Instant, Bytes)>,
    /// Whether the body ended with an error (a cut connection).
    broken: bool,
}

impl Answer {
    fn body(&self) -> Vec<u8> {
        self.frames.iter().flat_map(|(_, b)| b.to_vec()).collect()
    }

    fn text(&self) -> String {
        String::from_utf8(self.body()).unwrap()
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body()).unwrap_or_else(|e| panic!("{e}: {}", self.text()))
    }

    fn content_type(&self) -> &str {
        self.headers[header::CONTENT_TYPE].to_str().unwrap()
    }

    /// The JSON of each `data: …\r\n\r\n` event.
    fn events(&self) -> Vec<Value> {
        let text = self.text();
        assert!(text.ends_with("\r\n\r\n"), "{text:?}");
        text.split_terminator("\r\n\r\n")
            .map(|event| {
                assert!(
                    !event.contains('\n'),
                    "one CRLF-framed line per event: {event:?}"
                );
                let data = event.strip_prefix("data: ").unwrap();
                serde_json::from_str(data).unwrap()
            })
            .collect()
    }
}

/// Sends a request with an API key in the header (`key`: `Some`) or none.
async fn send(
    sim: &SimHandle,
    method: Method,
    path: &str,
    key: Option<&str>,
    body: Option<&str>,
) -> Answer {
    let stream = tokio::net::TcpStream::connect(sim.addr()).await.unwrap();
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(conn);
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header(header::HOST, "sim")
        .header(header::CONTENT_TYPE, "application/json");
    if let Some(key) = key {
        request = request.header("x-goog-api-key", key);
    }
    let body = Bytes::from(body.unwrap_or("").to_owned());
    let response = sender
        .send_request(request.body(Full::new(body)).unwrap())
        .await
        .unwrap();
    let (parts, mut body) = response.into_parts();
    let mut frames = Vec::new();
    let mut broken = false;
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => {
                if let Ok(data) = frame.into_data() {
                    frames.push((Instant::now(), data));
                }
            }
            Err(_) => {
                broken = true;
                break;
            }
        }
    }
    Answer {
        status: parts.status,
        headers: parts.headers,
        frames,
        broken,
    }
}

async fn post(sim: &SimHandle, path: &str, body: &Value) -> Answer {
    send(sim, Method::POST, path, Some("k"), Some(&body.to_string())).await
}

fn user(text: &str) -> Value {
    json!({"contents": [{"role": "user", "parts": [{"text": text}]}]})
}

/// The identity every usage must satisfy; returns (prompt, candidates, thoughts).
fn usage(response: &Value) -> (u64, u64, u64) {
    let u = &response["usageMetadata"];
    let n = |k: &str| u[k].as_u64().unwrap_or(0);
    let (p, c, t) = (
        n("promptTokenCount"),
        n("candidatesTokenCount"),
        n("thoughtsTokenCount"),
    );
    assert_eq!(n("totalTokenCount"), p + c + t, "{u}");
    (p, c, t)
}

fn error_status(error: &Value) -> (u64, &str) {
    (
        error["error"]["code"].as_u64().unwrap(),
        error["error"]["status"].as_str().unwrap(),
    )
}

const GENERATE: &str = "/v1beta/models/gen-2.5-flash:generateContent";
const SSE: &str = "/v1beta/models/gen-2.5-flash:streamGenerateContent?alt=sse";
const ARRAY: &str = "/v1beta/models/gen-2.5-flash:streamGenerateContent";

#[tokio::test]
async fn generate_content_thinks_by_default_and_the_body_is_echoed_byte_for_byte() {
    let sim = sim(KnobSettings::default()).await;
    // 20 bytes → 5 prompt tokens → 3 × 5 + 40 = 55 thinking tokens.
    let answer = post(&sim, GENERATE, &user("Why is the sky blue?")).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.content_type(), "application/json");
    let r = answer.json();
    let (p, c, t) = usage(&r);
    assert_eq!((p, t), (5, 55));
    let text = r["candidates"][0]["content"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert!(text.starts_with("Simulated reply to \"Why is the sky blue?\"."));
    assert_eq!(c, crate::genai::text_tokens(text));
    assert_eq!(r["candidates"][0]["finishReason"], "STOP");
    assert_eq!(r["candidates"][0]["content"]["role"], "model");
    assert_eq!(r["modelVersion"], "gen-2.5-flash");
    let id = r["responseId"].as_str().unwrap().to_owned();
    let again = post(&sim, GENERATE, &user("Why is the sky blue?")).await;
    assert_eq!(again.body(), answer.body(), "deterministic");
    assert_eq!(again.json()["responseId"], id.as_str());

    // 2.0 never thinks; no thoughtsTokenCount at all.
    let r = post(
        &sim,
        "/v1/models/gen-2.0-flash:generateContent?key=q",
        &user("Why is the sky blue?"),
    )
    .await
    .json();
    assert_eq!(usage(&r).2, 0);
    assert!(r["usageMetadata"].get("thoughtsTokenCount").is_none());

    // Unmodelled fields, odd spacing and a thoughtSignature part reach the upstream untouched.
    let raw = r#"{ "contents":[{"role":"user","parts":[{"text":"hi"}]},
        {"role":"model","parts":[{"functionCall":{"name":"f","args":{"a":1}},"thoughtSignature":"c2ln"}]},
        {"role":"user","parts":[{"functionResponse":{"name":"f","response":{"ok":true}}}]}],
      "safetySettings":[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_ONLY_HIGH"}],
      "tools":[{"functionDeclarations":[{"name":"f","parameters":{"type":"OBJECT","properties":{"a":{"type":"INTEGER"}}}}]}],
      "generationConfig":{"temperature":0.25,"thinkingConfig":{"thinkingBudget":0}} }"#;
    let answer = send(
        &sim,
        Method::POST,
        "/v1beta/models/gen-2.5-pro:generateContent?key=abc",
        None,
        Some(raw),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    let r = answer.json();
    assert_eq!(usage(&r).2, 0, "a budget of 0 switches thinking off");
    let text = r["candidates"][0]["content"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert!(
        text.starts_with("Simulated reply to \"the result of f\"."),
        "{text}"
    );
    let echo = send(&sim, Method::GET, "/_sim/genai/last-request", None, None).await;
    assert_eq!(echo.status, StatusCode::OK);
    assert_eq!(echo.content_type(), "application/json");
    assert_eq!(echo.body(), raw.as_bytes());
    assert_eq!(
        echo.headers["x-sim-request"],
        "POST /v1beta/models/gen-2.5-pro:generateContent?key=abc"
    );
    assert_eq!(echo.headers["x-sim-auth"], "query");
    assert_eq!(sim.genai_last_request().unwrap(), raw.as_bytes());

    assert_eq!(
        sim.knobs()
            .served("POST /v1beta/models/{model}:generateContent"),
        3
    );
    assert_eq!(
        sim.knobs()
            .served("POST /v1/models/{model}:generateContent"),
        1
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn refusals_use_the_vendor_error_shape() {
    let sim = sim(KnobSettings::default()).await;
    let empty = send(&sim, Method::GET, "/_sim/genai/last-request", None, None).await;
    assert_eq!(empty.status, StatusCode::NOT_FOUND);

    let body = user("hello").to_string();
    let no_key = send(&sim, Method::POST, GENERATE, None, Some(&body)).await;
    assert_eq!(no_key.status, StatusCode::FORBIDDEN);
    assert_eq!(error_status(&no_key.json()), (403, "PERMISSION_DENIED"));
    let empty_key = send(&sim, Method::POST, GENERATE, Some(""), Some(&body)).await;
    assert_eq!(empty_key.status, StatusCode::FORBIDDEN);
    let echo = send(&sim, Method::GET, "/_sim/genai/last-request", None, None).await;
    assert_eq!(echo.headers["x-sim-auth"], "none");

    let unknown = post(&sim, "/v1beta/models/gen-9:generateContent", &user("x")).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(error_status(&unknown.json()), (404, "NOT_FOUND"));
    assert!(
        unknown.json()["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("models/gen-9 is not found")
    );

    let malformed = send(&sim, Method::POST, GENERATE, Some("k"), Some("{nope")).await;
    assert_eq!(error_status(&malformed.json()), (400, "INVALID_ARGUMENT"));
    assert_eq!(malformed.status, StatusCode::BAD_REQUEST);
    for bad in [
        json!({}),
        json!({"contents": []}),
        json!({"contents": [{"role": "user", "parts": []}]}),
        json!({"contents": [{"role": "user", "parts": [{"text": "x"}]}], "generationConfig": {"thinkingConfig": {"thinkingBudget": "lots"}}}),
    ] {
        let answer = post(&sim, GENERATE, &bad).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{bad}");
        assert_eq!(error_status(&answer.json()), (400, "INVALID_ARGUMENT"));
    }

    // Without alt=sse the stream's errors are wrapped in an array.
    let array = send(&sim, Method::POST, ARRAY, None, Some(&body)).await;
    assert_eq!(array.status, StatusCode::FORBIDDEN);
    assert_eq!(error_status(&array.json()[0]), (403, "PERMISSION_DENIED"));
    let sse = send(&sim, Method::POST, SSE, None, Some(&body)).await;
    assert_eq!(error_status(&sse.json()), (403, "PERMISSION_DENIED"));

    for (status, name) in [
        (429, "RESOURCE_EXHAUSTED"),
        (500, "INTERNAL"),
        (503, "UNAVAILABLE"),
    ] {
        sim.knobs().set(KnobSettings {
            fail_status: Some(status),
            fail_times: Some(2),
            ..KnobSettings::default()
        });
        let whole = post(&sim, GENERATE, &user("x")).await;
        assert_eq!(whole.status.as_u16(), status);
        assert_eq!(error_status(&whole.json()), (u64::from(status), name));
        let array = post(&sim, ARRAY, &user("x")).await;
        assert_eq!(array.status.as_u16(), status);
        assert_eq!(error_status(&array.json()[0]), (u64::from(status), name));
        assert_eq!(
            post(&sim, GENERATE, &user("x")).await.status,
            StatusCode::OK
        );
    }

    let wrong_method = send(&sim, Method::GET, GENERATE, Some("k"), None).await;
    assert_eq!(error_status(&wrong_method.json()), (404, "NOT_FOUND"));
    sim.shutdown().await;
}

#[tokio::test]
async fn sse_streams_are_crlf_framed_paced_and_accumulate_usage() {
    let sim = sim(KnobSettings {
        frame_interval_ms: Some(25),
        ..KnobSettings::default()
    })
    .await;
    let mut request = user(&"Tell me how rivers carve canyons over time. ".repeat(4));
    request["generationConfig"] = json!({"thinkingConfig": {"includeThoughts": true}});
    let started = Instant::now();
    let answer = post(&sim, SSE, &request).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.content_type(), "text/event-stream");
    assert!(!answer.text().contains("[DONE]") && !answer.text().contains("event:"));
    let events = answer.events();
    assert!(events.len() >= 6, "{}", events.len());
    // Spread over time: the last frame arrives about (n - 1) intervals after the first.
    let first = answer.frames.first().unwrap().0;
    let last = answer.frames.last().unwrap().0;
    let span = last - first;
    assert!(
        span >= Duration::from_millis(25 * (events.len() as u64 - 1) * 8 / 10),
        "{span:?} for {} events",
        events.len()
    );
    assert!(first - started < Duration::from_millis(200));

    let mut previous = (0, 0);
    let mut answer_started = false;
    for (i, event) in events.iter().enumerate() {
        let (p, c, t) = usage(event);
        assert_eq!(
            p,
            events[0]["usageMetadata"]["promptTokenCount"]
                .as_u64()
                .unwrap()
        );
        assert!(c >= previous.0 && t >= previous.1);
        previous = (c, t);
        let candidate = &event["candidates"][0];
        let thought = candidate["content"]["parts"][0]["thought"] == json!(true);
        assert!(!(thought && answer_started), "thoughts come first");
        answer_started |= !thought;
        assert_eq!(
            candidate.get("finishReason").is_some(),
            i == events.len() - 1
        );
    }
    assert!(events[0]["candidates"][0]["content"]["parts"][0]["thought"] == json!(true));
    let final_event = events.last().unwrap();
    assert_eq!(final_event["candidates"][0]["finishReason"], "STOP");
    assert!(final_event["candidates"][0]["content"]["parts"][0]["thoughtSignature"].is_string());

    // The whole answer carries the same final usage and the same text.
    let whole = post(&sim, GENERATE, &request).await.json();
    assert_eq!(whole["usageMetadata"], final_event["usageMetadata"]);
    let joined = |thought: bool| -> String {
        events
            .iter()
            .flat_map(|e| {
                e["candidates"][0]["content"]["parts"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .filter(|p| (p["thought"] == json!(true)) == thought)
            .map(|p| p["text"].as_str().unwrap().to_owned())
            .collect()
    };
    let parts = whole["candidates"][0]["content"]["parts"]
        .as_array()
        .unwrap();
    assert_eq!(parts[0]["text"].as_str().unwrap(), joined(true));
    assert_eq!(parts[0]["thought"], true);
    assert_eq!(parts[1]["text"].as_str().unwrap(), joined(false));
    assert!(parts[1]["thoughtSignature"].is_string());

    // The same chunks, as one streamed JSON array.
    let array = post(&sim, ARRAY, &request).await;
    assert_eq!(array.status, StatusCode::OK);
    assert_eq!(array.content_type(), "application/json");
    let text = array.text();
    assert!(text.starts_with("[{") && text.ends_with("}]"));
    assert_eq!(text.matches("}\r\n,\r\n{").count(), events.len() - 1);
    assert_eq!(array.json(), Value::Array(events.clone()));
    assert!(
        array.frames.len() >= events.len() / 2,
        "written piece by piece"
    );

    assert_eq!(
        sim.knobs()
            .served("POST /v1beta/models/{model}:streamGenerateContent"),
        2
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn stream_faults_follow_the_knobs() {
    let sim = sim(KnobSettings {
        frame_interval_ms: Some(1),
        error_after_frames: Some(2),
        ..KnobSettings::default()
    })
    .await;
    let request = user(&"a fairly long question about mountains ".repeat(4));
    let sse = post(&sim, SSE, &request).await;
    let events = sse.events();
    assert_eq!(events.len(), 3);
    assert_eq!(error_status(&events[2]), (500, "INTERNAL"));
    assert!(events[1]["candidates"][0].get("finishReason").is_none());

    let array = post(&sim, ARRAY, &request).await.json();
    let array = array.as_array().unwrap();
    assert_eq!(array.len(), 3);
    assert_eq!(error_status(&array[2]), (500, "INTERNAL"));

    sim.knobs().set(KnobSettings {
        frame_interval_ms: Some(1),
        error_after_frames: Some(0),
        ..KnobSettings::default()
    });
    let array = post(&sim, ARRAY, &request).await;
    assert_eq!(array.status, StatusCode::OK);
    assert_eq!(error_status(&array.json()[0]), (500, "INTERNAL"));

    sim.knobs().set(KnobSettings {
        frame_interval_ms: Some(1),
        cut_after_frames: Some(1),
        ..KnobSettings::default()
    });
    let cut = post(&sim, SSE, &request).await;
    assert!(cut.broken, "a cut stream must not end cleanly");
    assert_eq!(cut.events().len(), 1);
    sim.shutdown().await;
}

#[tokio::test]
async fn max_tokens_function_calls_count_tokens_and_models() {
    let sim = sim(KnobSettings {
        frame_interval_ms: Some(1),
        ..KnobSettings::default()
    })
    .await;
    // 5 prompt tokens → 55 thinking tokens; 60 leave 5 for the answer.
    let mut request = user("Why is the sky blue?");
    request["generationConfig"] = json!({"maxOutputTokens": 60});
    let r = post(&sim, GENERATE, &request).await.json();
    assert_eq!(r["candidates"][0]["finishReason"], "MAX_TOKENS");
    assert_eq!(usage(&r), (5, 5, 55));
    request["generationConfig"] =
        json!({"maxOutputTokens": 40, "thinkingConfig": {"thinkingBudget": 100}});
    let events = post(&sim, SSE, &request).await.events();
    let last = events.last().unwrap();
    assert_eq!(last["candidates"][0]["finishReason"], "MAX_TOKENS");
    assert!(last["candidates"][0]["content"].get("parts").is_none());
    assert_eq!(usage(last), (5, 0, 40));

    let mut request = user("Find flights to Oslo [call]");
    request["tools"] = json!([{"functionDeclarations": [{"name": "search_flights", "parameters": {"type": "OBJECT"}}]}]);
    let r = post(&sim, GENERATE, &request).await.json();
    let part = &r["candidates"][0]["content"]["parts"][0];
    assert_eq!(
        part["functionCall"],
        json!({"name": "search_flights", "args": {"query": "Find flights to Oslo"}})
    );
    assert!(part["thoughtSignature"].is_string());
    assert_eq!(r["candidates"][0]["finishReason"], "STOP");
    let events = post(&sim, SSE, &request).await.events();
    assert_eq!(events.len(), 1);
    assert_eq!(
        events[0]["candidates"][0]["content"]["parts"][0]["functionCall"]["name"],
        "search_flights"
    );
    assert_eq!(usage(&events[0]), usage(&r));

    let generate = json!({
        "systemInstruction": {"parts": [{"text": "You are terse."}]},
        "contents": [{"role": "user", "parts": [{"text": "Hello there"}, {"inlineData": {"mimeType": "image/png", "data": "AAAA"}}]}],
    });
    let prompt = usage(&post(&sim, GENERATE, &generate).await.json()).0;
    assert_eq!(prompt, 4 + 3 + 258);
    let count = "/v1beta/models/gen-2.5-flash:countTokens";
    let counted = post(&sim, count, &json!({"generateContentRequest": generate}))
        .await
        .json();
    assert_eq!(counted["totalTokens"], prompt);
    let counted = post(&sim, count, &json!({"contents": generate["contents"]}))
        .await
        .json();
    assert_eq!(counted["totalTokens"], 3 + 258);
    assert_eq!(
        counted["promptTokensDetails"],
        json!([{"modality": "TEXT", "tokenCount": 3}, {"modality": "IMAGE", "tokenCount": 258}])
    );
    assert_eq!(
        sim.knobs()
            .served("POST /v1beta/models/{model}:countTokens"),
        2
    );

    let list = send(&sim, Method::GET, "/v1beta/models", Some("k"), None)
        .await
        .json();
    let names: Vec<&str> = list["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "models/gen-2.0-flash",
            "models/gen-2.5-flash",
            "models/gen-2.5-flash-lite",
            "models/gen-2.5-pro",
            "models/gen-3-pro-preview",
            "models/gen-2.5-flash-image",
            "models/gen-3-pro-image-preview"
        ]
    );
    let model = send(
        &sim,
        Method::GET,
        "/v1/models/gen-2.5-pro?key=k",
        None,
        None,
    )
    .await
    .json();
    assert_eq!(model["displayName"], "Gen 2.5 Pro");
    assert_eq!(model["thinking"], true);
    assert_eq!(model["outputTokenLimit"], 65_536);
    assert!(
        model["supportedGenerationMethods"]
            .as_array()
            .unwrap()
            .contains(&json!("generateContent"))
    );
    let missing = send(&sim, Method::GET, "/v1beta/models/gen-1", Some("k"), None).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    let anonymous = send(&sim, Method::GET, "/v1beta/models", None, None).await;
    assert_eq!(anonymous.status, StatusCode::FORBIDDEN);
    assert_eq!(sim.knobs().served("GET /v1beta/models"), 2);
    assert_eq!(sim.knobs().served("GET /v1beta/models/{model}"), 1);
    sim.shutdown().await;
}
