//! Side-by-side benchmark of the billed relay (`bench/ledger.sh` runs it; `docs/benchmarks.md`
//! records its numbers).
//!
//! In one run, in interleaved rounds, one load generator drives:
//! - **bare**: a bare hyper reverse proxy (a child process) in front of a static upstream — the
//!   limit: what relaying alone costs on this machine;
//! - **billed floor**: the same relay making one charge row durable per request, with group
//!   commit and tollgate's durability settings, on SQLite and on PostgreSQL — the limit of
//!   durable billing ([`billed_floor`]);
//! - **tollgate**: the real `tollgate serve` binary (child processes: one on SQLite, one on
//!   PostgreSQL when a URL is given) in front of the same upstream, billing every request —
//!   key lookup, validation, token count, hold, relay, settlement, ledger row;
//!
//! with 1 account and with 8 (keys rotated over the connections). The static upstream (in this
//! process) answers every `POST /v1/embeddings` with one fixed 1,536-dimension embedding. For
//! each round it prints requests/s, p50, p99, p99.9 and the slowest request, CPU per request of
//! the relaying process (from `/proc`), and, for tollgate, journal transactions per request (from
//! its `/metrics`).
//!
//! ```sh
//! cargo run --release -p tollgate-e2e --example relay_bench -- [SECONDS] [CONNECTIONS] [ROUNDS]
//! TOLLGATE_BENCH_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test cargo run --release …
//! TOLLGATE_BENCH_LEDGER_ROWS=1000000 cargo run --release …   # pre-fill the SQLite ledger
//! TOLLGATE_BENCH_ENCODING=float cargo run --release …        # float requests (default base64)
//! cargo run --release -p tollgate-e2e --example relay_bench -- --wal 1000000 [CONNECTIONS]
//! ```
//!
//! `--wal REQUESTS` instead sends REQUESTS billed requests at full speed to the SQLite gateway
//! alone and follows its write-ahead log: the size of `-wal` every second, the largest, at the
//! end, and after a clean stop (`docs/benchmarks.md`, "The SQLite WAL under sustained load").
#![allow(clippy::unwrap_used, clippy::expect_used)]

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tollgate_embeddings::{Embedding, EmbeddingResponse, EmbeddingUsage, EmbeddingVector};

const REQUEST: &str = r#"{"model":"text-embedding-3-small","input":"The quick brown fox jumps over the lazy dog.","encoding_format":"base64"}"#;
/// The same without `encoding_format`: floats, as curl, LangChain and most non-OpenAI clients ask.
const REQUEST_FLOAT: &str =
    r#"{"model":"text-embedding-3-small","input":"The quick brown fox jumps over the lazy dog."}"#;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    if args.first().map(String::as_str) == Some("--bare-relay") {
        // Child mode: the bare relay, `--bare-relay LISTEN UPSTREAM`.
        runtime.block_on(bare_relay(args[1].parse().unwrap(), args[2].clone()));
        return;
    }
    if args.first().map(String::as_str) == Some("--billed-floor") {
        // Child mode: the billed floor, `--billed-floor LISTEN UPSTREAM DATABASE_URL`.
        runtime.block_on(billed_floor(
            args[1].parse().unwrap(),
            args[2].clone(),
            args[3].clone(),
        ));
        return;
    }
    if args.first().map(String::as_str) == Some("--instructions") {
        let few: u64 = args.get(1).map_or(200, |a| a.parse().unwrap());
        let many: u64 = args.get(2).map_or(1_200, |a| a.parse().unwrap());
        let connections: usize = args.get(3).map_or(8, |a| a.parse().unwrap());
        runtime.block_on(instructions(few, many, connections));
        return;
    }
    if args.first().map(String::as_str) == Some("--wal") {
        let requests: u64 = args.get(1).map_or(1_000_000, |a| a.parse().unwrap());
        let connections: usize = args.get(2).map_or(64, |a| a.parse().unwrap());
        runtime.block_on(wal(requests, connections));
        return;
    }
    let seconds: u64 = args.first().map_or(5, |a| a.parse().unwrap());
    let connections: usize = args.get(1).map_or(64, |a| a.parse().unwrap());
    let rounds: usize = args.get(2).map_or(2, |a| a.parse().unwrap());
    runtime.block_on(bench(Duration::from_secs(seconds), connections, rounds));
}

