//! A whole gateway on loopback ports for end-to-end tests: the simulator, a store (a temporary
//! SQLite file, or PostgreSQL when `TOLLGATE_TEST_POSTGRES_URL` is set), the gateway served by
//! the real server loop, and a small HTTP client.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;
use tollgate_billing::Amount;
use tollgate_gateway::{Gateway, Parts, server};
use tollgate_request::State;
use tollgate_settings::Config;
use tollgate_settings::media::MediaLinks;
use tollgate_sim::{KnobSettings, SimHandle};
use tollgate_store::Store;

/// The default models and prices, with channels on the test's simulator.
pub const MODELS: &str = r#"
[[channels]]
name = "primary"
format = "openai-embeddings"
base_url = "sim"
first_byte_timeout_ms = 1500
idle_timeout_ms = 1500

[[channels]]
name = "secondary"
format = "openai-embeddings"
base_url = "sim"

[[channels]]
name = "t2a"
format = "t2a"
base_url = "sim"
first_byte_timeout_ms = 3000
idle_timeout_ms = 3000

[[channels]]
name = "stt"
format = "stt"
base_url = "sim"
first_byte_timeout_ms = 5000
idle_timeout_ms = 5000

[models."asr-1.0"]
kind = "transcription"
channels = ["stt"]
price = { meter = "audio_seconds", per_second = "0.0001" }

[models."speech-2.8-hd"]
kind = "speech"
channels = ["t2a"]
price = { meter = "characters", per_million_characters = "100" }

[models."speech-2.8-turbo"]
kind = "speech"
channels = ["t2a"]
price = { meter = "characters", per_million_characters = "60" }

[models."text-embedding-3-small"]
kind = "embeddings"
channels = ["primary"]
price = { meter = "tokens", per_million_tokens = "0.02" }

[models."text-embedding-3-large"]
kind = "embeddings"
channels = ["primary", "secondary"]
price = { meter = "tokens", per_million_tokens = "0.13" }

[models."text-embedding-ada-002"]
kind = "embeddings"
channels = ["primary"]
price = { meter = "tokens", per_million_tokens = "0.10" }

[aliases]
"embed-small" = "text-embedding-3-small"
"tts-1" = "speech-2.8-turbo"
"gpt-4o-mini-tts" = "speech-2.8-turbo"
"tts-1-hd" = "speech-2.8-hd"
"whisper-1" = "asr-1.0"

[limits]
embeddings = 65536
"#;

pub struct TestGateway {
    pub addr: SocketAddr,
    /// The TLS listener's address, when the configuration has `[tls]`.
    pub tls_addr: Option<SocketAddr>,
    pub sim: SimHandle,
    pub store: Store,
    /// The database's URL, for a test that writes it as an insider would.
    pub database_url: String,
    pub state: Arc<State>,
    stop: Option<oneshot::Sender<()>>,
    served: Option<tokio::task::JoinHandle<()>>,
    workers: Vec<tokio::task::JoinHandle<()>>,
    client: Client<HttpConnector, Full<Bytes>>,
}

pub struct Reply {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

impl Reply {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    /// The body as text, for messages.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

pub async fn store() -> Store {
    store_at().await.0
}

/// A store for one test, and its database's URL (to write it as an insider would).
pub async fn store_at() -> (Store, String) {
    let url = match std::env::var("TOLLGATE_TEST_POSTGRES_URL") {
        Ok(url) => url,
        Err(_) => {
            let dir = std::env::temp_dir().join(format!("tollgate-e2e-{}", unique()));
            format!("sqlite://{}/t.db", dir.display())
        }
    };
    (Store::connect(&url).await.unwrap(), url)
}

pub fn unique() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "{}-{nanos}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

impl TestGateway {
    pub async fn start() -> TestGateway {
        Self::with_config(MODELS).await
    }

    pub async fn with_config(toml: &str) -> TestGateway {
        Self::with_config_env(toml, |_| None).await
    }

