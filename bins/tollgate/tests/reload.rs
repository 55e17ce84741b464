//! Reloading the configuration while the gateway serves (docs/operations.md, "Reloading the
//! configuration"), as an operator does it: the built binary under 64 keep-alive connections,
//! streams and a video task in flight, the file rewritten and `SIGHUP` sent, then
//! `POST /admin/v1/config/reload`. Nothing fails, no connection drops, each stream finishes on
//! the channel it started on while the next goes to the new one, the new price charges the
//! requests after the reload, and `tollgate audit --recompute` is clean. Then the operator who
//! writes a broken file, or one that changes what only a restart can: refused whole, named, and
//! the old settings keep serving.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use support::{Gateway, Scratch, audit, http};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tollgate_sim::KnobSettings;
use tollgate_store::{LedgerKind, Store};

const EMBEDDINGS: &str = "text-embedding-3-small";
const TEXT: &str = "gen-2.5-flash";
const VIDEO: &str = "wave-3-0-video";

/// The configuration: embeddings at `embeddings_price` per million tokens, the text model on
/// `text_channel` (`gen-a` on `sim_a`, or `gen-b` on `sim_b`), a video model, and `extra`.
fn config_text(
    sim_a: &str,
    sim_b: &str,
    embeddings_price: &str,
    text_channel: &str,
    video_first_byte_ms: u64,
    extra: &str,
) -> String {
    let text_base = if text_channel == "gen-a" {
        sim_a
    } else {
        sim_b
    };
    format!(
        r#"
[simulator]
enabled = false

[tasks]
first_poll_ms = 200
poll_interval_ms = 300
sweep_interval_seconds = 1

[[channels]]
name = "emb"
format = "openai-embeddings"
base_url = "{sim_a}"
max_concurrency = 256

[[channels]]
name = "{text_channel}"
format = "genai"
base_url = "{text_base}"
# The simulator wants a key where the vendor does and accepts any: HOME is always set.
api_key_env = "HOME"
idle_timeout_ms = 20000

[[channels]]
name = "video"
format = "generic-video"
base_url = "{sim_a}"
first_byte_timeout_ms = {video_first_byte_ms}

[models."{EMBEDDINGS}"]
kind = "embeddings"
channels = ["emb"]
price = {{ meter = "tokens", per_million_tokens = "{embeddings_price}" }}

[models."{TEXT}"]
kind = "native-text"
channels = ["{text_channel}"]
price = {{ meter = "text_tokens", input_per_million_tokens = "0.10", output_per_million_tokens = "0.40" }}

[models."{VIDEO}"]
kind = "generic-video"
channels = ["video"]
price = {{ meter = "video_seconds", per_second = "0.1" }}
{extra}
"#
    )
}