/// The upstream: one fixed answer for every request.
async fn static_upstream() -> SocketAddr {
    let vector: Vec<u8> = (0..1536u32)
        .flat_map(|i| ((i as f32 + 1.0) / 1e5).to_le_bytes())
        .collect();
    let answer = |embedding: EmbeddingVector| {
        Bytes::from(
            EmbeddingResponse::new(
                "text-embedding-3-small",
                vec![Embedding::new(0, embedding)],
                EmbeddingUsage::from_prompt_tokens(10),
            )
            .to_json(),
        )
    };
    // As OpenAI answers: base64 when asked, else the floats as JSON numbers in `float32`'s
    // shortest form.
    let base64_answer = answer(EmbeddingVector::Base64(
        base64::engine::general_purpose::STANDARD.encode(&vector),
    ));
    let floats: Vec<f32> = vector
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let float_answer = answer(EmbeddingVector::Float(floats));
    let answers = (base64_answer, float_answer);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let answers = answers.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request: http::Request<Incoming>| {
                    let (base64, float) = answers.clone();
                    async move {
                        let body = request.into_body().collect().await;
                        let asked_base64 = body.is_ok_and(|b| {
                            let b = b.to_bytes();
                            b.windows(8).any(|w| w == b"\"base64\"")
                        });
                        let answer = if asked_base64 { base64 } else { float };
                        let mut response = http::Response::new(Full::new(answer));
                        response.headers_mut().insert(
                            http::header::CONTENT_TYPE,
                            http::HeaderValue::from_static("application/json"),
                        );
                        Ok::<_, std::convert::Infallible>(response)
                    }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

/// The limit: a reverse proxy that streams each request to the upstream and the answer back.
async fn bare_relay(listen: SocketAddr, upstream: String) {
    let client: Client<HttpConnector, Incoming> =
        Client::builder(TokioExecutor::new()).build_http();
    let listener = TcpListener::bind(listen).await.unwrap();
    // SIGTERM ends it cleanly, so that a run under callgrind writes its counts (`--instructions`).
    let mut terminate =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).unwrap();
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => continue,
            },
            _ = terminate.recv() => return,
        };
        let (client, upstream) = (client.clone(), upstream.clone());
        tokio::spawn(async move {
            let service = service_fn(move |request: http::Request<Incoming>| {
                let (client, upstream) = (client.clone(), upstream.clone());
                async move {
                    let (mut parts, body) = request.into_parts();
                    parts.uri = format!("{upstream}{}", parts.uri.path()).parse().unwrap();
                    let response = client
                        .request(http::Request::from_parts(parts, body))
                        .await
                        .map_err(|e| e.to_string())?;
                    Ok::<_, String>(response)
                }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// One charge of the billed floor: about 200 bytes, as a charge's essentials are.
struct FloorCharge {
    id: String,
    account: String,
    amount: i64,
    request_id: String,
    created_at: i64,
    /// Told once the batch holding it committed.
    done: tokio::sync::oneshot::Sender<()>,
}

const FLOOR_SCHEMA: [&str; 3] = [
    "DROP TABLE IF EXISTS floor_charges",
    "CREATE TABLE floor_charges (id TEXT PRIMARY KEY, account TEXT NOT NULL,
         amount BIGINT NOT NULL, request_id TEXT NOT NULL, created_at BIGINT NOT NULL)",
    "CREATE INDEX floor_charges_account ON floor_charges (account, created_at)",
];

/// `--billed-floor`: the bare relay, and per request one charge row made durable before the
/// answer — the physical limit of durable billing on this machine (issue 47;
/// docs/benchmarks.md, "The billed floor"). One writer with group commit takes the whole queue
/// as one transaction (on PostgreSQL one `INSERT … SELECT FROM unnest(…)`), with tollgate's
/// durability: on SQLite the journal's own connection settings and checkpointer
/// (`tollgate_store::sqlite_journal`), on PostgreSQL the server's defaults, as tollgate's.
async fn billed_floor(listen: SocketAddr, upstream: String, database_url: String) {
    let (queue, charges) = tokio::sync::mpsc::unbounded_channel::<FloorCharge>();
    let _checkpointer = match database_url.strip_prefix("sqlite://") {
        Some(path) => Some(sqlite_floor_writer(path.to_owned(), charges)),
        None => {
            tokio::spawn(postgres_floor_writer(database_url.clone(), charges));
            None
        }
    };
    let client: Client<HttpConnector, Incoming> =
        Client::builder(TokioExecutor::new()).build_http();
    let listener = TcpListener::bind(listen).await.unwrap();
    let counter = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let (client, upstream, queue, counter) = (
            client.clone(),
            upstream.clone(),
            queue.clone(),
            counter.clone(),
        );
        tokio::spawn(async move {
            let service = service_fn(move |request: http::Request<Incoming>| {
                let (client, upstream, queue, counter) = (
                    client.clone(),
                    upstream.clone(),
                    queue.clone(),
                    counter.clone(),
                );
                async move {
                    let (mut parts, body) = request.into_parts();
                    let key = parts
                        .headers
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_owned();
                    parts.uri = format!("{upstream}{}", parts.uri.path()).parse().unwrap();
                    let response = client
                        .request(http::Request::from_parts(parts, body))
                        .await
                        .map_err(|e| e.to_string())?;
                    let (head, body) = response.into_parts();
                    let body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
                    // The charge, durable before the answer.
                    let n = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let now = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .unwrap();
                    let (done, committed) = tokio::sync::oneshot::channel();
                    let charge = FloorCharge {
                        id: format!("led_{:012x}{n:012x}", now.as_millis()),
                        account: format!("acc_{:024x}", fxhash(&key)),
                        amount: 1_000 + (n % 97) as i64,
                        request_id: format!("req_{:016x}-{n:019}", now.as_nanos() as u64),
                        created_at: now.as_millis() as i64,
                        done,
                    };
                    queue.send(charge).map_err(|e| e.to_string())?;
                    committed.await.map_err(|e| e.to_string())?;
                    Ok::<_, String>(http::Response::from_parts(head, Full::new(body)))
                }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// A key's account: any stable 96-bit-looking number will do.
fn fxhash(key: &str) -> u128 {
    key.bytes().fold(0xcbf2_9ce4_8422_2325u128, |h, b| {
        (h ^ u128::from(b)).wrapping_mul(0x1_0000_0000_01b3)
    }) & ((1u128 << 96) - 1)
}

/// The floor's SQLite writer: a thread with the journal's connection settings, each wake-up
/// the whole queue in one transaction, beside the journal's checkpointer.
fn sqlite_floor_writer(
    path: String,
    mut charges: tokio::sync::mpsc::UnboundedReceiver<FloorCharge>,
) -> tollgate_store::sqlite_journal::Checkpointer {
    let conn = tollgate_store::sqlite_journal::open_as_journal(&path).unwrap();
    for statement in FLOOR_SCHEMA {
        conn.execute(statement, []).unwrap();
    }
    let checkpointer = tollgate_store::sqlite_journal::Checkpointer::start(&path).unwrap();
    std::thread::spawn(move || {
        while let Some(first) = charges.blocking_recv() {
            let mut batch = vec![first];
            while let Ok(next) = charges.try_recv() {
                batch.push(next);
            }
            conn.execute_batch("BEGIN IMMEDIATE").unwrap();
            {
                let mut insert = conn
                    .prepare_cached(
                        "INSERT INTO floor_charges (id, account, amount, request_id, created_at)
                         VALUES (?1, ?2, ?3, ?4, ?5)",
                    )
                    .unwrap();
                for c in &batch {
                    insert
                        .execute(rusqlite::params![
                            c.id,
                            c.account,
                            c.amount,
                            c.request_id,
                            c.created_at
                        ])
                        .unwrap();
                }
            }
            conn.execute_batch("COMMIT").unwrap();
            for c in batch {
                let _ = c.done.send(());
            }
        }
    });
    checkpointer
}

/// The floor's PostgreSQL writer: one connection, each wake-up the whole queue in one
/// `INSERT … SELECT FROM unnest(…)` (one round trip, one transaction).
async fn postgres_floor_writer(
    url: String,
    mut charges: tokio::sync::mpsc::UnboundedReceiver<FloorCharge>,
) {
    use sqlx::Connection as _;
    let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
    for statement in FLOOR_SCHEMA {
        sqlx::query(statement).execute(&mut conn).await.unwrap();
    }
    while let Some(first) = charges.recv().await {
        let mut batch = vec![first];
        while let Ok(next) = charges.try_recv() {
            batch.push(next);
        }
        let column = |f: fn(&FloorCharge) -> String| batch.iter().map(f).collect::<Vec<_>>();
        let ids = column(|c| c.id.clone());
        let accounts = column(|c| c.account.clone());
        let requests = column(|c| c.request_id.clone());
        let amounts: Vec<i64> = batch.iter().map(|c| c.amount).collect();
        let times: Vec<i64> = batch.iter().map(|c| c.created_at).collect();
        sqlx::query(
            "INSERT INTO floor_charges (id, account, amount, request_id, created_at)
             SELECT * FROM unnest($1::text[], $2::text[], $3::int8[], $4::text[], $5::int8[])",
        )
        .bind(ids)
        .bind(accounts)
        .bind(amounts)
        .bind(requests)
        .bind(times)
        .execute(&mut conn)
        .await
        .unwrap();
        for c in batch {
            let _ = c.done.send(());
        }
    }
}

fn free_port() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

/// A relaying process under test.
struct Target {
    name: String,
    addr: SocketAddr,
    child: Child,
    keys: Vec<String>,
    metrics: bool,
    /// Headers its requests carry besides the key (a peer's routing headers).
    headers: Vec<(&'static str, String)>,
}

impl Drop for Target {
    fn drop(&mut self) {
        // A peer runs in a process group of its own (`peer_command`): its workers go with it.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A peer's command, in a process group of its own so that [`Target`]'s drop ends its workers
/// too (LiteLLM's uvicorn workers outlive a killed parent).
fn peer_command(program: &str) -> Command {
    use std::os::unix::process::CommandExt;
    let mut command = Command::new(program);
    command.process_group(0);
    command
}

/// CPU seconds the process and every process under it have used (user + system), from
/// `/proc/PID/stat`: a peer may serve from worker processes (LiteLLM's uvicorn workers).
fn cpu_seconds(pid: u32) -> f64 {
    // (pid, parent, utime + stime) of every process; fields 4, 14 and 15 of the whole line
    // (ppid, utime, stime) are 1, 11 and 12 after the `)`.
    let processes: Vec<(u32, u32, f64)> = std::fs::read_dir("/proc")
        .map(|dir| {
            dir.filter_map(|entry| {
                let id: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
                let stat = std::fs::read_to_string(format!("/proc/{id}/stat")).ok()?;
                let after = stat.rsplit(')').next()?;
                let fields: Vec<&str> = after.split_whitespace().collect();
                let field = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok());
                Some((id, field(1)? as u32, field(11)? + field(12)?))
            })
            .collect()
        })
        .unwrap_or_default();
    let mut tree = vec![pid];
    let mut ticks = 0.0;
    while let Some(id) = tree.pop() {
        for (child, parent, used) in &processes {
            if *child == id {
                ticks += used;
            }
            if *parent == id {
                tree.push(*child);
            }
        }
    }
    ticks / 100.0
}

/// CPU seconds every PostgreSQL server process on this machine has used (user + system): what
/// the database does for a target during its round (targets run one at a time; the server's
/// background work is in it too, which is small beside a round's).
fn postgres_cpu_seconds() -> f64 {
    std::fs::read_dir("/proc")
        .map(|dir| {
            dir.filter_map(|entry| {
                let id: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
                let stat = std::fs::read_to_string(format!("/proc/{id}/stat")).ok()?;
                let (head, after) = stat.rsplit_once(')')?;
                if !head.ends_with("(postgres") {
                    return None;
                }
                let fields: Vec<&str> = after.split_whitespace().collect();
                let field = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok());
                Some(field(11)? + field(12)?)
            })
            .sum::<f64>()
        })
        .unwrap_or_default()
        / 100.0
}

async fn start_tollgate(
    name: &str,
    upstream: SocketAddr,
    database_url: &str,
    dir: &std::path::Path,
) -> (SocketAddr, Child) {
    let config = dir.join(format!("{name}.toml"));
    std::fs::write(
        &config,
        format!(
            r#"
[log]
filter = "warn"

[simulator]
enabled = false

[tasks]
workers = false

[[channels]]
name = "static"
format = "openai-embeddings"
base_url = "http://{upstream}"
max_concurrency = 1024

[models."text-embedding-3-small"]
kind = "embeddings"
channels = ["static"]
price = {{ meter = "tokens", per_million_tokens = "0.02" }}
"#
        ),
    )
    .unwrap();
    let exe = std::env::current_exe().unwrap();
    let binary = exe.parent().unwrap().parent().unwrap().join("tollgate");
    let addr = free_port();
    let child = Command::new(binary)
        .args(["serve", "--config"])
        .arg(&config)
        .args([
            "--listen",
            &addr.to_string(),
            "--database-url",
            database_url,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("build the binary first: cargo build --release -p tollgate");
    wait_listening(addr).await;
    (addr, child)
}

async fn wait_listening(addr: SocketAddr) {
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{addr} never listened");
}

/// Portkey's gateway (`TOLLGATE_BENCH_PORTKEY`: its `build/start-server.js`, installed by
/// bench/peers.sh) in front of the static upstream as an OpenAI provider at a custom host; no
/// billing, no keys of its own. `None` when not installed.
async fn start_portkey(upstream: SocketAddr) -> Option<Target> {
    let script = std::env::var("TOLLGATE_BENCH_PORTKEY")
        .ok()
        .filter(|s| !s.is_empty())?;
    let addr = free_port();
    let child = peer_command("node")
        .args([
            script.as_str(),
            &format!("--port={}", addr.port()),
            "--headless",
        ])
        .env("NODE_ENV", "production")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_listening(addr).await;
    let target = Target {
        name: "Portkey gateway 1.15.2 (Node, no billing)".into(),
        addr,
        child,
        keys: vec!["sk-bench".into()],
        metrics: false,
        headers: vec![
            ("x-portkey-provider", "openai".into()),
            ("x-portkey-custom-host", format!("http://{upstream}/v1")),
        ],
    };
    answers(target).await
}

/// LiteLLM's proxy (`TOLLGATE_BENCH_LITELLM`: its `litellm` command, installed by
/// bench/peers.sh) with 2 workers, the static upstream as an OpenAI model; no database, no
/// billing; its master key as the one key (it refuses to start without one). `None` when not
/// installed.
async fn start_litellm(upstream: SocketAddr, dir: &std::path::Path) -> Option<Target> {
    let command = std::env::var("TOLLGATE_BENCH_LITELLM")
        .ok()
        .filter(|s| !s.is_empty())?;
    let config = dir.join("litellm.yaml");
    std::fs::write(
        &config,
        format!(
            "model_list:\n  - model_name: text-embedding-3-small\n    litellm_params:\n      model: openai/text-embedding-3-small\n      api_base: http://{upstream}/v1\n      api_key: sk-bench\nlitellm_settings:\n  drop_params: true\ngeneral_settings:\n  master_key: sk-bench\n"
        ),
    )
    .unwrap();
    let addr = free_port();
    let child = peer_command(&command)
        .args([
            "--config",
            &config.display().to_string(),
            "--port",
            &addr.port().to_string(),
            "--num_workers",
            "2",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Its start-up (imports, workers) takes seconds.
    for _ in 0..1200 {
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let target = Target {
        name: "LiteLLM proxy, 2 workers (no database)".into(),
        addr,
        child,
        keys: vec!["sk-bench".into()],
        metrics: false,
        headers: Vec::new(),
    };
    answers(target).await
}

/// `target` when it answers the bench's request (float and base64) with 200; else `None`, said.
async fn answers(target: Target) -> Option<Target> {
    let auth = format!("Bearer {}", target.keys[0]);
    for body in [REQUEST, REQUEST_FLOAT] {
        let mut ok = false;
        for _ in 0..50 {
            let Ok(stream) = tokio::net::TcpStream::connect(target.addr).await else {
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            };
            drop(stream);
            let (status, answer) = Connection::open(target.addr)
                .await
                .send(&auth, &target.headers, body)
                .await;
            if status == 200 {
                ok = true;
                break;
            }
            eprintln!(
                "{}: {status} {}",
                target.name,
                String::from_utf8_lossy(&answer[..answer.len().min(300)])
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        if !ok {
            eprintln!(
                "{} does not answer the bench's request; left out",
                target.name
            );
            return None;
        }
    }
    Some(target)
}

/// Accounts with plenty of balance; their keys.
async fn accounts(database_url: &str, n: usize, tag: &str) -> Vec<String> {
    let store = tollgate_store::Store::connect(database_url).await.unwrap();
    let mut keys = Vec::new();
    for i in 0..n {
        let (_, key) = store
            .create_account(
                &format!("bench-{tag}-{i}-{}", std::process::id()),
                "1000000".parse().unwrap(),
            )
            .await
            .unwrap();
        keys.push(key.secret);
    }
    store.close().await;
    keys
}

/// One account whose key has `policy`: what checking it costs, next to the same request from
/// a key without one.
async fn account_with_policy(
    database_url: &str,
    tag: &str,
    policy: tollgate_store::AccessPolicy,
) -> Vec<String> {
    let store = tollgate_store::Store::connect(database_url).await.unwrap();
    let (_, key) = store
        .create_account(
            &format!("bench-{tag}-{}", std::process::id()),
            "1000000".parse().unwrap(),
        )
        .await
        .unwrap();
    store
        .set_policy(&tollgate_store::PolicyHolder::Key(key.id.clone()), &policy)
        .await
        .unwrap();
    store.close().await;
    vec![key.secret]
}

/// An access policy of every kind (models, endpoints, networks, expiry), all admitting.
fn every_access_rule() -> tollgate_store::AccessPolicy {
    tollgate_store::AccessPolicy {
        models: Some(vec!["text-embedding-*".into(), "tts-?".into()]),
        endpoints: Some(vec!["embeddings".into(), "speech".into()]),
        networks: Some(vec![
            "10.0.0.0/8".parse().unwrap(),
            "127.0.0.0/8".parse().unwrap(),
        ]),
        expires_at: Some(i64::MAX),
        ..tollgate_store::AccessPolicy::default()
    }
}

/// Rate limits and spend caps of every kind, high enough never to refuse in a round: what
/// counting them costs — slices from the database, headers on every answer.
fn every_limit() -> tollgate_store::AccessPolicy {
    tollgate_store::AccessPolicy {
        rpm: Some(100_000_000),
        per_minute: Some([("tokens".to_owned(), 1_000_000_000)].into()),
        concurrency: Some(10_000),
        daily_budget: Some("100000".parse().unwrap()),
        monthly_budget: Some("1000000".parse().unwrap()),
        ..tollgate_store::AccessPolicy::default()
    }
}

/// Fills the SQLite ledger with `rows` charge rows of a filler account (balance kept equal to
/// the ledger's sum), to see how throughput changes with a large ledger.
fn fill_ledger(path: &std::path::Path, rows: u64) {
    let sql = format!(
        "INSERT INTO accounts (id, name, balance_nanos, held_nanos, disabled, created_at)
           VALUES ('acct_filler', 'filler', {credit}, 0, 0, 0);
         INSERT INTO ledger (id, account_id, kind, amount_nanos, balance_after_nanos, note, created_at)
           VALUES ('led_filler_credit', 'acct_filler', 'credit', {credit}, {credit}, 'filler', 0);
         WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < {rows})
         INSERT INTO ledger (id, account_id, kind, amount_nanos, balance_after_nanos, model, hold_id, created_at)
           SELECT 'led_filler_' || x, 'acct_filler', 'charge', -1, {credit} - x, 'text-embedding-3-small', 'hold_filler_' || x, x FROM n;
         UPDATE accounts SET balance_nanos = {credit} - {rows} WHERE id = 'acct_filler';",
        credit = rows * 2,
    );
    let status = Command::new("sqlite3")
        .arg(path)
        .arg(sql)
        .status()
        .expect("sqlite3");
    assert!(status.success());
}

/// One round: `connections` clients for `length`, each on its own keep-alive connection.
async fn round(target: &Target, connections: usize, length: Duration) -> Round {
    let batches_before = if target.metrics {
        journal(target.addr).await
    } else {
        0.0
    };
    let cpu_before = cpu_seconds(target.child.id());
    let database_before = postgres_cpu_seconds();
    let started = Instant::now();
    let stop = started + length;
    let mut tasks = Vec::new();
    for c in 0..connections {
        let key = target.keys[c % target.keys.len()].clone();
        let addr = target.addr;
        let headers = target.headers.clone();
        tasks.push(tokio::spawn(async move {
            let mut connection = Connection::open(addr).await;
            let mut latencies = Vec::new();
            let auth = format!("Bearer {key}");
            while Instant::now() < stop {
                let t = Instant::now();
                connection.embed(&auth, &headers).await;
                latencies.push(t.elapsed());
            }
            latencies
        }));
    }
    let mut latencies = Vec::new();
    for t in tasks {
        latencies.extend(t.await.unwrap());
    }
    let elapsed = started.elapsed().as_secs_f64();
    let cpu = cpu_seconds(target.child.id()) - cpu_before;
    let database = postgres_cpu_seconds() - database_before;
    let batches = if target.metrics {
        journal(target.addr).await - batches_before
    } else {
        0.0
    };
    latencies.sort();
    let n = latencies.len() as f64;
    Round {
        rps: n / elapsed,
        latencies,
        cpu: cpu / n * 1000.0,
        database_cpu: database / n * 1000.0,
        tx: batches / n,
    }
}

/// What one round of one target measured.
struct Round {
    rps: f64,
    /// Every request's latency, sorted.
    latencies: Vec<Duration>,
    /// CPU ms per request of the target's processes.
    cpu: f64,
    /// CPU ms per request of the PostgreSQL server (near 0 for a target that does not use it).
    database_cpu: f64,
    /// Journal transactions per request (tollgate only).
    tx: f64,
}

/// One keep-alive connection of the load generator.
struct Connection(hyper::client::conn::http1::SendRequest<Full<Bytes>>);

impl Connection {
    async fn open(addr: SocketAddr) -> Connection {
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.set_nodelay(true).unwrap();
        let (sender, conn) =
            hyper::client::conn::http1::handshake::<_, Full<Bytes>>(TokioIo::new(stream))
                .await
                .unwrap();
        tokio::spawn(conn);
        Connection(sender)
    }

    /// The bench's embeddings request with `auth` and `headers`, read to its end; it must
    /// succeed. Base64, as the OpenAI SDKs ask, or with `TOLLGATE_BENCH_ENCODING=float` floats,
    /// as curl, LangChain and most other clients ask.
    async fn embed(&mut self, auth: &str, headers: &[(&'static str, String)]) {
        let float = std::env::var("TOLLGATE_BENCH_ENCODING").is_ok_and(|e| e == "float");
        let body = if float { REQUEST_FLOAT } else { REQUEST };
        let (status, answer) = self.send(auth, headers, body).await;
        assert!(
            status == 200,
            "a request failed: {status} {}",
            String::from_utf8_lossy(&answer)
        );
    }

    /// An embeddings request of `body` with `auth`, read to its end; it must succeed.
    async fn embed_with(&mut self, auth: &str, body: &'static str) {
        let (status, answer) = self.send(auth, &[], body).await;
        assert!(
            status == 200,
            "a request failed: {status} {}",
            String::from_utf8_lossy(&answer)
        );
    }

    /// An embeddings request of `body`: its status and body.
    async fn send(
        &mut self,
        auth: &str,
        headers: &[(&'static str, String)],
        body: &'static str,
    ) -> (http::StatusCode, Bytes) {
        let mut request = http::Request::post("/v1/embeddings")
            .header("host", "bench")
            .header("authorization", auth)
            .header("content-type", "application/json");
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let request = request
            .body(Full::new(Bytes::from_static(body.as_bytes())))
            .unwrap();
        let response = self.0.send_request(request).await.unwrap();
        let status = response.status();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, body)
    }
}

/// Database transactions the gateway's ledger committed so far.
async fn journal(addr: SocketAddr) -> f64 {
    let client: Client<HttpConnector, Full<Bytes>> =
        Client::builder(TokioExecutor::new()).build_http();
    let response = client
        .get(format!("http://{addr}/metrics").parse().unwrap())
        .await
        .unwrap();
    let text = String::from_utf8(
        response
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .to_vec(),
    )
    .unwrap();
    text.lines()
        .filter(|l| l.starts_with("tollgate_ledger_batches_total "))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        .sum()
}

fn pct(latencies: &[Duration], p: f64) -> f64 {
    if latencies.is_empty() {
        return 0.0;
    }
    let i = ((latencies.len() as f64 * p).ceil() as usize).clamp(1, latencies.len()) - 1;
    latencies[i].as_secs_f64() * 1000.0
}

async fn bench(length: Duration, connections: usize, rounds: usize) {
    let dir = std::env::temp_dir().join(format!("tollgate-relay-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let upstream = static_upstream().await;

    let mut targets = Vec::new();
    let bare_addr = free_port();
    let bare = Command::new(std::env::current_exe().unwrap())
        .args([
            "--bare-relay",
            &bare_addr.to_string(),
            &format!("http://{upstream}"),
        ])
        .spawn()
        .unwrap();
    wait_listening(bare_addr).await;
    targets.push(Target {
        name: "bare hyper relay".into(),
        addr: bare_addr,
        child: bare,
        keys: vec![String::new()],
        metrics: false,
        headers: Vec::new(),
    });

    // The billed floor on each database (`billed_floor`): the limit billing can approach.
    let mut floors = vec![(
        "SQLite",
        format!("sqlite://{}", dir.join("floor.db").display()),
    )];
    if let Some(pg) = std::env::var("TOLLGATE_BENCH_POSTGRES_URL")
        .ok()
        .filter(|u| !u.is_empty())
    {
        floors.push(("PostgreSQL", pg));
    }
    let mut floor_views = Vec::new();
    for (database, url) in floors {
        let addr = free_port();
        let child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--billed-floor",
                &addr.to_string(),
                &format!("http://{upstream}"),
                &url,
            ])
            .spawn()
            .unwrap();
        wait_listening(addr).await;
        targets.push(Target {
            name: format!("billed floor, {database}, 1 account"),
            addr,
            child,
            keys: vec!["floor-key-0".into()],
            metrics: false,
            headers: Vec::new(),
        });
        let eight: Vec<String> = (0..8).map(|i| format!("floor-key-{i}")).collect();
        floor_views.push((targets.len() - 1, None, ""));
        floor_views.push((targets.len() - 1, Some(eight), ""));
    }

    let sqlite_path = dir.join("bench.db");
    let sqlite = format!("sqlite://{}", sqlite_path.display());
    // The schema first, then (optionally) the filler rows, then the gateway.
    tollgate_store::Store::connect(&sqlite)
        .await
        .unwrap()
        .close()
        .await;
    let fill: u64 = std::env::var("TOLLGATE_BENCH_LEDGER_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    if fill > 0 {
        let t = Instant::now();
        fill_ledger(&sqlite_path, fill);
        println!(
            "filled the SQLite ledger with {fill} rows in {:?}",
            t.elapsed()
        );
    }
    let one = accounts(&sqlite, 1, "sqlite1").await;
    let eight = accounts(&sqlite, 8, "sqlite8").await;
    let with_policy = account_with_policy(&sqlite, "sqlite-policy", every_access_rule()).await;
    let with_limits = account_with_policy(&sqlite, "sqlite-limits", every_limit()).await;
    let (addr, child) = start_tollgate("sqlite", upstream, &sqlite, &dir).await;
    targets.push(Target {
        name: "tollgate, SQLite, 1 account".into(),
        addr,
        child,
        keys: one,
        metrics: true,
        headers: Vec::new(),
    });
    // The same process with 8 accounts: a second Target handle would kill it twice, so share.
    let sqlite_index = targets.len() - 1;
    // (target, keys other than its own, a label for the row).
    let mut views = vec![(0usize, None, "")];
    views.extend(floor_views);
    views.extend([
        (sqlite_index, None, ""),
        (sqlite_index, Some(eight), ""),
        (
            sqlite_index,
            Some(with_policy),
            ", key with an access policy",
        ),
        (
            sqlite_index,
            Some(with_limits),
            ", key with rate limits and caps",
        ),
    ]);

    if let Some(pg) = std::env::var("TOLLGATE_BENCH_POSTGRES_URL")
        .ok()
        .filter(|u| !u.is_empty())
    {
        let one = accounts(&pg, 1, "pg1").await;
        let eight = accounts(&pg, 8, "pg8").await;
        let (addr, child) = start_tollgate("postgres", upstream, &pg, &dir).await;
        targets.push(Target {
            name: "tollgate, PostgreSQL, 1 account".into(),
            addr,
            child,
            keys: one,
            metrics: true,
            headers: Vec::new(),
        });
        let pg_index = targets.len() - 1;
        views.push((pg_index, None, ""));
        views.push((pg_index, Some(eight), ""));
    }

    // Peers a user would pick instead, when bench/peers.sh installed them.
    for peer in [
        start_portkey(upstream).await,
        start_litellm(upstream, &dir).await,
    ]
    .into_iter()
    .flatten()
    {
        targets.push(peer);
        views.push((targets.len() - 1, None, ""));
    }

    // Warm up every target (connections, the tokenizer, leases).
    for (index, keys, _) in &views {
        let mut t = targets.remove(*index);
        let saved = keys.clone().map(|k| std::mem::replace(&mut t.keys, k));
        let _ = round(&t, 8, Duration::from_millis(500)).await;
        if let Some(saved) = saved {
            t.keys = saved;
        }
        targets.insert(*index, t);
    }

    println!(
        "{connections} connections, {} s a round, {rounds} rounds, interleaved",
        length.as_secs()
    );
    println!(
        "| target | accounts | conns | requests/s | p50 ms | p99 ms | p99.9 ms | max ms | CPU ms/request | PostgreSQL CPU ms/request | journal tx/request |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let mut totals: Vec<(String, usize, f64)> = Vec::new();
    for conns in [connections, 1] {
        for _ in 0..rounds {
            for (index, keys, label) in &views {
                if conns == 1 && keys.is_some() {
                    continue;
                }
                let mut t = targets.remove(*index);
                let saved = keys.clone().map(|k| std::mem::replace(&mut t.keys, k));
                let accounts = t.keys.len();
                let Round {
                    rps,
                    latencies,
                    cpu,
                    database_cpu,
                    tx,
                } = round(&t, conns, length).await;
                let name = format!("{}{label}", t.name.replace(", 1 account", ""));
                println!(
                    "| {name} | {accounts} | {conns} | {rps:.0} | {:.3} | {:.3} | {:.3} | {:.3} | {cpu:.3} | {database_cpu:.3} | {} |",
                    pct(&latencies, 0.5),
                    pct(&latencies, 0.99),
                    pct(&latencies, 0.999),
                    pct(&latencies, 1.0),
                    if t.metrics {
                        format!("{tx:.4}")
                    } else {
                        "—".into()
                    }
                );
                totals.push((format!("{name} ({accounts})"), conns, rps));
                if let Some(saved) = saved {
                    t.keys = saved;
                }
                targets.insert(*index, t);
            }
        }
    }
    // Ratios of the mean requests/s at full concurrency.
    let mean = |label: &str| {
        let v: Vec<f64> = totals
            .iter()
            .filter(|(n, c, _)| n == label && *c == connections)
            .map(|t| t.2)
            .collect();
        v.iter().sum::<f64>() / v.len().max(1) as f64
    };
    let bare = mean("bare hyper relay (1)");
    println!();
    for label in totals
        .iter()
        .map(|t| t.0.clone())
        .collect::<std::collections::BTreeSet<_>>()
    {
        if label.starts_with("tollgate") || label.starts_with("billed floor") {
            println!(
                "{label}: {:.0} requests/s = {:.0} % of the bare relay's {bare:.0}",
                mean(&label),
                mean(&label) / bare * 100.0
            );
        }
        // tollgate against the floor on its database, with as many accounts.
        for database in ["SQLite", "PostgreSQL"] {
            let accounts = label.rsplit('(').next().unwrap_or_default();
            if label.starts_with(&format!("tollgate, {database} ("))
                && let floor = format!("billed floor, {database} ({accounts}")
                && mean(&floor) > 0.0
            {
                println!(
                    "{label}: {:.0} % of the billed floor's {:.0}",
                    mean(&label) / mean(&floor) * 100.0,
                    mean(&floor)
                );
            }
        }
    }
    drop(targets);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--wal`: `requests` billed requests over `connections`, the WAL followed every second.
async fn wal(requests: u64, connections: usize) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    let dir = std::env::temp_dir().join(format!("tollgate-wal-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let upstream = static_upstream().await;
    let path = dir.join("bench.db");
    let sqlite = format!("sqlite://{}", path.display());
    let keys = accounts(&sqlite, 8, "wal").await;
    let (addr, mut child) = start_tollgate("sqlite", upstream, &sqlite, &dir).await;
    let wal_path = dir.join("bench.db-wal");
    let size = |p: &std::path::Path| std::fs::metadata(p).map_or(0, |m| m.len());
    let mib = |b: u64| b as f64 / (1 << 20) as f64;

    let sent = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..connections {
        let auth = format!("Bearer {}", keys[c % keys.len()]);
        let (sent, done) = (sent.clone(), done.clone());
        tasks.push(tokio::spawn(async move {
            let mut connection = Connection::open(addr).await;
            while sent.fetch_add(1, Ordering::Relaxed) < requests {
                connection.embed(&auth, &[]).await;
                done.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    println!("| requests | seconds | requests/s | WAL MiB | database MiB |");
    println!("|---|---|---|---|---|");
    let (mut largest, mut samples, mut last_printed) = (0u64, 0u64, 0u64);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    while done.load(Ordering::Relaxed) < requests {
        tick.tick().await;
        let (n, w) = (done.load(Ordering::Relaxed), size(&wal_path));
        largest = largest.max(w);
        samples += 1;
        // A row per tenth of the run.
        if n >= last_printed + requests / 10 || n >= requests {
            last_printed = n;
            let t = started.elapsed().as_secs_f64();
            println!(
                "| {n} | {t:.0} | {:.0} | {:.1} | {:.1} |",
                n as f64 / t,
                mib(w),
                mib(size(&path))
            );
        }
    }
    for t in tasks {
        t.await.unwrap();
    }
    let at_end = size(&wal_path);
    // A clean stop: SIGTERM, as an operator's service manager sends it.
    let _ = Command::new("kill").arg(child.id().to_string()).status();
    let _ = child.wait();
    println!(
        "\n{requests} requests in {:.0} s; WAL largest {:.1} MiB (sampled {samples} times, once a \
         second), {:.1} MiB at the end, {:.1} MiB after a clean stop; database {:.1} MiB",
        started.elapsed().as_secs_f64(),
        mib(largest),
        mib(at_end),
        mib(size(&wal_path)),
        mib(size(&path))
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--instructions FEW MANY CONNECTIONS`: CPU instructions per billed request, counted by
/// callgrind (deterministic where time is not: `docs/benchmarks.md`, "Instructions per
/// request"). Each relaying process — the bare relay, tollgate on SQLite with 1 key and with 8 —
/// runs under `valgrind --tool=callgrind` twice, serving FEW and then MANY requests over
/// CONNECTIONS connections, float and base64 requests alike; (MANY's count − FEW's) ÷ (MANY −
/// FEW) is what one request costs, start-up and shutdown cancelling out. Only the relaying
/// process is counted, never the load generator or the upstream (this process).
/// `TOLLGATE_BENCH_KEEP=1` keeps callgrind's files, for `callgrind_annotate`.
async fn instructions(few: u64, many: u64, connections: usize) {
    assert!(many > few, "MANY must be more than FEW");
    let dir = std::env::temp_dir().join(format!("tollgate-instructions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let upstream = static_upstream().await;
    println!(
        "instructions per request (callgrind; {few} and {many} requests over {connections} connections)"
    );
    println!(
        "{:<34} {:>16} {:>16}",
        "relaying process", "float request", "base64 request"
    );
    let mut bare_per = [0.0f64; 2];
    for (name, keys) in [
        ("bare hyper relay", 0usize),
        ("tollgate, SQLite, 1 key", 1),
        ("tollgate, SQLite, 8 keys", 8),
    ] {
        let mut per = [0.0f64; 2];
        for (i, body) in [REQUEST_FLOAT, REQUEST].into_iter().enumerate() {
            let mut counts = Vec::new();
            for n in [few, many] {
                let run = dir.join(format!("run-{keys}-{i}-{n}"));
                std::fs::create_dir_all(&run).unwrap();
                counts.push(counted(&run, upstream, keys, n, connections, body).await);
            }
            per[i] = (counts[1] - counts[0]) as f64 / (many - few) as f64;
        }
        if keys == 0 {
            bare_per = per;
            println!("{name:<34} {:>16.0} {:>16.0}", per[0], per[1]);
        } else {
            println!(
                "{name:<34} {:>9.0} ({:>4.1}×) {:>9.0} ({:>4.1}×)",
                per[0],
                per[0] / bare_per[0],
                per[1],
                per[1] / bare_per[1]
            );
        }
    }
    if std::env::var_os("TOLLGATE_BENCH_KEEP").is_some() {
        println!(
            "callgrind's files kept in {} (callgrind_annotate FILE)",
            dir.display()
        );
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// One relaying process under callgrind (`keys` 0: the bare relay; else tollgate with that many
/// keys) serving `n` requests of `body`, then stopped with SIGTERM: the instructions it ran.
async fn counted(
    run: &std::path::Path,
    upstream: SocketAddr,
    keys: usize,
    n: u64,
    connections: usize,
    body: &'static str,
) -> u64 {
    let out = run.join("callgrind.out");
    let addr = free_port();
    let mut command = Command::new("valgrind");
    command.args([
        "--tool=callgrind",
        "--quiet",
        "--dump-line=no",
        &format!("--callgrind-out-file={}", out.display()),
    ]);
    let exe = std::env::current_exe().unwrap();
    let auth: Vec<String> = if keys == 0 {
        command.arg(&exe).args([
            "--bare-relay",
            &addr.to_string(),
            &format!("http://{upstream}"),
        ]);
        vec![String::new()]
    } else {
        let database = format!("sqlite://{}", run.join("bench.db").display());
        let secrets = accounts(&database, keys, "instructions").await;
        let config = run.join("tollgate.toml");
        std::fs::write(
            &config,
            format!(
                "[log]\nfilter = \"warn\"\n[server]\ndrain_seconds = 0\n[simulator]\nenabled = false\n[tasks]\nworkers = false\n[[channels]]\nname = \"static\"\nformat = \"openai-embeddings\"\nbase_url = \"http://{upstream}\"\nmax_concurrency = 1024\n[models.\"text-embedding-3-small\"]\nkind = \"embeddings\"\nchannels = [\"static\"]\nprice = {{ meter = \"tokens\", per_million_tokens = \"0.02\" }}\n"
            ),
        )
        .unwrap();
        let binary = exe.parent().unwrap().parent().unwrap().join("tollgate");
        command
            .arg(binary)
            .args(["serve", "--config"])
            .arg(&config)
            .args(["--listen", &addr.to_string(), "--database-url", &database]);
        secrets
    };
    let mut child = command
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("valgrind, and the binaries built: cargo build --release -p tollgate");
    // Under callgrind a start takes seconds.
    for _ in 0..1200 {
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut tasks = Vec::new();
    for c in 0..connections {
        let auth = format!("Bearer {}", auth[c % auth.len()]);
        let share = n / connections as u64 + u64::from((c as u64) < n % connections as u64);
        tasks.push(tokio::spawn(async move {
            let mut connection = Connection::open(addr).await;
            for _ in 0..share {
                connection.embed_with(&auth, body).await;
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let status = child.wait().unwrap();
    assert!(
        status.success(),
        "the process under callgrind ended {status}"
    );
    let text = std::fs::read_to_string(&out).unwrap();
    text.lines()
        .find_map(|line| {
            line.strip_prefix("summary:")
                .or_else(|| line.strip_prefix("totals:"))
        })
        .and_then(|n| n.split_whitespace().next()?.parse().ok())
        .expect("callgrind's summary line")
}