    /// [`TestGateway::with_config`], with `env` standing for the environment that holds the
    /// channels' keys.
    pub async fn with_config_env(toml: &str, env: impl Fn(&str) -> Option<String>) -> TestGateway {
        let sim = tollgate_sim::start("127.0.0.1:0".parse().unwrap(), KnobSettings::default())
            .await
            .unwrap();
        let mut config = Config::parse(toml).unwrap();
        // A test gateway stops at once, unless the test is about the drain.
        if !toml.contains("[server]") {
            config.server.drain_seconds = 0;
        }
        let (store, database_url) = store_at().await;
        let state = tollgate_gateway::build(
            &config,
            Parts {
                store: store.clone(),
                sim_base_url: Some(&sim.base_url()),
                env: &env,
                media: MediaLinks::new(&config.media, b"an e2e test's media link key...."),
            },
        )
        .unwrap();
        // Pollers only when the configuration has task channels; the sweeper with them.
        let has_task_channels = state
            .settings
            .snapshot()
            .catalog
            .channels()
            .iter()
            .any(|c| c.format.is_video_tasks());
        let workers = if has_task_channels && config.tasks.workers {
            tollgate_gateway::tasks::worker::spawn(&state)
        } else {
            Vec::new()
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let gateway = Gateway::new(state.clone(), &tollgate_gateway::routes::TABLE)
            .with_operator_side(std::sync::Arc::new(tollgate_admin::Admin::new(
                None,
                &tollgate_gateway::routes::TABLE.specs(),
            )))
            .with_customer_side(std::sync::Arc::new(tollgate_portal::Portal));
        // The TLS listener, when the configuration has one.
        let tls = config
            .tls
            .as_ref()
            .map(|tls| server::TlsListener::bind(tls).unwrap().0);
        let tls_addr = tls.as_ref().map(|t| t.listener.local_addr().unwrap());
        let served = tokio::spawn(server::serve(
            listener,
            tls,
            gateway,
            async {
                let _ = stopped.await;
            },
            Duration::from_secs(5),
        ));
        TestGateway {
            addr,
            tls_addr,
            sim,
            store,
            database_url,
            state,
            stop: Some(stop),
            served: Some(served),
            workers,
            client: Client::builder(TokioExecutor::new()).build_http(),
        }
    }

    /// A new account with `balance` and its key.
    pub async fn account(&self, balance: &str) -> (String, String) {
        let (account, key) = self
            .store
            .create_account(&format!("acct-{}", unique()), balance.parse().unwrap())
            .await
            .unwrap();
        (account.id, key.secret)
    }

    /// A new key on `account` whose own policy is `policy` (new: no cached lookup of it).
    pub async fn key_with(
        &self,
        account: &str,
        policy: tollgate_store::AccessPolicy,
    ) -> tollgate_store::NewKey {
        let key = self.store.create_key(account, "test").await.unwrap();
        self.store
            .set_policy(&tollgate_store::PolicyHolder::Key(key.id.clone()), &policy)
            .await
            .unwrap();
        key
    }

    /// Open holds of the account: the ledger engine's (requests, in memory) and the store's
    /// (video tasks).
    pub async fn open_holds(&self, account_id: &str) -> u64 {
        let tasks = self.store.report(account_id).await.unwrap().open_holds;
        self.state.ledger.open_holds(account_id) + u64::try_from(tasks).unwrap()
    }

    /// Waits (up to 20 s) until the account's request holds are closed and the journal that
    /// carries their charges is written.
    pub async fn settled(&self, account_id: &str) {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while self.state.ledger.open_holds(account_id) > 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "{} holds still open",
                self.state.ledger.open_holds(account_id)
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.state.ledger.flush().await;
    }

    /// Waits (up to 10 s) until the account's live sessions are closed: their rows, their
    /// last charges.
    pub async fn sessions_closed(&self, account_id: &str) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let open = self
                .store
                .open_sessions(Some(account_id), 10_000)
                .await
                .unwrap();
            if !open.iter().any(|s| s.account_id == account_id) {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the session stayed open"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The account's own invariants, and every charge re-derived from its quantity and price
    /// version (`tollgate audit`; the database may be shared with other tests); no hold open.
    pub async fn audit_account(&self, account_id: &str) {
        let report = self.store.audit().await.unwrap();
        let recompute = self.store.recompute().await.unwrap();
        let mine: Vec<_> = report
            .violations
            .iter()
            .chain(&recompute.violations)
            .filter(|v| v.subject.contains(account_id))
            .collect();
        assert!(mine.is_empty(), "violations: {mine:?}");
        let held = self.store.open_holds_total(account_id).await.unwrap();
        assert_eq!(held, Amount::ZERO, "no hold stays open");
    }

    /// What `account_id`, opened with 10, has been charged, once it holds nothing.
    pub async fn spent_of_ten(&self, account_id: &str) -> Amount {
        self.settled(account_id).await;
        Amount::from_nanos(10_000_000_000 - self.balance(account_id).await.nanos())
    }

    pub async fn balance(&self, account_id: &str) -> Amount {
        self.store.find_account(account_id).await.unwrap().balance
    }

    pub async fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: impl Into<Bytes>,
    ) -> Reply {
        let mut builder = http::Request::builder()
            .method(method)
            .uri(format!("http://{}{path}", self.addr));
        for (k, v) in headers {
            builder = builder.header(*k, *v);
        }
        let response = self
            .client
            .request(builder.body(Full::new(body.into())).unwrap())
            .await
            .unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        Reply {
            status,
            headers,
            body,
        }
    }

    /// A request to this gateway's simulator (its test routes, `/_sim/…`).
    pub async fn sim_request(&self, method: &str, path: &str, body: impl Into<Bytes>) -> Reply {
        let request = http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.sim.base_url()))
            .header("content-type", "application/json")
            .body(Full::new(body.into()))
            .unwrap();
        let response = self.client.request(request).await.unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        Reply {
            status,
            headers,
            body,
        }
    }