fn write(path: &Path, text: &str) {
    // Written whole and renamed, as an editor or a deployment tool does: a reload never reads
    // half a file.
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn sighup(gateway: &Gateway) {
    let status = std::process::Command::new("kill")
        .args(["-HUP", &gateway.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// `POST /admin/v1/config/reload` with `token`: the status and the answer.
async fn reload(addr: &str, token: &str) -> (u16, serde_json::Value) {
    let (status, body) = http(addr, "POST", "/admin/v1/config/reload", Some(token), None)
        .await
        .unwrap();
    (status, serde_json::from_str(&body).unwrap())
}

/// A full admin token, made with the CLI.
fn admin_token(config: &Path, db: &str) -> String {
    let run = support::cli(config, db, &["admin", "token", "create", "--name", "ops"]);
    assert!(run.ok, "{}", run.said());
    run.stdout.trim().to_owned()
}

/// One keep-alive connection sending embedding requests until `stop`; every answer must be a
/// 200 on the same connection. Returns how many it sent.
async fn keep_alive_load(addr: String, key: String, stop: Arc<AtomicBool>) -> u64 {
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let body = format!(r#"{{"model":"{EMBEDDINGS}","input":"reload under load"}}"#);
    let request = format!(
        "POST /v1/embeddings HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut sent = 0;
    let mut buffer = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        stream.write_all(request.as_bytes()).await.unwrap();
        let (status, _) = read_response(&mut stream, &mut buffer).await;
        assert_eq!(status, 200, "request {sent} on a kept-alive connection");
        sent += 1;
    }
    sent
}

/// Reads one response with a `Content-Length` body from a kept-alive connection.
async fn read_response(stream: &mut tokio::net::TcpStream, buffer: &mut Vec<u8>) -> (u16, String) {
    let mut chunk = [0u8; 8192];
    loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map(|v| v.trim().parse().unwrap())
                .expect("a Content-Length");
            if buffer.len() >= end + 4 + length {
                let status = head.split(' ').nth(1).unwrap().parse().unwrap();
                let body = String::from_utf8_lossy(&buffer[end + 4..end + 4 + length]).into();
                buffer.drain(..end + 4 + length);
                return (status, body);
            }
        }
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the gateway closed a kept-alive connection");
        buffer.extend_from_slice(&chunk[..n]);
    }
}

/// A native stream: says on `started` once its first frame has arrived, then reads it to its
/// end. Returns its request id and whole (de-chunked) body.
async fn stream(
    addr: String,
    key: String,
    started: tokio::sync::mpsc::Sender<()>,
) -> (String, String) {
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let body = r#"{"contents":[{"role":"user","parts":[{"text":"Tell me a long story."}]}],"generationConfig":{"maxOutputTokens":400}}"#;
    let request = format!(
        "POST /v1beta/models/{TEXT}:streamGenerateContent?alt=sse HTTP/1.1\r\nHost: {addr}\r\nx-goog-api-key: {key}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    let mut chunk = [0u8; 4096];
    let mut said = false;
    loop {
        let n = stream.read(&mut chunk).await.unwrap();
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&raw);
        assert!(
            !text.starts_with("HTTP/1.1 ") || text.starts_with("HTTP/1.1 200"),
            "{text}"
        );
        if !said && text.contains("data: ") {
            said = true;
            started.send(()).await.unwrap();
        }
    }
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let id = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("x-request-id:")
                .map(|v| v.trim().to_owned())
        })
        .unwrap();
    (id, support::dechunk(body))
}

/// The successes `GET /admin/v1/channels` counts for `channel`.
async fn channel_successes(addr: &str, token: &str, channel: &str) -> u64 {
    let (status, body) = http(addr, "GET", "/admin/v1/channels", Some(token), None)
        .await
        .unwrap();
    assert_eq!(status, 200, "{body}");
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == channel)
        .and_then(|c| c["successes"].as_u64())
        .unwrap()
}

