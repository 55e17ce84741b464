//! The golden billing vectors (`crates/metering/vectors/`, format in its README): each file is a
//! client's request, the upstream's answer and a price, and the hold, bound, quantity, measure
//! and charge the gateway must arrive at. Each runs through the real request path — a gateway
//! with the vector's model on a channel whose upstream answers what the vector says — and its
//! charge is read back as a client would, at `GET /v1/charges/{request_id}`. A session's vector
//! (`"session"` in place of `"request"`) opens a live session through the gateway to a scripted
//! WebSocket upstream, plays the client's side, and reads every response's charge back the same
//! way, under the upgrade's request id.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use base64::Engine;
use bytes::Bytes;
use common::{SocketReply, TestGateway, message_is, socket_server, typed_server};
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

fn vectors() -> Vec<(String, Value)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("crates/metering/vectors");
    let mut found: Vec<(String, Value)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            (name, value)
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

/// The vector's upstream: each request answered by the first entry whose method (and path
/// prefix, when it has one) matches.
async fn upstream(entries: &Value) -> String {
    let entries = Arc::new(entries.as_array().unwrap().clone());
    typed_server(move |parts| {
        let entry = entries
            .iter()
            .find(|e| {
                e["method"].as_str() == Some(parts.method.as_str())
                    && e["path"]
                        .as_str()
                        .is_none_or(|p| parts.uri.path().starts_with(p))
            })
            .unwrap_or_else(|| panic!("no upstream answer for {} {}", parts.method, parts.uri));
        let status = entry["status"].as_u64().unwrap_or(200) as u16;
        let body = match entry["body_text"].as_str() {
            Some(text) => Bytes::from(text.to_owned()),
            None => Bytes::from(entry["body"].to_string()),
        };
        let content_type = entry["content_type"]
            .as_str()
            .unwrap_or("application/json")
            .to_owned();
        (status, Some(content_type), body)
    })
    .await
}

/// Task vectors run the pollers, fast; the others none.
fn tasks_table(vector: &Value) -> &'static str {
    if vector["task"].as_bool() == Some(true) {
        "[tasks]\nfirst_poll_ms = 100\npoll_interval_ms = 200\nsweep_interval_seconds = 1\ntrusted_media_hosts = [\"media.example\"]\n"
    } else {
        "[tasks]\nworkers = false\n"
    }
}

/// A JSON price field as TOML: strings and numbers as they are, a table (`per_second_by_size`)
/// inline.
fn toml_value(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let fields: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{} = {}", Value::from(k.as_str()), toml_value(v)))
                .collect();
            format!("{{ {} }}", fields.join(", "))
        }
        other => other.to_string(),
    }
}

fn config(vector: &Value, base_url: &str) -> String {
    let model = &vector["model"];
    let price: Vec<String> = model["price"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| format!("{k} = {}", toml_value(v)))
        .collect();
    // Any other field of the model's table (`session`, `upstream_model`) as it is.
    let rest: String = model
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| !["name", "kind", "price"].contains(&k.as_str()))
        .map(|(k, v)| format!("{k} = {}\n", toml_value(v)))
        .collect();
    format!(
        r#"
[simulator]
enabled = false

{tasks}
[[channels]]
name = "vector"
format = "{format}"
base_url = "{base_url}"

[models."{name}"]
kind = "{kind}"
channels = ["vector"]
price = {{ {price} }}
{rest}"#,
        tasks = tasks_table(vector),
        format = vector["channel"]["format"].as_str().unwrap(),
        name = model["name"].as_str().unwrap(),
        kind = model["kind"].as_str().unwrap(),
        price = price.join(", "),
    )
}