    /// Sends a request and returns the response with its body unread, to read it piece by piece.
    pub async fn open(
        &self,
        path: &str,
        key: &str,
        body: &serde_json::Value,
    ) -> http::Response<hyper::body::Incoming> {
        let request = http::Request::post(format!("http://{}{path}", self.addr))
            .header("authorization", format!("Bearer {key}"))
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(serde_json::to_vec(body).unwrap())))
            .unwrap();
        self.client.request(request).await.unwrap()
    }

    /// `POST path` with a JSON body and a Bearer key.
    pub async fn post_json(&self, path: &str, key: &str, body: &serde_json::Value) -> Reply {
        let auth = format!("Bearer {key}");
        self.request(
            "POST",
            path,
            &[
                ("authorization", &auth),
                ("content-type", "application/json"),
            ],
            serde_json::to_vec(body).unwrap(),
        )
        .await
    }

    pub fn set_knobs(&self, knobs: KnobSettings) {
        self.sim.knobs().set(knobs);
    }

    pub fn upstream_calls(&self) -> u64 {
        self.sim.knobs().served("POST /v1/embeddings")
    }

    /// `GET path` with a Bearer key.
    pub async fn get(&self, path: &str, key: &str) -> Reply {
        let auth = format!("Bearer {key}");
        self.request("GET", path, &[("authorization", &auth)], Bytes::new())
            .await
    }

    /// Requests the simulator served on `route`, e.g. `"POST /v1/t2a_v2"`.
    pub fn calls(&self, route: &str) -> u64 {
        self.sim.knobs().served(route)
    }

    /// Signals shutdown and waits for the drain to finish.
    pub async fn stop(mut self) {
        for worker in self.workers.drain(..) {
            worker.abort();
        }
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(served) = self.served.take() {
            served.await.unwrap();
        }
    }

    pub fn trigger_shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

pub mod audio;

/// Speech the simulator synthesized, as a 16 kHz mono WAV file (it carries its text, so
/// recognising it returns the text).
pub fn wav(text: &str) -> Vec<u8> {
    tollgate_sim::audio::synthesize(
        text,
        &tollgate_sim::audio::Synthesis {
            format: tollgate_sim::audio::AudioFormat::Wav,
            sample_rate: 16_000,
            channels: 1,
            bitrate: 128_000,
            speed: 1.0,
        },
    )
    .unwrap()
}

