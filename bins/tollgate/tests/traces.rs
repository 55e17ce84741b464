//! Traces as an operator running a collector receives them (docs/operations.md, "Traces"): the
//! built binary with only `OTEL_EXPORTER_OTLP_ENDPOINT` set, a receiver decoding what arrives
//! with the official OTLP proto definitions (`opentelemetry-proto`), and a client that sends its
//! own `traceparent`. The span tree and attributes of an embeddings request that fails over, and
//! of a stream, are what a trace backend would show.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::{Gateway, Scratch};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tollgate_sim::KnobSettings;
use tollgate_store::Store;

/// An OTLP/HTTP receiver: every span of every `POST /v1/traces`, decoded.
async fn receiver() -> (String, Arc<Mutex<Vec<Span>>>) {
    let spans = Arc::new(Mutex::new(Vec::new()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let kept = spans.clone();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let kept = kept.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(
                    move |request: http::Request<hyper::body::Incoming>| {
                        let kept = kept.clone();
                        async move {
                            assert_eq!(request.uri().path(), "/v1/traces");
                            assert_eq!(request.headers()["content-type"], "application/x-protobuf");
                            let body = request.into_body().collect().await.unwrap().to_bytes();
                            let export = ExportTraceServiceRequest::decode(body).unwrap();
                            for resource in export.resource_spans {
                                for scope in resource.scope_spans {
                                    kept.lock().unwrap().extend(scope.spans);
                                }
                            }
                            Ok::<_, std::convert::Infallible>(http::Response::new(Full::new(
                                Bytes::new(),
                            )))
                        }
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (format!("http://{addr}"), spans)
}

/// An embeddings upstream that answers every call with one small vector, keeping the
/// `traceparent` each call carried.
async fn embeddings_upstream() -> (String, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let kept = seen.clone();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let kept = kept.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(
                    move |request: http::Request<hyper::body::Incoming>| {
                        let kept = kept.clone();
                        async move {
                            let traceparent = request
                                .headers()
                                .get("traceparent")
                                .map(|v| v.to_str().unwrap().to_owned());
                            kept.lock().unwrap().push(traceparent.unwrap_or_default());
                            let answer = r#"{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.25,-0.5,0.125]}],"model":"text-embedding-3-small","usage":{"prompt_tokens":2,"total_tokens":2}}"#;
                            let mut response = http::Response::new(Full::new(Bytes::from(answer)));
                            response
                                .headers_mut()
                                .insert("content-type", "application/json".parse().unwrap());
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
    (format!("http://{addr}"), seen)
}

/// A string or integer attribute of `span`, as text.
fn attribute(span: &Span, key: &str) -> Option<String> {
    span.attributes.iter().find(|a| a.key == key).and_then(|a| {
        match a.value.as_ref()?.value.as_ref()? {
            Value::StringValue(s) => Some(s.clone()),
            Value::IntValue(i) => Some(i.to_string()),
            Value::BoolValue(b) => Some(b.to_string()),
            other => Some(format!("{other:?}")),
        }
    })
}

/// The spans of trace `trace` once `count` have arrived.
async fn trace_of(spans: &Mutex<Vec<Span>>, trace: &[u8], count: usize) -> Vec<Span> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mine: Vec<Span> = spans
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.trace_id == trace)
            .cloned()
            .collect();
        if mine.len() >= count {
            return mine;
        }
        assert!(
            Instant::now() < deadline,
            "{} of {count} spans arrived: {mine:#?}",
            mine.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Sends `body` to `path` with `traceparent`; the whole answer.
async fn send(addr: &str, path: &str, auth: &str, traceparent: &str, body: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}\r\ntraceparent: {traceparent}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    answer
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_receives_each_request_as_a_tree_under_the_clients_trace() {
    let scratch = Scratch::new("traces");
    let sim = tollgate_sim::start(
        "127.0.0.1:0".parse().unwrap(),
        KnobSettings {
            task_queued_ms: Some(300),
            task_running_ms: Some(600),
            ..KnobSettings::default()
        },
    )
    .await
    .unwrap();
    let (collector, spans) = receiver().await;
    let (upstream, traceparents) = embeddings_upstream().await;
    let text = format!(
        r#"
[simulator]
enabled = false

[tasks]
first_poll_ms = 200
poll_interval_ms = 300

# Nothing listens here: the call fails over to the next channel.
[[channels]]
name = "down"
format = "openai-embeddings"
base_url = "http://127.0.0.1:1"
connect_timeout_ms = 2000

[[channels]]
name = "emb"
format = "openai-embeddings"
base_url = "{upstream}"

[[channels]]
name = "gen"
format = "genai"
base_url = "{sim}"
api_key_env = "HOME"

[[channels]]
name = "video"
format = "generic-video"
base_url = "{sim}"

[models."wave-3-0-video"]
kind = "generic-video"
channels = ["video"]
price = {{ meter = "video_seconds", per_second = "0.1" }}

[models."text-embedding-3-small"]
kind = "embeddings"
channels = ["down", "emb"]
price = {{ meter = "tokens", per_million_tokens = "0.02" }}

[models."gen-2.5-flash"]
kind = "native-text"
channels = ["gen"]
price = {{ meter = "text_tokens", input_per_million_tokens = "0.10", output_per_million_tokens = "0.40" }}
"#,
        sim = sim.base_url()
    );
    let config = scratch.dir.join("tollgate.toml");
    std::fs::write(&config, text).unwrap();
    let db = scratch.sqlite_url();
    // The standard variable alone turns export on.
    let gateway = Gateway::start_with(
        &scratch,
        "gateway",
        &config,
        &db,
        "127.0.0.1:0",
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.as_str()),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ],
    )
    .await;
    let store = Store::connect(&db).await.unwrap();
    let (account, key) = store
        .create_account(&format!("traces-{}", scratch.tag), "10".parse().unwrap())
        .await
        .unwrap();
    let bearer = format!("Authorization: Bearer {}", key.secret);

    // An embeddings request in the client's trace 4bf9…, under its span 00f0….
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let client_span = "00f067aa0ba902b7";
    send(
        &gateway.addr,
        "/v1/embeddings",
        &bearer,
        &format!("00-{trace}-{client_span}-01"),
        r#"{"model":"text-embedding-3-small","input":"trace me"}"#,
    )
    .await;
    let tree = trace_of(&spans, &decode(trace), 3).await;
    let server = tree
        .iter()
        .find(|s| s.kind == SpanKind::Server as i32)
        .expect("a server span");
    assert_eq!(hex(&server.parent_span_id), client_span, "{server:#?}");
    assert_eq!(server.name, "POST embeddings");
    for (key, want) in [
        ("gen_ai.operation.name", "embeddings"),
        ("gen_ai.request.model", "text-embedding-3-small"),
        ("gen_ai.usage.input_tokens", "2"),
        ("tollgate.meter", "tokens"),
        ("tollgate.channel", "emb"),
        ("tollgate.account", account.name.as_str()),
        ("http.response.status_code", "200"),
    ] {
        assert_eq!(
            attribute(server, key).as_deref(),
            Some(want),
            "{key} of {server:#?}"
        );
    }
    assert!(
        attribute(server, "tollgate.charge").is_some(),
        "{server:#?}"
    );
    // One client span per attempt, children of the server span: the failed one, then the one
    // that answered.
    let mut attempts: Vec<&Span> = tree
        .iter()
        .filter(|s| s.kind == SpanKind::Client as i32)
        .collect();
    attempts.sort_by_key(|s| s.start_time_unix_nano);
    assert_eq!(attempts.len(), 2, "{tree:#?}");
    for attempt in &attempts {
        assert_eq!(attempt.parent_span_id, server.span_id);
    }
    assert_eq!(
        attribute(attempts[0], "tollgate.channel").as_deref(),
        Some("down")
    );
    assert!(
        attribute(attempts[0], "error.type").is_some(),
        "{:#?}",
        attempts[0]
    );
    assert_eq!(
        attribute(attempts[1], "tollgate.channel").as_deref(),
        Some("emb")
    );
    assert_eq!(attribute(attempts[1], "error.type"), None);
    // The upstream was told the trace and the attempt's span, so its own spans join the tree.
    assert_eq!(
        *traceparents.lock().unwrap(),
        [format!("00-{trace}-{}-01", hex(&attempts[1].span_id))]
    );

    // A stream: its server span carries the tokens the stream was settled on.
    let trace = "0af7651916cd43dd8448eb211c80319c";
    send(
        &gateway.addr,
        "/v1beta/models/gen-2.5-flash:streamGenerateContent?alt=sse",
        &format!("x-goog-api-key: {}", key.secret),
        &format!("00-{trace}-b7ad6b7169203331-01"),
        r#"{"contents":[{"role":"user","parts":[{"text":"A short story."}]}],"generationConfig":{"maxOutputTokens":64}}"#,
    )
    .await;
    let tree = trace_of(&spans, &decode(trace), 2).await;
    let server = tree
        .iter()
        .find(|s| s.kind == SpanKind::Server as i32)
        .expect("a server span");
    assert_eq!(
        attribute(server, "gen_ai.operation.name").as_deref(),
        Some("generate_content")
    );
    assert_eq!(
        attribute(server, "tollgate.meter").as_deref(),
        Some("text_tokens")
    );
    for key in ["gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"] {
        assert!(attribute(server, key).is_some(), "{key} of {server:#?}");
    }

    // Issue 42: a client's unsampled traceparent (flags 00) does not turn the gateway's own
    // tracing off for its request; the span is still in the client's trace.
    let unsampled = "0af7651916cd43dd8448eb211c80319c";
    send(
        &gateway.addr,
        "/v1/embeddings",
        &bearer,
        &format!("00-{unsampled}-b9c7c989f97918e1-00"),
        r#"{"model":"text-embedding-3-small","input":"trace me anyway"}"#,
    )
    .await;
    let tree = trace_of(&spans, &decode(unsampled), 1).await;
    assert!(
        tree.iter().any(|s| s.kind == SpanKind::Server as i32),
        "the server span of an unsampled client's request: {tree:#?}"
    );

    // A video task: its submit, then each poll (on the task workers, after the request ended)
    // in the same trace, children of the submit with a link to it; the last settles it.
    let trace = "5b8aa5a2d2c872e8321cf37308d69df2";
    let answer = send(
        &gateway.addr,
        "/v1/video/generations",
        &bearer,
        &format!("00-{trace}-051581bf3cb55c13-01"),
        r#"{"model":"wave-3-0-video","prompt":"a traced cat","seconds":"3"}"#,
    )
    .await;
    let task = answer.split("\"id\":\"").nth(1).unwrap();
    let task = &task[..task.find('"').unwrap()];
    let charge = support::task_charge(&store, &account.id, task).await;
    let settled = |spans: &[Span]| {
        spans
            .iter()
            .any(|s| attribute(s, "tollgate.task.state").as_deref() == Some("succeeded"))
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    let tree = loop {
        let tree = trace_of(&spans, &decode(trace), 2).await;
        if settled(&tree) {
            break tree;
        }
        assert!(Instant::now() < deadline, "no settling poll: {tree:#?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let submit = tree
        .iter()
        .find(|s| s.kind == SpanKind::Server as i32)
        .expect("the submit's server span");
    assert_eq!(submit.name, "POST video_generations");
    let polls: Vec<&Span> = tree.iter().filter(|s| s.name == "task poll").collect();
    assert!(!polls.is_empty(), "{tree:#?}");
    for poll in &polls {
        assert_eq!(poll.parent_span_id, submit.span_id, "{poll:#?}");
        assert_eq!(poll.links.len(), 1, "{poll:#?}");
        assert_eq!(poll.links[0].span_id, submit.span_id);
        assert_eq!(poll.links[0].trace_id, submit.trace_id);
        assert_eq!(attribute(poll, "tollgate.task").as_deref(), Some(task));
        assert_eq!(
            attribute(poll, "tollgate.channel").as_deref(),
            Some("video")
        );
        assert!(poll.start_time_unix_nano >= submit.end_time_unix_nano);
    }
    let last = polls
        .iter()
        .find(|s| attribute(s, "tollgate.task.state").as_deref() == Some("succeeded"))
        .unwrap();
    assert_eq!(
        attribute(last, "tollgate.charge"),
        Some(tollgate_billing::Amount::from_nanos(-charge.amount.nanos()).to_string()),
        "{last:#?}"
    );
}

fn decode(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}
