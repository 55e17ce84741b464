//! What the process-level tests share: a scratch directory kept when a test fails, `tollgate
//! serve` child processes (killed when dropped, their logs printed on failure), and one-shot
//! HTTP/1.1 exchanges.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod portal;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Writes `tollgate.toml` in the scratch directory: one embeddings model on one channel named
/// `channel` at `upstream` (a simulator's base URL), no in-process simulator, no task workers.
pub fn embeddings_config(scratch: &Scratch, upstream: &str, channel: &str) -> PathBuf {
    let text = format!(
        r#"
[simulator]
enabled = false

[tasks]
workers = false

[[channels]]
name = "{channel}"
format = "openai-embeddings"
base_url = "{upstream}"

[models."text-embedding-3-small"]
kind = "embeddings"
channels = ["{channel}"]
price = {{ meter = "tokens", per_million_tokens = "0.02" }}
"#
    );
    let path = scratch.dir.join("tollgate.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Writes `tollgate.toml` in the scratch directory: one t2a model at 0.0001 a character on a
/// channel at `upstream` (a simulator's base URL), so that [`SPEECH`]'s 20 characters are held
/// and charged exactly 0.002; `top` goes before every table (top-level keys), `tables` after
/// the fixed ones.
pub fn t2a_config(scratch: &Scratch, upstream: &str, top: &str, tables: &str) -> PathBuf {
    let text = format!(
        r#"{top}
[log]
filter = "info"

[simulator]
enabled = false

[tasks]
workers = false
{tables}
[[channels]]
name = "t2a"
format = "t2a"
base_url = "{upstream}"
first_byte_timeout_ms = 120000
idle_timeout_ms = 120000

[models."speech-2.8-turbo"]
kind = "speech"
channels = ["t2a"]
price = {{ meter = "characters", per_million_characters = "100" }}
"#
    );
    let path = scratch.dir.join("tollgate.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// A whole (not streamed) t2a request of 20 characters.
pub const SPEECH: &str = r#"{"model":"speech-2.8-turbo","text":"twenty characters ok","stream":false,"voice_setting":{"voice_id":"v"},"audio_setting":{"format":"mp3"}}"#;

/// Whether a t2a answer (HTTP 200 either way) is a success in its `base_resp`.
pub fn t2a_answer_ok(body: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .is_some_and(|v| v["base_resp"]["status_code"] == 0)
}

/// Sends `signal` (`-STOP`, `-CONT`, `-TERM`) to a gateway's process.
pub fn signal(gateway: &Gateway, signal: &str) {
    let status = Command::new("kill")
        .args([signal, &gateway.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill {signal}");
}

/// Waits until `done` holds, for at most `limit`.
pub async fn wait_for(what: &str, limit: Duration, mut done: impl AsyncFnMut() -> bool) {
    let started = Instant::now();
    while !done().await {
        assert!(started.elapsed() < limit, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A temporary directory, kept when the test fails (it holds the gateways' logs).
pub struct Scratch {
    pub dir: PathBuf,
    /// Unique per run: account and channel names on a shared database.
    pub tag: String,
}

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let tag = format!("{name}-{}-{nanos}", std::process::id());
        let dir = std::env::temp_dir().join(format!("tollgate-{tag}"));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch { dir, tag }
    }

    pub fn sqlite_url(&self) -> String {
        format!("sqlite://{}/t.db", self.dir.display())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept {} for inspection", self.dir.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

// ---- gateway processes ----

/// One `tollgate serve` child process; killed when dropped, its log printed if the test failed.
pub struct Gateway {
    pub name: String,
    pub child: Child,
    pub addr: String,
    pub log: PathBuf,
}

impl Gateway {
    pub async fn start(scratch: &Scratch, name: &str, config: &Path, db: &str) -> Gateway {
        Gateway::start_on(scratch, name, config, db, "127.0.0.1:0").await
    }

    /// [`Gateway::start`], listening on `listen` (port 0: any).
    pub async fn start_on(
        scratch: &Scratch,
        name: &str,
        config: &Path,
        db: &str,
        listen: &str,
    ) -> Gateway {
        Gateway::start_with(scratch, name, config, db, listen, &[]).await
    }

    /// [`Gateway::start_on`] with `env` set for the process.
    pub async fn start_with(
        scratch: &Scratch,
        name: &str,
        config: &Path,
        db: &str,
        listen: &str,
        env: &[(&str, &str)],
    ) -> Gateway {
        let log = scratch.dir.join(format!("{name}.log"));
        let stderr = std::fs::File::create(&log).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_tollgate"))
            .envs(env.iter().copied())
            .arg("serve")
            .arg("--config")
            .arg(config)
            .args(["--listen", listen, "--database-url", db])
            .env_remove("TOLLGATE_CONFIG")
            .env_remove("TOLLGATE_LISTEN")
            .env_remove("TOLLGATE_DATABASE_URL")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .unwrap();
        let mut gateway = Gateway {
            name: name.to_owned(),
            child,
            addr: String::new(),
            log,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        // Port 0: the bound address is announced on stderr.
        while gateway.addr.is_empty() {
            assert!(Instant::now() < deadline, "{name} did not start");
            if let Some(status) = gateway.child.try_wait().unwrap() {
                panic!("{name} exited at start: {status}");
            }
            let text = std::fs::read_to_string(&gateway.log).unwrap_or_default();
            if let Some(rest) = text.split("tollgate listening on http://").nth(1) {
                gateway.addr = rest.lines().next().unwrap().trim().to_owned();
            } else {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        loop {
            assert!(
                Instant::now() < deadline,
                "{name}: /healthz never answered 200"
            );
            if let Ok((200, _)) = http(&gateway.addr, "GET", "/healthz", None, None).await {
                return gateway;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGKILL: no drain, no cleanup, exactly a crash.
    pub fn kill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// The value of a counter or gauge without labels (or with exactly `labels`), 0 when absent.
    pub async fn metric(&self, series: &str) -> f64 {
        let (status, text) = http(&self.addr, "GET", "/metrics", None, None)
            .await
            .unwrap();
        assert_eq!(status, 200, "{text}");
        let prefix = format!("{series} ");
        text.lines()
            .find_map(|line| line.strip_prefix(&prefix))
            .map_or(0.0, |n| n.trim().parse().unwrap())
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(300)..];
            eprintln!(
                "---- {} log ({}, last {} of {} lines) ----\n{}\n---- end of {} log ----",
                self.name,
                self.log.display(),
                tail.len(),
                lines.len(),
                tail.join("\n"),
                self.name
            );
        }
    }
}

// ---- HTTP ----

/// One HTTP/1.1 exchange on a fresh connection: the status and the body.
pub async fn http(
    addr: &str,
    method: &str,
    path: &str,
    key: Option<&str>,
    body: Option<&str>,
) -> std::io::Result<(u16, String)> {
    http_from(None, addr, method, path, key, body).await
}

/// [`http`] from the loopback address `source` (another client), when given.
pub async fn http_from(
    source: Option<std::net::Ipv4Addr>,
    addr: &str,
    method: &str,
    path: &str,
    key: Option<&str>,
    body: Option<&str>,
) -> std::io::Result<(u16, String)> {
    let mut stream = match source {
        None => tokio::net::TcpStream::connect(addr).await?,
        Some(source) => {
            let socket = tokio::net::TcpSocket::new_v4()?;
            socket.bind((source, 0).into())?;
            let to: std::net::SocketAddr = addr.parse().map_err(std::io::Error::other)?;
            socket.connect(to).await?
        }
    };
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    if let Some(key) = key {
        head.push_str(&format!("Authorization: Bearer {key}\r\n"));
    }
    let body = body.unwrap_or_default();
    if !body.is_empty() {
        head.push_str("Content-Type: application/json\r\n");
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(head.as_bytes()).await?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await?;
    let text = String::from_utf8_lossy(&raw);
    let bad = || std::io::Error::other(format!("not an HTTP response: {text:?}"));
    let (head, body) = text.split_once("\r\n\r\n").ok_or_else(bad)?;
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(bad)?;
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    Ok((status, if chunked { dechunk(body) } else { body.into() }))
}

/// One raw HTTP/1.1 exchange on a fresh connection with `headers`: the status, the head (lower
/// case) and the body (de-chunked).
pub async fn exchange(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let head = head.to_ascii_lowercase();
    let body = if head.contains("transfer-encoding: chunked") {
        dechunk(body)
    } else {
        body.to_owned()
    };
    (status, head, body)
}

pub fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.split(';').next().unwrap().trim(), 16).unwrap();
        if size == 0 {
            break;
        }
        out.push_str(&after[..size]);
        rest = &after[size + 2..];
    }
    out
}

// ---- the CLI ----

/// What a run of the CLI did.
pub struct CliRun {
    /// It exited 0.
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

impl CliRun {
    /// Everything it printed, stdout then stderr.
    pub fn said(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

/// `tollgate ARGS… --config CONFIG --database-url DB`, with no configuration from the
/// environment.
pub fn cli(config: &Path, db: &str, args: &[&str]) -> CliRun {
    let output = Command::new(env!("CARGO_BIN_EXE_tollgate"))
        .args(args)
        .arg("--config")
        .arg(config)
        .args(["--database-url", db])
        .env_remove("TOLLGATE_CONFIG")
        .env_remove("TOLLGATE_DATABASE_URL")
        .env_remove("TOLLGATE_LEDGER_KEY_FILE")
        .output()
        .unwrap();
    CliRun {
        ok: output.status.success(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

// ---- the audit ----

/// `tollgate audit --json --recompute` on `db` (with `config`, when given): the report (every
/// charge re-derived from its price version, too), and whether it exited 0.
pub fn audit(db: &str, config: Option<&Path>) -> (serde_json::Value, bool) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tollgate"));
    command
        .args(["audit", "--json", "--recompute", "--database-url", db])
        .env_remove("TOLLGATE_DATABASE_URL")
        .env_remove("TOLLGATE_CONFIG");
    if let Some(config) = config {
        command.arg("--config").arg(config);
    }
    let output = command.output().unwrap();
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "audit printed no JSON ({e}): {} {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (report, output.status.success())
}

/// The audit's violations whose subject names one of `names` (an account's id, its name): a
/// shared PostgreSQL keeps other tests' rows too.
pub fn violations_of(report: &serde_json::Value, names: &[&str]) -> Vec<serde_json::Value> {
    report["violations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| {
            let subject = v["subject"].as_str().unwrap_or_default();
            names.iter().any(|n| subject.contains(n))
        })
        .cloned()
        .collect()
}

// ---- the ledger ----

/// The charge row of `task` in `account`'s ledger, once it has one (within a minute).
pub async fn task_charge(
    store: &tollgate_store::Store,
    account: &str,
    task: &str,
) -> tollgate_store::LedgerEntry {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let rows = store.ledger(account).await.unwrap();
        if let Some(row) = rows.into_iter().find(|r| {
            r.kind == tollgate_store::LedgerKind::Charge && r.task_id.as_deref() == Some(task)
        }) {
            return row;
        }
        assert!(Instant::now() < deadline, "task {task} was never charged");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A TCP proxy between a replica and PostgreSQL. Armed, it forwards the next request that
/// carries a batch of charges (its JSON's `"share":`), lets the database answer, drops the
/// answer and resets both sides: the commit happened, and the replica never hears of it. Cut,
/// nothing passes at all.
pub struct LossyLink {
    /// The database URL through the proxy.
    pub url: String,
    /// Set: the next batch of charges' answer is dropped.
    pub armed: Arc<AtomicBool>,
    /// Answers dropped so far.
    pub dropped: Arc<AtomicU64>,
    /// Set: nothing passes.
    pub cut: Arc<AtomicBool>,
}

impl LossyLink {
    pub async fn start(db: &str) -> LossyLink {
        let (scheme, rest) = db.split_once("://").unwrap();
        let (user, rest) = rest.rsplit_once('@').map_or(("", rest), |(u, r)| (u, r));
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let upstream = tokio::net::lookup_host(authority)
            .await
            .unwrap()
            .next()
            .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxy = listener.local_addr().unwrap();
        let armed = Arc::new(AtomicBool::new(false));
        let dropped = Arc::new(AtomicU64::new(0));
        let cut = Arc::new(AtomicBool::new(false));
        let (armed2, dropped2, cut2) = (armed.clone(), dropped.clone(), cut.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = tokio::net::TcpStream::connect(upstream).await else {
                    continue;
                };
                let (armed, dropped, cut) = (armed2.clone(), dropped2.clone(), cut2.clone());
                tokio::spawn(async move {
                    let (mut client_read, mut client_write) = client.into_split();
                    let (mut server_read, mut server_write) = server.into_split();
                    // Set when this connection carried the armed batch: its next answer is
                    // swallowed and the connection dies.
                    let doomed = Arc::new(AtomicBool::new(false));
                    let doomed_up = doomed.clone();
                    let cut_up = cut.clone();
                    let up = tokio::spawn(async move {
                        let mut buf = vec![0u8; 64 << 10];
                        loop {
                            let n = match client_read.read(&mut buf).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => n,
                            };
                            while cut_up.load(Ordering::SeqCst) {
                                tokio::time::sleep(Duration::from_millis(20)).await;
                            }
                            let chunk = &buf[..n];
                            if chunk.windows(8).any(|w| w == b"\"share\":")
                                && armed.swap(false, Ordering::SeqCst)
                            {
                                doomed_up.store(true, Ordering::SeqCst);
                            }
                            if server_write.write_all(chunk).await.is_err() {
                                return;
                            }
                        }
                    });
                    let mut buf = vec![0u8; 64 << 10];
                    loop {
                        let n = match server_read.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => n,
                        };
                        while cut.load(Ordering::SeqCst) {
                            tokio::time::sleep(Duration::from_millis(20)).await;
                        }
                        if doomed.load(Ordering::SeqCst) {
                            // The database answered (it committed); the replica never hears.
                            dropped.fetch_add(1, Ordering::SeqCst);
                            break;
                        }
                        if client_write.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                    up.abort();
                });
            }
        });
        let at = if user.is_empty() {
            String::new()
        } else {
            format!("{user}@")
        };
        LossyLink {
            url: format!("{scheme}://{at}{proxy}/{path}"),
            armed,
            dropped,
            cut,
        }
    }
}