/// A multipart body: text fields, then the file.
pub fn multipart(fields: &[(&str, &str)], filename: &str, file: &[u8]) -> (String, Vec<u8>) {
    let boundary = "tollgate-test-boundary";
    let mut body = Vec::new();
    for (name, value) in fields {
        body.extend(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .bytes(),
        );
    }
    body.extend(
        format!("--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\nContent-Type: application/octet-stream\r\n\r\n").bytes(),
    );
    body.extend_from_slice(file);
    body.extend(format!("\r\n--{boundary}--\r\n").bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// The L2 norm of a vector.
pub fn norm(v: &[f32]) -> f64 {
    v.iter()
        .map(|x| f64::from(*x) * f64::from(*x))
        .sum::<f64>()
        .sqrt()
}

/// A small HTTP/1.1 file server on loopback for media a request names by URL (a reference
/// video, a `fileData` URI): `answer` decides each request's status and body from its parts —
/// so a test can answer the gateway's ranged probe one way and the vendor's fetch another.
/// Returns its base URL (`http://127.0.0.1:PORT`).
pub async fn file_server(
    answer: impl Fn(&http::request::Parts) -> (u16, Bytes) + Send + Sync + 'static,
) -> String {
    typed_server(move |parts| {
        let (status, body) = answer(parts);
        (status, None, body)
    })
    .await
}

/// [`file_server`] whose answers may name their `Content-Type`.
pub async fn typed_server(
    answer: impl Fn(&http::request::Parts) -> (u16, Option<String>, Bytes) + Send + Sync + 'static,
) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let answer = Arc::new(answer);
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let answer = answer.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(
                    move |request: http::Request<hyper::body::Incoming>| {
                        let answer = answer.clone();
                        async move {
                            // Read the whole upload before answering, as a vendor does: a
                            // server that answers first and closes resets a client still
                            // sending, and the gateway rightly calls that a broken answer.
                            let (parts, body) = request.into_parts();
                            let _ = body.collect().await;
                            let (status, content_type, body) = answer(&parts);
                            let mut response = http::Response::new(Full::new(body));
                            *response.status_mut() = http::StatusCode::from_u16(status).unwrap();
                            if let Some(value) = content_type {
                                response.headers_mut().insert(
                                    http::header::CONTENT_TYPE,
                                    http::HeaderValue::from_str(&value).unwrap(),
                                );
                            }
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
    format!("http://{addr}")
}

/// One answer of a [`socket_server`]: when a client's message matches `on` (see
/// [`message_is`]), the server sends `frames`, then closes the socket when `close` says so.
#[derive(Debug, Clone)]
pub struct SocketReply {
    pub on: String,
    pub frames: Vec<String>,
    pub close: bool,
}

/// Whether a live session's message is `name`: its `type` is (OpenAI Realtime), or the path of
/// keys `name` spells (dot-separated) leads to a value that is not null (Gemini Live:
/// `setup`, `serverContent.turnComplete`).
pub fn message_is(message: &serde_json::Value, name: &str) -> bool {
    if message["type"].as_str() == Some(name) {
        return true;
    }
    let mut at = message;
    for key in name.split('.') {
        match at.get(key) {
            Some(next) if !next.is_null() => at = next,
            _ => return false,
        }
    }
    true
}

/// A WebSocket upstream on loopback that speaks by script, whatever path it is dialed at: on
/// each connection it sends `open`, then answers the client's messages with `replies` in order
/// (each used once, when a message matches its `on`; messages matching none are taken and
/// dropped). Frames go as text, or as binary frames of JSON when `binary` (as Google sends
/// them). Returns its base URL (`http://127.0.0.1:PORT`).
pub async fn socket_server(open: Vec<String>, replies: Vec<SocketReply>, binary: bool) -> String {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (open, replies) = (open.clone(), replies.clone());
            tokio::spawn(async move {
                let Ok(mut socket) = tokio_tungstenite::accept_async(stream).await else {
                    return;
                };
                let frame = |text: &String| {
                    if binary {
                        Message::binary(text.clone().into_bytes())
                    } else {
                        Message::text(text.clone())
                    }
                };
                for text in &open {
                    if socket.send(frame(text)).await.is_err() {
                        return;
                    }
                }
                let mut replies = replies.into_iter().peekable();
                while let Some(Ok(message)) = socket.next().await {
                    let text = match &message {
                        Message::Text(text) => text.as_str().to_owned(),
                        Message::Binary(bytes) => String::from_utf8_lossy(bytes).into_owned(),
                        Message::Close(_) => return,
                        _ => continue,
                    };
                    let Ok(event) = serde_json::from_str::<serde_json::Value>(&text) else {
                        continue;
                    };
                    let Some(reply) = replies.next_if(|r| message_is(&event, &r.on)) else {
                        continue;
                    };
                    for text in &reply.frames {
                        if socket.send(frame(text)).await.is_err() {
                            return;
                        }
                    }
                    if reply.close {
                        // Dropped without a close frame: the vendor's socket breaks.
                        return;
                    }
                }
            });
        }
    });
    format!("http://{addr}")
}

/// `file` with its movie header (`mvhd`, version 0) saying it lasts `seconds`: an MP4 that lies
/// about its length.
pub fn mp4_claiming(file: &[u8], seconds: f64) -> Vec<u8> {
    let mut file = file.to_vec();
    let at = file.windows(4).position(|w| w == b"mvhd").unwrap() + 4;
    assert_eq!(file[at], 0, "a version-0 mvhd");
    let timescale = u32::from_be_bytes(file[at + 12..at + 16].try_into().unwrap());
    let duration = (f64::from(timescale) * seconds) as u32;
    file[at + 16..at + 20].copy_from_slice(&duration.to_be_bytes());
    file
}

/// A real WAV file of `seconds` of silence: 8 kHz, 16-bit mono (16,000 bytes a second).
pub fn silent_wav(seconds: u32) -> Vec<u8> {
    tollgate_sim::audio::silent_wav(seconds, 8_000)
}

/// A real PNG of `width` × `height` grey pixels (8-bit greyscale, zlib's stored blocks: no
/// compression library needed, every decoder reads it).
pub fn png(width: u32, height: u32) -> Vec<u8> {
    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &b in bytes {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xEDB8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }
    fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let start = out.len();
        out.extend_from_slice(kind);
        out.extend_from_slice(data);
        let crc = crc32(&out[start..]);
        out.extend_from_slice(&crc.to_be_bytes());
    }
    // Each row: filter byte 0, then the pixels.
    let mut raw = Vec::with_capacity(((width + 1) * height) as usize);
    for _ in 0..height {
        raw.push(0);
        raw.extend(std::iter::repeat_n(0x80u8, width as usize));
    }
    let mut zlib = vec![0x78, 0x01];
    let blocks: Vec<&[u8]> = raw.chunks(65_535).collect();
    for (i, block) in blocks.iter().enumerate() {
        zlib.push(u8::from(i + 1 == blocks.len()));
        let len = block.len() as u16;
        zlib.extend_from_slice(&len.to_le_bytes());
        zlib.extend_from_slice(&(!len).to_le_bytes());
        zlib.extend_from_slice(block);
    }
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in &raw {
        a = (a + u32::from(byte)) % 65_521;
        b = (b + a) % 65_521;
    }
    zlib.extend_from_slice(&((b << 16) | a).to_be_bytes());
    let mut png = vec![0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];
    let mut header = Vec::new();
    header.extend_from_slice(&width.to_be_bytes());
    header.extend_from_slice(&height.to_be_bytes());
    header.extend_from_slice(&[8, 0, 0, 0, 0]); // 8-bit greyscale
    chunk(&mut png, b"IHDR", &header);
    chunk(&mut png, b"IDAT", &zlib);
    chunk(&mut png, b"IEND", &[]);
    png
}