/// The channel that served each of `requests` (by the usage records), once all are written.
async fn channels_of(store: &Store, account: &str, requests: &[String]) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let filter = tollgate_store::UsageFilter {
            account_id: Some(account.to_owned()),
            model: Some(TEXT.to_owned()),
            ..tollgate_store::UsageFilter::default()
        };
        let records = store.usage_records(&filter, 1000, None).await.unwrap();
        let channels: Vec<String> = requests
            .iter()
            .filter_map(|id| {
                records
                    .iter()
                    .find(|r| r.request_id.as_ref() == Some(id))
                    .map(|r| r.channel.clone().unwrap_or_default())
            })
            .collect();
        if channels.len() == requests.len() {
            return channels;
        }
        assert!(Instant::now() < deadline, "{records:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_under_load_drops_nothing_and_each_request_keeps_the_settings_it_started_with() {
    let scratch = Scratch::new("reload-load");
    // sim_a streams slowly (the streams are in flight across the reload) and runs tasks for
    // seconds; sim_b is where the text model moves.
    let sim_a = tollgate_sim::start(
        "127.0.0.1:0".parse().unwrap(),
        KnobSettings {
            frame_interval_ms: Some(150),
            task_queued_ms: Some(1_000),
            task_running_ms: Some(3_000),
            ..KnobSettings::default()
        },
    )
    .await
    .unwrap();
    let sim_b = tollgate_sim::start("127.0.0.1:0".parse().unwrap(), KnobSettings::default())
        .await
        .unwrap();
    let (a, b) = (sim_a.base_url(), sim_b.base_url());
    let config = scratch.dir.join("tollgate.toml");
    write(&config, &config_text(&a, &b, "0.02", "gen-a", 60_000, ""));
    let db = scratch.sqlite_url();
    let gateway = Gateway::start(&scratch, "gateway", &config, &db).await;
    let token = admin_token(&config, &db);
    let store = Store::connect(&db).await.unwrap();
    let (account, key) = store
        .create_account(&format!("reload-{}", scratch.tag), "1000".parse().unwrap())
        .await
        .unwrap();
    let key = key.secret;

    // 64 keep-alive connections of embeddings, throughout.
    let stop = Arc::new(AtomicBool::new(false));
    let load: Vec<_> = (0..64)
        .map(|_| {
            tokio::spawn(keep_alive_load(
                gateway.addr.clone(),
                key.clone(),
                stop.clone(),
            ))
        })
        .collect();
    // Streams and a task in flight when the file changes.
    let (started_tx, mut started) = tokio::sync::mpsc::channel(16);
    let before: Vec<_> = (0..4)
        .map(|_| {
            tokio::spawn(stream(
                gateway.addr.clone(),
                key.clone(),
                started_tx.clone(),
            ))
        })
        .collect();
    for _ in 0..4 {
        started.recv().await.unwrap();
    }
    let (status, task) = http(
        &gateway.addr,
        "POST",
        "/v1/video/generations",
        Some(&key),
        Some(&format!(
            r#"{{"model":"{VIDEO}","prompt":"reload","seconds":"3"}}"#
        )),
    )
    .await
    .unwrap();
    assert_eq!(status, 200, "{task}");
    let task: serde_json::Value = serde_json::from_str(&task).unwrap();
    let task = task["id"].as_str().unwrap().to_owned();

    // The reload by SIGHUP: the text model moves to another channel and upstream, the
    // embeddings price doubles, an alias appears, and the video channel's timeout changes (its
    // poller is replaced while the task is in flight).
    let alias = r#"
[aliases]
"emb-small" = "text-embedding-3-small"
"#;
    let served_before = channel_successes(&gateway.addr, &token, "emb").await;
    assert!(served_before > 0);
    write(
        &config,
        &config_text(&a, &b, "0.04", "gen-b", 50_000, alias),
    );
    sighup(&gateway);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let body = r#"{"model":"emb-small","input":"the alias"}"#;
        let (status, _) = http(
            &gateway.addr,
            "POST",
            "/v1/embeddings",
            Some(&key),
            Some(body),
        )
        .await
        .unwrap();
        if status == 200 {
            break;
        }
        assert_eq!(
            status, 400,
            "before the reload the alias is an unknown model"
        );
        assert!(Instant::now() < deadline, "SIGHUP did not reload");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The embeddings channel, unchanged in the file, served on: its counters (and circuit,
    // and key rotation) carried over.
    let served_after = channel_successes(&gateway.addr, &token, "emb").await;
    assert!(
        served_after >= served_before,
        "the unchanged channel was replaced: {served_before} successes before, {served_after} after"
    );
    let log = std::fs::read_to_string(&gateway.log).unwrap();
    assert!(
        log.contains("SIGHUP: the configuration is reloaded"),
        "{log}"
    );

    // A stream after the reload, while the earlier ones are still going.
    let (after_tx, mut after_started) = tokio::sync::mpsc::channel(1);
    let after = tokio::spawn(stream(gateway.addr.clone(), key.clone(), after_tx));
    after_started.recv().await.unwrap();

    // The admin API's reload, with a model added.
    let large = r#"
[aliases]
"emb-small" = "text-embedding-3-small"

[models."text-embedding-3-large"]
kind = "embeddings"
channels = ["emb"]
price = { meter = "tokens", per_million_tokens = "0.13" }
"#;
    write(
        &config,
        &config_text(&a, &b, "0.04", "gen-b", 50_000, large),
    );
    let (status, answer) = reload(&gateway.addr, &token).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["generation"], 3, "{answer}");
    assert_eq!(
        answer["changes"],
        serde_json::json!([r#"model "text-embedding-3-large": added"#]),
        "{answer}"
    );
    // Said in the admin audit log, by the token that did it.
    let (_, changes) = http(
        &gateway.addr,
        "GET",
        "/admin/v1/changes",
        Some(&token),
        None,
    )
    .await
    .unwrap();
    let changes: serde_json::Value = serde_json::from_str(&changes).unwrap();
    let reloads: Vec<_> = changes["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["action"] == "config.reload")
        .collect();
    assert_eq!(reloads.len(), 1, "{changes:#}");
    assert_eq!(reloads[0]["actor"], "token:ops", "{changes:#}");

    // Every stream finished whole: the four that started before on gen-a, the one after on
    // gen-b.
    let mut requests = Vec::new();
    for s in before.into_iter().chain([after]) {
        let (id, body) = s.await.unwrap();
        assert!(body.contains("finishReason"), "a stream was cut: {body}");
        requests.push(id);
    }
    let channels = channels_of(&store, &account.id, &requests).await;
    assert_eq!(channels, ["gen-a", "gen-a", "gen-a", "gen-a", "gen-b"]);

    // The task submitted before the reload is polled by the replaced poller and settled.
    let charge = support::task_charge(&store, &account.id, &task).await;
    assert_eq!(charge.amount, "-0.3".parse().unwrap(), "{charge:?}");

    stop.store(true, Ordering::Relaxed);
    let total = AtomicU64::new(0);
    for l in load {
        total.fetch_add(l.await.unwrap(), Ordering::Relaxed);
    }
    let total = total.into_inner();
    assert!(total > 64, "only {total} requests under load");

    // Embeddings were charged at version 1 before and at version 2 (twice the price) after.
    let rows = store.ledger(&account.id).await.unwrap();
    let embeddings: Vec<_> = rows
        .iter()
        .filter(|r| r.kind == LedgerKind::Charge && r.model.as_deref() == Some(EMBEDDINGS))
        .collect();
    // (Compared on the same input: the load's, not the alias's, which came after.)
    let v1 = embeddings
        .iter()
        .find(|r| r.price_version == Some(1))
        .expect("an embeddings charge at version 1");
    let v2 = embeddings
        .iter()
        .find(|r| r.price_version == Some(2) && r.quantity == v1.quantity)
        .expect("an embeddings charge at version 2");
    assert_eq!(v2.amount.nanos(), 2 * v1.amount.nanos(), "{v1:?} {v2:?}");

    drop(gateway);
    let (report, clean) = audit(&db, Some(&config));
    assert!(clean, "{report:#}");
    eprintln!("{total} embeddings requests on 64 kept-alive connections across two reloads");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_that_cannot_take_is_refused_whole_and_the_old_settings_keep_serving() {
    let scratch = Scratch::new("reload-refused");
    let sim = tollgate_sim::start("127.0.0.1:0".parse().unwrap(), KnobSettings::default())
        .await
        .unwrap();
    let config: PathBuf = support::embeddings_config(&scratch, &sim.base_url(), "emb");
    let good = std::fs::read_to_string(&config).unwrap();
    let db = scratch.sqlite_url();
    let gateway = Gateway::start(&scratch, "gateway", &config, &db).await;
    let token = admin_token(&config, &db);
    let viewer = support::cli(
        &config,
        &db,
        &[
            "admin",
            "token",
            "create",
            "--name",
            "viewer",
            "--read-only",
        ],
    );
    assert!(viewer.ok, "{}", viewer.said());
    let store = Store::connect(&db).await.unwrap();
    let (_, key) = store
        .create_account(&format!("refused-{}", scratch.tag), "10".parse().unwrap())
        .await
        .unwrap();
    let serves = || async {
        let body = format!(r#"{{"model":"{EMBEDDINGS}","input":"still here"}}"#);
        let (status, answer) = http(
            &gateway.addr,
            "POST",
            "/v1/embeddings",
            Some(&key.secret),
            Some(&body),
        )
        .await
        .unwrap();
        assert_eq!(status, 200, "{answer}");
    };

    // Nothing changed: nothing to do, said so.
    let (status, answer) = reload(&gateway.addr, &token).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["generation"], 1);
    assert_eq!(answer["changes"], serde_json::json!([]));
    assert!(
        answer["source"]
            .as_str()
            .unwrap()
            .ends_with("tollgate.toml"),
        "{answer}"
    );

    // Each broken file is refused with what is wrong, in the admin API's error shape.
    let refusals = [
        (
            good.replace("[[channels]]", "[[channels]\n"),
            "TOML parse error",
        ),
        (
            good.replace("base_url =", "base_uri ="),
            "unknown field `base_uri`",
        ),
        (
            good.replace(r#"channels = ["emb"]"#, r#"channels = ["nope"]"#),
            r#"names channel \"nope\", which is not configured"#,
        ),
        (
            good.replace(
                "per_million_tokens = \"0.02\"",
                "per_million_tokens = \"-1\"",
            ),
            "price",
        ),
        (
            format!("{good}\n[server]\nmax_connections = 77\n")
                .replace("workers = false", "workers = true"),
            "these settings change only with a restart: [server], [tasks]",
        ),
    ];
    for (text, says) in refusals {
        write(&config, &text);
        let (status, answer) = reload(&gateway.addr, &token).await;
        assert_eq!(status, 400, "{answer}");
        let message = answer["error"]["message"].to_string();
        assert!(message.contains(says), "{says:?} not in {message}");
        assert_eq!(answer["error"]["param"], "config", "{answer}");
        serves().await;
        // `tollgate config check` tells the same before a reload is tried (all but what only
        // a running gateway can compare).
        let check = support::cli(&config, &db, &["config", "check"]);
        if says.starts_with("these settings") {
            assert!(check.ok, "{}", check.said());
        } else {
            assert!(!check.ok, "config check passed {text}");
            let said = check.said().replace('"', "\\\"");
            assert!(said.contains(says), "{says:?} not in {said}");
        }
    }
    write(&config, &good);
    let check = support::cli(&config, &db, &["config", "check"]);
    assert!(check.ok, "{}", check.said());
    assert!(
        check.stdout.contains("valid — 1 channels, 1 models"),
        "{}",
        check.said()
    );

    // SIGHUP with a broken file: the process keeps serving and says why in its log.
    // (A line of it holds a secret: no refusal repeats the file's text — issue 42.)
    write(
        &config,
        "secret_hook = \"https://hooks.example.com/T0SECRET\"\nnot = [toml",
    );
    sighup(&gateway);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(&gateway.log)
        .unwrap()
        .contains("SIGHUP: the configuration was not reloaded")
    {
        assert!(Instant::now() < deadline, "SIGHUP was not answered");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    serves().await;
    // Each refusal counted, for the alert that says the file on disk is not what serves.
    assert_eq!(
        gateway
            .metric("tollgate_config_reloads_refused_total")
            .await,
        6.0
    );
    assert_eq!(gateway.metric("tollgate_config_generation").await, 1.0);
    // The admin API says what is in force and why the last reload was refused.
    let (status, body) = http(&gateway.addr, "GET", "/admin/v1/config", Some(&token), None)
        .await
        .unwrap();
    assert_eq!(status, 200, "{body}");
    let in_force: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(in_force["generation"], 1, "{in_force}");
    assert_eq!(in_force["reloads_refused"], 6, "{in_force}");
    let refusal = in_force["last_refusal"]["error"].as_str().unwrap();
    assert!(refusal.contains("line 2"), "where it broke: {in_force}");
    assert!(
        !refusal.contains("T0SECRET") && !refusal.contains("not = [toml"),
        "the file's text is not echoed: {in_force}"
    );
    let log = std::fs::read_to_string(&gateway.log).unwrap();
    assert!(!log.contains("T0SECRET"), "nor logged");

    // A read-only token may not reload; the file fixed, a full one does.
    write(&config, &good.replace("0.02", "0.03"));
    let (status, answer) = reload(&gateway.addr, viewer.stdout.trim()).await;
    assert_eq!(status, 403, "{answer}");
    let (status, answer) = reload(&gateway.addr, &token).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["generation"], 2);
    assert_eq!(
        answer["changes"],
        serde_json::json!([r#"model "text-embedding-3-small": changed"#])
    );
    assert_eq!(gateway.metric("tollgate_config_generation").await, 2.0);
    serves().await;
}
