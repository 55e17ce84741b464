//! The `/metrics` exposition as operators' dashboards and alerts depend on it: every series of
//! `docs/metrics-series.txt` (name, type, label names) is exposed as listed, and nothing is
//! exposed that the list does not name — so a change of how the exposition is written (issue
//! 25: a well-kept crate instead of hand-written text) cannot rename or drop a series unseen.
//! The Grafana dashboard (`docs/grafana/tollgate.json`) queries only series the list has.
//!
//! `TOLLGATE_METRICS_WRITE=1 cargo test -p tollgate-e2e --test metrics_exposition` rewrites the
//! list from the exposition (then read the diff).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::TestGateway;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use tollgate_sim::KnobSettings;
use tollgate_store::AccessPolicy;

/// A family of the exposition: its type and the label names its samples carry.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Family {
    kind: String,
    labels: BTreeSet<String>,
}

/// The families of a Prometheus text exposition (format 0.0.4): `# TYPE` lines, and the label
/// names of each sample (a histogram's `_bucket`, `_sum` and `_count` samples are its own;
/// `le` is the histogram's, not a label of the series).
fn families(text: &str) -> BTreeMap<String, Family> {
    let mut found: BTreeMap<String, Family> = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            found.entry(name.to_owned()).or_default().kind = kind.to_owned();
            continue;
        }
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let name_end = line.find(['{', ' ']).unwrap();
        let sample = &line[..name_end];
        let family = family_of(&found, sample).to_owned();
        let entry = found.entry(family).or_default();
        if line[name_end..].starts_with('{') {
            let labels = &line[name_end + 1..line.find('}').unwrap()];
            for pair in labels.split("\",") {
                let key = pair.split('=').next().unwrap().trim_start_matches(',');
                if !key.is_empty() && key != "le" {
                    entry.labels.insert(key.to_owned());
                }
            }
        }
    }
    found
}

/// `docs/metrics-series.txt`: `name type label,label…` a line.
fn catalogue() -> (std::path::PathBuf, BTreeMap<String, Family>) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/metrics-series.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let listed = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let mut parts = l.split_whitespace();
            let name = parts.next().unwrap().to_owned();
            let kind = parts.next().unwrap().to_owned();
            let labels = parts
                .next()
                .map(|l| l.split(',').map(str::to_owned).collect())
                .unwrap_or_default();
            (name, Family { kind, labels })
        })
        .collect();
    (path, listed)
}

/// The exposition after traffic that gives every labelled family samples: answered, refused
/// and failed requests of several endpoints, a charge, a speech stream, an access policy's and
/// a daily budget's refusals, a lying upstream's cut charge, an upstream refusing the gateway's
/// key, and a video-task event.
async fn exposition() -> (String, bool) {
    let gw = TestGateway::start().await;
    let (account, key) = gw.account("5").await;
    let embed = |model: &str| json!({"model": model, "input": "metrics"});
    gw.post_json("/v1/embeddings", &key, &embed("text-embedding-3-small"))
        .await;
    gw.post_json(
        "/v1/embeddings",
        "sk-not-a-key",
        &embed("text-embedding-3-small"),
    )
    .await;
    gw.post_json("/v1/embeddings", &key, &embed("no-such-model"))
        .await;
    gw.post_json(
        "/v1/t2a_v2",
        &key,
        &json!({"model": "speech-2.8-hd", "text": "metrics", "stream": true,
                "voice_setting": {"voice_id": "English_Graceful_Lady"}}),
    )
    .await;
    // A key held to one model and a budget of two requests.
    let limited = gw
        .key_with(
            &account,
            AccessPolicy {
                models: Some(vec!["text-embedding-3-small".into()]),
                daily_budget: Some("0.00000001".parse().unwrap()),
                ..AccessPolicy::default()
            },
        )
        .await;
    gw.post_json(
        "/v1/embeddings",
        &limited.secret,
        &embed("text-embedding-3-large"),
    )
    .await;
    for _ in 0..3 {
        gw.post_json(
            "/v1/embeddings",
            &limited.secret,
            &embed("text-embedding-3-small"),
        )
        .await;
    }
    // A lying upstream (its usage cut to the bound), then one that refuses the gateway's key.
    gw.set_knobs(KnobSettings {
        report_usage: Some(1_000_000_000),
        ..KnobSettings::default()
    });
    gw.post_json("/v1/embeddings", &key, &embed("text-embedding-3-small"))
        .await;
    gw.set_knobs(KnobSettings {
        fail_status: Some(401),
        fail_times: Some(1),
        ..KnobSettings::default()
    });
    gw.post_json("/v1/embeddings", &key, &embed("text-embedding-3-small"))
        .await;
    gw.set_knobs(KnobSettings::default());
    // This gateway serves no video model (tests/video_tasks.rs checks the events of real
    // tasks): the event is counted as the task machinery counts it.
    gw.state.metrics.task_event("submitted");
    gw.settled(&account).await;
    let text =
        String::from_utf8(gw.request("GET", "/metrics", &[], "").await.body.to_vec()).unwrap();
    (text, gw.state.store.wal_bytes().is_some())
}