/// `tokens` at `per_million` (a price per million tokens), exactly.
pub fn at(tokens: u64, per_million: &str) -> rust_decimal::Decimal {
    rust_decimal::Decimal::from(tokens) * per_million.parse::<rust_decimal::Decimal>().unwrap()
        / rust_decimal::Decimal::from(1_000_000)
}

/// `money` rounded up once to the nano-unit, as a charge is.
pub fn amount(money: rust_decimal::Decimal) -> Amount {
    Amount::from_nanos(
        (money * rust_decimal::Decimal::from(1_000_000_000))
            .ceil()
            .try_into()
            .unwrap(),
    )
}

/// Waits, if need be, until a minute has at least `seconds` left: a test of a per-minute
/// window must not straddle two.
pub async fn fresh_minute(seconds: u64) {
    let now = u64::try_from(tollgate_journal::clock::now_millis()).unwrap();
    let left = 60_000 - now % 60_000;
    if left < seconds * 1_000 {
        tokio::time::sleep(Duration::from_millis(left + 50)).await;
    }
}

/// A TLS connection to a gateway's `[tls]` listener at `addr` as `localhost`, trusting only
/// `cert` (the test's self-signed certificate), as a client given that certificate does.
pub async fn tls_connect(
    addr: SocketAddr,
    cert: rustls::pki_types::CertificateDer<'static>,
) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert).unwrap();
    let client = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(client));
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    connector.connect(name, tcp).await.unwrap()
}
