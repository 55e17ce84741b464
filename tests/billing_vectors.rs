//! The golden billing vectors (`crates/metering/vectors/`, format in its README): each file is a
//! client's request, the upstream's answer and a price, and the hold, bound, quantity, measure
//! and charge the gateway must arrive at. Each runs through the real request path — a gateway
//! with the vector's model on a channel whose upstream answers what the vector says — and its
//! charge is read back as a client would, at `GET /v1/charges/{request_id}`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use bytes::Bytes;
use common::{TestGateway, typed_server};
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
"#,
        tasks = tasks_table(vector),
        format = vector["channel"]["format"].as_str().unwrap(),
        name = model["name"].as_str().unwrap(),
        kind = model["kind"].as_str().unwrap(),
        price = price.join(", "),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_golden_vector_is_charged_as_it_says() {
    let vectors = vectors();
    assert!(vectors.len() >= 20, "{} vectors", vectors.len());
    let mut failures = Vec::new();
    for (name, vector) in &vectors {
        let base_url = upstream(&vector["upstream"]).await;
        let gateway = TestGateway::with_config(&config(vector, &base_url)).await;
        tollgate_gateway::build::load_prices(&gateway.state)
            .await
            .unwrap();
        let (account, key) = gateway.account("10").await;
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
            ("x-goog-api-key", key.as_str()),
            ("content-type", content_type.as_str()),
        ];
        let reply = gateway
            .request(request["method"].as_str().unwrap(), path, &headers, body)
            .await;
        let expect = &vector["expect"];
        let mut wrong = Vec::new();
        if Some(u64::from(reply.status)) != expect["status"].as_u64() {
            wrong.push(format!(
                "status {} ({})",
                reply.status,
                String::from_utf8_lossy(&reply.body)
            ));
        }
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
        let charges = gateway
            .get(&format!("/v1/charges/{request_id}"), &key)
            .await;
        let charges = charges.json();
        let charged = charges["charged"].as_str().unwrap_or("0");
        let explained = charges["data"].get(0).cloned().unwrap_or(Value::Null);
        if std::env::var_os("TOLLGATE_VECTORS_PRINT").is_some() {
            eprintln!("{name}: {explained:#}");
        }
        if let Some(want) = expect["charged"].as_str()
            && want.parse::<tollgate_billing::Amount>().unwrap()
                != charged.parse::<tollgate_billing::Amount>().unwrap()
        {
            wrong.push(format!("charged {charged}, not {want}"));
        }
        for field in [
            "hold",
            "bound",
            "bound_basis",
            "quantity",
            "measured",
            "exact",
            "priced",
            "cut_by_bound",
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