/// Series only a gateway on SQLite has.
const SQLITE_ONLY: [&str; 1] = ["tollgate_sqlite_wal_bytes"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_listed_series_is_exposed_as_listed_and_nothing_else() {
    let (text, sqlite) = exposition().await;
    let exposed = families(&text);
    let (path, listed) = catalogue();
    if std::env::var_os("TOLLGATE_METRICS_WRITE").is_some() {
        // The list's header is kept, and so are the labels of a family without samples here.
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let mut out: String = text
            .lines()
            .take_while(|l| l.starts_with('#'))
            .map(|l| format!("{l}\n"))
            .collect();
        for (name, family) in &exposed {
            let labels = match listed.get(name) {
                Some(known) if family.labels.is_empty() => &known.labels,
                _ => &family.labels,
            };
            let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
            out.push_str(
                &format!("{name} {} {}\n", family.kind, labels.join(",")).replace(" \n", "\n"),
            );
        }
        std::fs::write(&path, out).unwrap();
        return;
    }
    let mut wrong = Vec::new();
    for (name, want) in &listed {
        match exposed.get(name) {
            None if !sqlite && SQLITE_ONLY.contains(&name.as_str()) => {}
            None => wrong.push(format!("{name}: listed, not exposed")),
            Some(got) if got.kind != want.kind => {
                wrong.push(format!("{name}: a {}, listed as a {}", got.kind, want.kind))
            }
            // A family without samples in this run shows no labels; one with samples must
            // carry exactly the listed ones.
            Some(got) if !got.labels.is_empty() && got.labels != want.labels => wrong.push(
                format!("{name}: labels {:?}, listed {:?}", got.labels, want.labels),
            ),
            Some(_) => {}
        }
    }
    for name in exposed.keys().filter(|n| !listed.contains_key(*n)) {
        wrong.push(format!("{name}: exposed, not in docs/metrics-series.txt"));
    }
    assert!(wrong.is_empty(), "{wrong:#?}\n{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_queries_only_series_that_exist() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/grafana/tollgate.json");
    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut queries = Vec::new();
    collect_exprs(&dashboard, &mut queries);
    assert!(queries.len() >= 10, "{queries:?}");
    let wrong = unknown_series(&queries);
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn the_alerting_rules_read_only_series_that_exist() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/prometheus/alerts.yml");
    let text = std::fs::read_to_string(&path).unwrap();
    let queries: Vec<String> = text
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("expr: "))
        .map(str::to_owned)
        .collect();
    assert!(queries.len() >= 5, "{queries:?}");
    let wrong = unknown_series(&queries);
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// What in `queries` (PromQL) names a series or label that docs/metrics-series.txt lacks, or
/// reads a histogram other than through its `_bucket`, `_sum` or `_count`.
fn unknown_series(queries: &[String]) -> Vec<String> {
    let (_, listed) = catalogue();
    let mut wrong = Vec::new();
    for expr in queries {
        let names = metric_names(expr);
        if names.is_empty() {
            wrong.push(format!("{expr}: queries no tollgate series"));
        }
        for name in names {
            let family = family_of(&listed, &name);
            let Some(found) = listed.get(family) else {
                wrong.push(format!("{expr}: no series {name}"));
                continue;
            };
            // A histogram is queried through its buckets, sum or count; anything else by name.
            if found.kind == "histogram" && family == name {
                wrong.push(format!(
                    "{expr}: {name} is a histogram; query _bucket, _sum or _count"
                ));
            }
        }
        // A label it groups or matches by is one of the series it reads.
        for label in by_labels(expr) {
            if label != "le" && !reads_label(&listed, expr, &label) {
                wrong.push(format!("{expr}: no series of it has a label {label}"));
            }
        }
    }
    wrong
}

/// Every `"expr"` of the dashboard's panels.
fn collect_exprs(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("expr", serde_json::Value::String(e)) => out.push(e.clone()),
                    _ => collect_exprs(v, out),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| collect_exprs(v, out)),
        _ => {}
    }
}

/// The `tollgate_…` metric names a PromQL expression reads.
fn metric_names(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    let bytes = expr.as_bytes();
    let mut i = 0;
    while let Some(at) = expr[i..].find("tollgate_") {
        let start = i + at;
        let mut end = start;
        while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_') {
            end += 1;
        }
        names.push(expr[start..end].to_owned());
        i = end;
    }
    names
}

/// The label names an expression groups or matches by: `by (a, b)`, `{a="…"}`.
fn by_labels(expr: &str) -> Vec<String> {
    let mut labels = Vec::new();
    for (open, close) in [("by (", ")"), ("{", "}")] {
        let mut rest = expr;
        while let Some(at) = rest.find(open) {
            let inner = &rest[at + open.len()..];
            let end = inner.find(close).unwrap_or(inner.len());
            for part in inner[..end].split(',') {
                let name = part
                    .split(['=', '!', '~'])
                    .next()
                    .unwrap_or_default()
                    .trim();
                if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    labels.push(name.to_owned());
                }
            }
            rest = &inner[end..];
        }
    }
    labels
}

/// The family a sample name belongs to: a histogram's `_bucket`, `_sum` and `_count` are its.
fn family_of<'a>(listed: &BTreeMap<String, Family>, name: &'a str) -> &'a str {
    ["_bucket", "_sum", "_count"]
        .iter()
        .filter_map(|s| name.strip_suffix(s))
        .find(|base| listed.get(*base).is_some_and(|f| f.kind == "histogram"))
        .unwrap_or(name)
}

/// Whether some series the expression reads has `label`.
fn reads_label(listed: &BTreeMap<String, Family>, expr: &str, label: &str) -> bool {
    metric_names(expr).iter().any(|name| {
        listed
            .get(family_of(listed, name))
            .is_some_and(|f| f.labels.contains(label))
    })
}