/// `"$pcm:RATE:MS"` anywhere in `value` as the base64 of MS milliseconds of PCM16 mono at RATE
/// Hz (a 440 Hz tone): a vector's audio by its length, not its bytes.
fn with_audio(value: &Value) -> Value {
    match value {
        Value::String(text) => match text.strip_prefix("$pcm:").and_then(|r| r.split_once(':')) {
            Some((rate, ms)) => {
                let (rate, ms): (u64, u64) = (rate.parse().unwrap(), ms.parse().unwrap());
                let samples: Vec<u8> = (0..rate * ms / 1_000)
                    .flat_map(|i| {
                        let t = i as f64 / rate as f64;
                        (((t * 440.0 * std::f64::consts::TAU).sin() * 8_000.0) as i16).to_le_bytes()
                    })
                    .collect();
                Value::from(base64::engine::general_purpose::STANDARD.encode(samples))
            }
            None => value.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(with_audio).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), with_audio(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The frames of a vector's socket script, their audio filled in.
fn frames(list: &Value) -> Vec<String> {
    list.as_array()
        .map(|items| items.iter().map(|f| with_audio(f).to_string()).collect())
        .unwrap_or_default()
}

/// The vector's scripted vendor socket (Gemini Live's frames binary, as Google sends them).
async fn socket_upstream(vector: &Value) -> String {
    let script = &vector["session"]["upstream"];
    let replies = script["replies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| SocketReply {
            on: r["on"].as_str().unwrap().to_owned(),
            frames: frames(&r["send"]),
            close: r["close"].as_bool().unwrap_or(false),
        })
        .collect();
    let binary = vector["channel"]["format"] == "gemini-live";
    socket_server(frames(&script["open"]), replies, binary).await
}

/// Plays a session vector's client: connects as `request_id` with `key`, sends and awaits as
/// its script says, then hangs up (unless the gateway closed first) and waits for the session
/// to be settled. What went other than the script says, in words.
async fn play_session(
    gateway: &TestGateway,
    vector: &Value,
    account: &str,
    key: &str,
    request_id: &str,
) -> Vec<String> {
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let session = &vector["session"];
    let url = format!("ws://{}{}", gateway.addr, session["path"].as_str().unwrap());
    let mut request = url.into_client_request().unwrap();
    for (name, value) in [
        ("authorization", format!("Bearer {key}")),
        ("x-goog-api-key", key.to_owned()),
        ("x-request-id", request_id.to_owned()),
    ] {
        request.headers_mut().insert(name, value.parse().unwrap());
    }
    let mut socket = match tokio_tungstenite::connect_async(request).await {
        Ok((socket, _)) => socket,
        Err(e) => return vec![format!("connect: {e}")],
    };
    let mut wrong = Vec::new();
    let mut closed = None;
    for step in session["client"].as_array().unwrap() {
        if let Some(event) = step.get("send") {
            let _ = socket
                .send(Message::text(with_audio(event).to_string()))
                .await;
            continue;
        }
        let awaited = step["await"].as_str().unwrap();
        let found = tokio::time::timeout(std::time::Duration::from_secs(10), async {
            loop {
                let text = match socket.next().await {
                    Some(Ok(Message::Text(text))) => text.as_str().to_owned(),
                    Some(Ok(Message::Binary(bytes))) => {
                        String::from_utf8_lossy(&bytes).into_owned()
                    }
                    Some(Ok(Message::Close(frame))) => {
                        let code = frame.map_or(1005, |f| u16::from(f.code));
                        return Err(code);
                    }
                    Some(Ok(_)) => continue,
                    _ => return Err(1006),
                };
                let message: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                if message_is(&message, awaited) {
                    return Ok(());
                }
            }
        })
        .await;
        match found {
            Ok(Ok(())) => {}
            Ok(Err(code)) if awaited == "close" => closed = Some(code),
            Ok(Err(code)) => {
                wrong.push(format!("closed {code} awaiting {awaited}"));
                closed = Some(code);
                break;
            }
            Err(_) => {
                wrong.push(format!("no {awaited} within 10 s"));
                break;
            }
        }
    }
    if let Some(want) = session["expect_close"].as_u64()
        && closed.map(u64::from) != Some(want)
    {
        wrong.push(format!("closed {closed:?}, not {want}"));
    }
    if closed.is_none() {
        let _ = socket.close(None).await;
    }
    gateway.sessions_closed(account).await;
    wrong
}

/// How one explained charge differs from what a vector expects of it.
fn compare(expect: &Value, explained: &Value) -> Vec<String> {
    let mut wrong = Vec::new();
    // A session's charge by charge; a request's `charged` is its total, checked apart.
    if let (Some(want), true) = (expect["charged"].as_str(), expect.get("status").is_none()) {
        let got = explained["charged"].as_str().unwrap_or("0");
        if want.parse::<tollgate_billing::Amount>().ok() != got.parse().ok() {
            wrong.push(format!("charged {got}, not {want}"));
        }
    }
    for field in [
        "model",
        "hold",
        "bound",
        "bound_basis",
        "quantity",
        "measured",
        "exact",
        "priced",
        "cut_by_bound",
        "note",
    ] {
        if let Some(want) = expect.get(field)
            && explained[field] != *want
        {
            wrong.push(format!("{field} {}, not {want}", explained[field]));
        }
    }
    if let Some(anomaly) = expect["anomaly"].as_bool()
        && explained["anomaly"].is_string() != anomaly
    {
        wrong.push(format!("anomaly {}", explained["anomaly"]));
    }
    if explained.is_object() && !explained["price_version"].is_u64() {
        wrong.push(format!("price version {}", explained["price_version"]));
    }
    wrong
}

/// Sends a vector's HTTP request (and waits for its task to end, for a task's): the answer's
/// status and request id.
async fn send_request(
    gateway: &TestGateway,
    name: &str,
    vector: &Value,
    key: &str,
) -> (u16, String, String) {
    let request = &vector["request"];
    let path = request["path"].as_str().unwrap();
    let auth = format!("Bearer {key}");
    // A multipart request: its text fields and a silent WAV of the seconds asked.
    let (content_type, body) = match request.get("multipart") {
        Some(form) => {
            let fields: Vec<(&str, &str)> = form["fields"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str().unwrap()))
                .collect();
            let seconds = form["silent_wav_seconds"].as_u64().unwrap() as u32;
            common::multipart(&fields, "vector.wav", &common::silent_wav(seconds))
        }
        None => (
            "application/json".to_owned(),
            serde_json::to_vec(&request["body"]).unwrap(),
        ),
    };
    let headers = [
        ("authorization", auth.as_str()),
        ("x-goog-api-key", key),
        ("content-type", content_type.as_str()),
    ];
    let reply = gateway
        .request(request["method"].as_str().unwrap(), path, &headers, body)
        .await;
    let request_id = reply.headers["x-request-id"].to_str().unwrap().to_owned();
    // A task is charged when a poller sees it end: wait for its row to.
    if vector["task"].as_bool() == Some(true) && reply.status == 200 {
        let id = reply.json()["id"].as_str().unwrap().to_owned();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !gateway
            .store
            .task(&id)
            .await
            .unwrap()
            .is_some_and(|t| t.state.is_terminal())
        {
            assert!(
                std::time::Instant::now() < deadline,
                "{name}: task {id} never ended"
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
    (reply.status, request_id, reply.text())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_golden_vector_is_charged_as_it_says() {
    let vectors = vectors();
    assert!(vectors.len() >= 20, "{} vectors", vectors.len());
    let mut failures = Vec::new();
    for (name, vector) in &vectors {
        let session = vector.get("session").is_some();
        let base_url = if session {
            socket_upstream(vector).await
        } else {
            upstream(&vector["upstream"]).await
        };
        let gateway = TestGateway::with_config(&config(vector, &base_url)).await;
        tollgate_gateway::build::load_prices(&gateway.state)
            .await
            .unwrap();
        let (account, key) = gateway.account("10").await;
        let expect = &vector["expect"];
        let mut wrong = Vec::new();
        let request_id = if session {
            let request_id = format!("vector-{}", name.trim_end_matches(".json"));
            wrong.extend(play_session(&gateway, vector, &account, &key, &request_id).await);
            request_id
        } else {
            let (status, request_id, body) = send_request(&gateway, name, vector, &key).await;
            if Some(u64::from(status)) != expect["status"].as_u64() {
                wrong.push(format!("status {status} ({body})"));
            }
            request_id
        };
        let charges = gateway
            .get(&format!("/v1/charges/{request_id}"), &key)
            .await;
        let charges = charges.json();
        let charged = charges["charged"].as_str().unwrap_or("0");
        let explained: Vec<Value> = charges["data"].as_array().cloned().unwrap_or_default();
        if std::env::var_os("TOLLGATE_VECTORS_PRINT").is_some() {
            eprintln!("{name}: {explained:#?}");
        }
        if let Some(want) = expect["charged"].as_str()
            && want.parse::<tollgate_billing::Amount>().unwrap()
                != charged.parse::<tollgate_billing::Amount>().unwrap()
        {
            wrong.push(format!("charged {charged}, not {want}"));
        }
        match expect.get("charges").and_then(Value::as_array) {
            // A session: each response's charge, in order.
            Some(each) => {
                if each.len() != explained.len() {
                    wrong.push(format!("{} charges, not {}", explained.len(), each.len()));
                }
                for (i, (want, got)) in each.iter().zip(&explained).enumerate() {
                    wrong.extend(
                        compare(want, got)
                            .into_iter()
                            .map(|w| format!("charge {i}: {w}")),
                    );
                }
            }
            None => wrong.extend(compare(expect, explained.first().unwrap_or(&Value::Null))),
        }
        // Whatever the vector, the books hold and the charge re-derives.
        // (On a shared PostgreSQL database, only this account's.)
        let audit = gateway.store.audit().await.unwrap();
        let recompute = gateway.store.recompute().await.unwrap();
        let mine: Vec<_> = audit
            .violations
            .iter()
            .chain(&recompute.violations)
            .filter(|v| v.subject.contains(&account))
            .collect();
        if !mine.is_empty() {
            wrong.push(format!("audit {mine:?}"));
        }
        if !wrong.is_empty() {
            failures.push(format!("{name}: {}", wrong.join("; ")));
        }
        gateway.stop().await;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
