//! The configuration file (TOML) and the embedded default.
//!
//! [`DEFAULT_CONFIG`] is both what `tollgate config default` prints and what `tollgate serve`
//! runs when no file is given, so the commented file a user edits is exactly the default.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::time::Duration;
use tollgate_billing::{Meter, Tariff};
use tollgate_upstream::formats::{Format, Modality};

/// The embedded default configuration, with comments.
pub const DEFAULT_CONFIG: &str = include_str!("default.toml");

/// The whole configuration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Address to listen on.
    #[serde(default = "default_listen")]
    pub listen: String,
    /// `sqlite://PATH` or `postgres://…`.
    #[serde(default = "default_database_url")]
    pub database_url: String,
    /// Seconds that in-flight requests get to finish after SIGTERM or Ctrl-C.
    #[serde(default = "default_grace")]
    pub shutdown_grace_seconds: u64,
    /// Client connections: timeouts and limits.
    #[serde(default)]
    pub server: ServerConfig,
    /// Logging.
    #[serde(default)]
    pub log: LogConfig,
    /// The in-process simulator.
    #[serde(default)]
    pub simulator: SimulatorConfig,
    /// Extra PEM root certificates for upstream TLS (private CAs).
    #[serde(default)]
    pub extra_root_certificates: Vec<String>,
    /// Request body limits, overriding the per-endpoint defaults.
    #[serde(default)]
    pub limits: BTreeMap<String, usize>,
    /// Client-facing model names that stand for a public model.
    #[serde(default)]
    pub aliases: BTreeMap<String, String>,
    /// Speech synthesis settings.
    #[serde(default)]
    pub speech: SpeechConfig,
    /// Asynchronous video tasks: polling, deadlines, input checks.
    #[serde(default)]
    pub tasks: TasksConfig,
    /// Links to finished videos.
    #[serde(default)]
    pub media: MediaConfig,
    /// The usage log.
    #[serde(default)]
    pub usage: UsageConfig,
    /// The chained ledger's signed checkpoints (`[ledger]`).
    #[serde(default)]
    pub ledger: LedgerConfig,
    /// Traces exported over OTLP/HTTP (`[tracing]`); the standard `OTEL_*` environment
    /// variables win over it.
    #[serde(default)]
    pub tracing: TracingConfig,
    /// How alerts are evaluated and delivered (`[alerting]`).
    #[serde(default)]
    pub alerting: AlertingConfig,
    /// URLs the gateway fetches or posts to that no channel configures (`[outbound]`).
    #[serde(default)]
    pub outbound: OutboundConfig,
    /// Alert rules (`[[alerts]]`, `docs/operations.md`, "Alerts"); checked by
    /// `tollgate_alerts::Rule::from_config`.
    #[serde(default)]
    pub alerts: Vec<tollgate_alerts::RuleConfig>,
    /// Live voice sessions: their limits (`[realtime]`).
    #[serde(default)]
    pub realtime: RealtimeConfig,
    /// A second listener that speaks TLS (`[tls]`): for clients that insist on `https`/`wss`
    /// without a proxy in front (google-genai's Live client with a key).
    #[serde(default)]
    pub tls: Option<TlsConfig>,
    /// Redemption codes: how many wrong ones a client may try (`[codes]`).
    #[serde(default)]
    pub codes: CodesConfig,
    /// The customer portal (`[portal]`).
    #[serde(default)]
    pub portal: PortalConfig,
    /// Top-ups through a payment provider (`[payments.stripe]`).
    #[serde(default)]
    pub payments: PaymentsConfig,
    /// Configured upstreams.
    #[serde(default)]
    pub channels: Vec<ChannelConfig>,
    /// Public models: what they are, where they go, what they cost.
    #[serde(default)]
    pub models: BTreeMap<String, ModelConfig>,
}

/// Client connections: timeouts and limits (`docs/decisions.md`, "Connection hygiene"). Every
/// field has a default; a zero timeout is refused rather than read as "none".
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// Seconds a client has to send a request's headers. On HTTP/1.1 the same clock runs while
    /// a keep-alive connection waits for its next request, so it is also the idle timeout.
    pub header_read_timeout_seconds: u64,
    /// The longest pause, in seconds, between two pieces of a request body (a slow client gets
    /// 408 and the connection is closed).
    pub body_pause_timeout_seconds: u64,
    /// The least average rate of a request body, in bytes a second, over each
    /// `body_min_rate_window_seconds`; 0 turns the check off. A body that trickles in below it
    /// gets 408.
    pub body_min_rate_bytes_per_second: u64,
    /// The window the body's rate is averaged over, in seconds.
    pub body_min_rate_window_seconds: u64,
    /// The most a whole request body may take, in seconds, however steadily it arrives.
    pub body_deadline_seconds: u64,
    /// Multipart uploads (recognition files) one key may have in flight at once; more get 429.
    pub max_uploads_per_key: usize,
    /// HTTP/2: seconds between keep-alive pings while the connection is idle; a peer that does
    /// not answer within as long is dropped.
    pub http2_keep_alive_seconds: u64,
    /// Connections served in full at once. At the cap, the connection idle longest (no
    /// request in flight) is closed to admit a new one (`connections.rs`).
    pub max_connections: usize,
    /// When every connection is busy, this many more are accepted for `/healthz`, `/readyz`
    /// and `/metrics` (everything else on them gets 503); beyond that a connection is closed as
    /// soon as it is accepted.
    pub reserved_connections: usize,
    /// Connections one source (an IPv4 address, an IPv6 /64) may hold; at the cap its own
    /// longest-idle connection gives way, or, all busy, the new one is closed. Trusted proxies
    /// are exempt; 0: no cap.
    pub max_connections_per_source: usize,
    /// HTTP/2: requests in flight on one connection.
    pub http2_max_concurrent_streams: u32,
    /// HTTP/2: the largest header list a client may send, in bytes.
    pub http2_max_header_list_size: u32,
    /// HTTP/2: streams a client may open and reset before the server has answered them, before
    /// the connection is closed (the "rapid reset" attack).
    pub http2_max_pending_accept_reset_streams: usize,
    /// HTTP/2: streams the server may reset for protocol errors before it closes the connection.
    pub http2_max_local_error_reset_streams: usize,
    /// After SIGTERM or Ctrl-C, seconds during which `/readyz` answers 503 while requests are
    /// still accepted (load balancers notice), before the listener closes and in-flight
    /// requests get `shutdown_grace_seconds` to finish.
    pub drain_seconds: u64,
    /// Proxies (CIDRs or addresses) whose `X-Forwarded-For` is believed when an access policy
    /// restricts client networks (`docs/decisions.md`, "Access policies"). Empty: the
    /// connection's peer is the client.
    pub trusted_proxies: Vec<tollgate_store::Cidr>,
    /// Client networks (CIDRs or addresses) that may reach the admin API and the console
    /// (`docs/operations.md`); empty: any network (an admin token is still needed).
    pub admin_networks: Vec<tollgate_store::Cidr>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            header_read_timeout_seconds: 30,
            body_pause_timeout_seconds: 30,
            body_min_rate_bytes_per_second: 1024,
            body_min_rate_window_seconds: 30,
            body_deadline_seconds: 600,
            max_uploads_per_key: 4,
            http2_keep_alive_seconds: 60,
            max_connections: 4096,
            reserved_connections: 64,
            max_connections_per_source: 1024,
            http2_max_concurrent_streams: 256,
            http2_max_header_list_size: 64 << 10,
            http2_max_pending_accept_reset_streams: 32,
            http2_max_local_error_reset_streams: 256,
            drain_seconds: 3,
            trusted_proxies: Vec::new(),
            admin_networks: Vec::new(),
        }
    }
}

impl ServerConfig {
    /// The checks `Config::parse` runs.
    fn check(&self) -> Result<(), String> {
        for (name, value) in [
            (
                "header_read_timeout_seconds",
                self.header_read_timeout_seconds,
            ),
            (
                "body_pause_timeout_seconds",
                self.body_pause_timeout_seconds,
            ),
            (
                "body_min_rate_window_seconds",
                self.body_min_rate_window_seconds,
            ),
            ("body_deadline_seconds", self.body_deadline_seconds),
            ("http2_keep_alive_seconds", self.http2_keep_alive_seconds),
        ] {
            if value == 0 {
                return Err(format!("server.{name} must be at least 1"));
            }
        }
        if self.max_connections == 0 {
            return Err("server.max_connections must be at least 1".into());
        }
        if self.max_uploads_per_key == 0 {
            return Err("server.max_uploads_per_key must be at least 1".into());
        }
        if self.http2_max_concurrent_streams == 0 {
            return Err("server.http2_max_concurrent_streams must be at least 1".into());
        }
        Ok(())
    }
}

/// Traces (`docs/operations.md`, "Traces"): off unless an endpoint is set here or in
/// `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, which win, as
/// `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SERVICE_NAME` and `OTEL_TRACES_SAMPLER[_ARG]` win over the
/// fields below.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TracingConfig {
    /// The collector's OTLP/HTTP base URL (`http://collector:4318`); traces go to its
    /// `/v1/traces`. Empty: no export.
    pub otlp_endpoint: String,
    /// Headers sent with each export (an API key of a hosted collector).
    pub headers: BTreeMap<String, String>,
    /// `service.name` of the traces (default `tollgate`).
    pub service_name: Option<String>,
    /// Which traces are kept: `always_on`, `always_off`, `traceidratio`,
    /// `parentbased_always_on` (the default: a client's decision is followed),
    /// `parentbased_always_off`, `parentbased_traceidratio`.
    pub sampler: Option<String>,
    /// The ratio of the `…traceidratio` samplers, 0 to 1.
    pub sampler_ratio: Option<f64>,
}

/// The URLs the gateway fetches or posts to that no channel configures — clients' media,
/// vendors' records, alert webhooks (`[outbound]`, `docs/decisions.md`, "One address rule";
/// `crate::outbound`): each must name a public host, or one listed here.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OutboundConfig {
    /// Hosts (names or IP literals, compared exactly) allowed though they are not public: an
    /// internal webhook receiver, an internal CDN.
    pub trusted_hosts: Vec<String>,
}

impl Config {
    /// Every host the address rule allows though it is not public: `[outbound] trusted_hosts`
    /// and the older `[tasks] trusted_media_hosts`, lower case.
    pub fn trusted_hosts(&self) -> Vec<String> {
        let mut hosts: Vec<String> = self
            .outbound
            .trusted_hosts
            .iter()
            .chain(&self.tasks.trusted_media_hosts)
            .map(|h| h.trim().to_ascii_lowercase())
            .collect();
        hosts.sort();
        hosts.dedup();
        hosts
    }
}

/// How alerts are evaluated and delivered (`[alerting]`, `docs/decisions.md`, "Alerts").
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AlertingConfig {
    /// How often each replica judges every rule, in seconds.
    pub evaluate_seconds: u64,
    /// The waits after each failed delivery attempt, in seconds (the Standard Webhooks
    /// recommendation by default: eight attempts over about a day).
    pub retry_seconds: Vec<u64>,
    /// How long an attempt may take, in seconds.
    pub timeout_seconds: u64,
}

impl Default for AlertingConfig {
    fn default() -> Self {
        AlertingConfig {
            evaluate_seconds: 30,
            retry_seconds: tollgate_alerts::schedule::DEFAULT_RETRY_SECONDS.to_vec(),
            timeout_seconds: 15,
        }
    }
}

/// The ledger's signed checkpoints (docs/architecture.md, "The chained ledger").
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LedgerConfig {
    /// The operator's Ed25519 key (`tollgate ledger keygen`); without it no checkpoint is
    /// signed. `TOLLGATE_LEDGER_KEY_FILE` overrides it.
    pub signing_key_file: Option<String>,
    /// How often a gateway with the key signs every chain head.
    pub checkpoint_every_seconds: u64,
    /// Public keys (hex) of earlier signing keys whose checkpoints are still believed, after a
    /// rotation; served at `/.well-known/tollgate-ledger-keys` with the current one.
    pub verify_keys: Vec<String>,
    /// A file every checkpoint is also appended to, one JSON line each, outside the database
    /// (`tollgate_store::checkpoint::PublishedLog`): someone who can write the database cannot
    /// rewrite it, and the audit believes what it holds. Keep it on another disk, or ship it
    /// somewhere append-only.
    pub publish_checkpoints: Option<String>,
    /// With a key configured, `tollgate audit` fails when a chained row older than this is
    /// signed by no checkpoint (default: two checkpoint periods and a minute).
    pub checkpoint_stale_seconds: Option<u64>,
}

impl Default for LedgerConfig {
    fn default() -> Self {
        LedgerConfig {
            signing_key_file: None,
            checkpoint_every_seconds: 300,
            verify_keys: Vec::new(),
            publish_checkpoints: None,
            checkpoint_stale_seconds: None,
        }
    }
}

/// The usage log (`docs/decisions.md`, "The usage log").
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UsageConfig {
    /// Days a usage record is kept; 0 keeps them forever. Ledger rows are never pruned.
    pub retention_days: u64,
}

impl Default for UsageConfig {
    fn default() -> Self {
        UsageConfig { retention_days: 90 }
    }
}

/// Logging settings.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogConfig {
    /// `text` or `json`.
    #[serde(default = "default_log_format")]
    pub format: String,
    /// A tracing filter such as `info` or `tollgate_gateway=debug`; `RUST_LOG` overrides it.
    #[serde(default = "default_log_filter")]
    pub filter: String,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            format: default_log_format(),
            filter: default_log_filter(),
        }
    }
}

/// Speech synthesis (`/v1/audio/speech`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpeechConfig {
    /// The vendor voice used when a client names an OpenAI stock voice (alloy, echo, …).
    #[serde(default = "default_voice")]
    pub default_voice: String,
    /// Sample rate asked of the upstream for mp3, wav and flac.
    #[serde(default = "default_sample_rate")]
    pub sample_rate: u32,
    /// Sample rate of `pcm` answers (raw 16-bit little-endian mono); OpenAI's is 24000.
    #[serde(default = "default_pcm_sample_rate")]
    pub pcm_sample_rate: u32,
}

impl Default for SpeechConfig {
    fn default() -> Self {
        SpeechConfig {
            default_voice: default_voice(),
            sample_rate: default_sample_rate(),
            pcm_sample_rate: default_pcm_sample_rate(),
        }
    }
}

/// Asynchronous video tasks (DESIGN §5).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TasksConfig {
    /// Run the pollers and the sweeper in this process. Every replica may; leases keep them
    /// from polling the same task twice.
    #[serde(default = "yes")]
    pub workers: bool,
    /// The first poll of the upstream, this long after submission.
    #[serde(default = "default_first_poll_ms")]
    pub first_poll_ms: u64,
    /// The steady interval between polls of one task; polls start at `first_poll_ms` and grow
    /// to this.
    #[serde(default = "default_poll_interval_ms")]
    pub poll_interval_ms: u64,
    /// The longest wait after failed polls (upstream 429 or 5xx, timeouts).
    #[serde(default = "default_max_backoff_ms")]
    pub max_backoff_ms: u64,
    /// A task not finished this long after submission is failed and refunded.
    #[serde(default = "default_deadline_seconds")]
    pub deadline_seconds: u64,
    /// A task still `submitting` after this long was orphaned by a crash: failed and refunded.
    #[serde(default = "default_submission_timeout_seconds")]
    pub submission_timeout_seconds: u64,
    /// How often the sweeper looks for overdue and orphaned tasks.
    #[serde(default = "default_sweep_interval_seconds")]
    pub sweep_interval_seconds: u64,
    /// Hosts whose media URLs are accepted in task content even though they resolve to private
    /// addresses (an internal CDN). Everything else must be public (docs/api.md §2.7 rule 4).
    /// The older name of `[outbound] trusted_hosts`, which it adds to (`Config::trusted_hosts`).
    #[serde(default)]
    pub trusted_media_hosts: Vec<String>,
    /// A media URL whose host cannot be resolved here is refused (400) rather than sent on
    /// unchecked (the default, `docs/decisions.md`, "Video tasks"); `false` leaves such a URL to
    /// the upstream, for gateways whose resolver cannot see names the upstream can.
    #[serde(default = "yes")]
    pub media_dns_fail_closed: bool,
    /// The time allowed to read a reference video's length (a ranged fetch); past it, the
    /// upstream decides and the hold covers the series' maximum.
    #[serde(default = "default_probe_timeout_ms")]
    pub reference_probe_timeout_ms: u64,
}

impl Default for TasksConfig {
    fn default() -> Self {
        TasksConfig {
            workers: true,
            first_poll_ms: default_first_poll_ms(),
            poll_interval_ms: default_poll_interval_ms(),
            max_backoff_ms: default_max_backoff_ms(),
            deadline_seconds: default_deadline_seconds(),
            submission_timeout_seconds: default_submission_timeout_seconds(),
            sweep_interval_seconds: default_sweep_interval_seconds(),
            trusted_media_hosts: Vec::new(),
            media_dns_fail_closed: true,
            reference_probe_timeout_ms: default_probe_timeout_ms(),
        }
    }
}

/// How finished videos are handed out (DESIGN §5).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MediaConfig {
    /// `signed`: the gateway's own link that streams the upstream file; `direct`: the upstream's
    /// URL as it is.
    #[serde(default)]
    pub mode: MediaMode,
    /// How long a signed link works after the task finished.
    #[serde(default = "default_link_ttl_seconds")]
    pub link_ttl_seconds: u64,
    /// How long a drawn image's link works (`response_format: "url"`), and the image is kept
    /// for it: an hour, as OpenAI's image links.
    #[serde(default = "default_image_ttl_seconds")]
    pub image_ttl_seconds: u64,
    /// The gateway's address as clients reach it (`https://api.example.com`); when absent, links
    /// are built from the request's `Host` header.
    #[serde(default)]
    pub public_base_url: Option<String>,
}

impl Default for MediaConfig {
    fn default() -> Self {
        MediaConfig {
            mode: MediaMode::Signed,
            link_ttl_seconds: default_link_ttl_seconds(),
            image_ttl_seconds: default_image_ttl_seconds(),
            public_base_url: None,
        }
    }
}

/// See [`MediaConfig::mode`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MediaMode {
    /// Links signed by the gateway (`/v1/media/…`).
    #[default]
    Signed,
    /// The upstream's URL.
    Direct,
}

/// The in-process simulator.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimulatorConfig {
    /// Start it; channels whose `base_url` is `"sim"` point at it.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Where it listens (port 0: any free loopback port).
    #[serde(default = "default_sim_listen")]
    pub listen: String,
    /// Latency it adds to every answer.
    #[serde(default)]
    pub latency_ms: u64,
}

impl Default for SimulatorConfig {
    fn default() -> Self {
        SimulatorConfig {
            enabled: true,
            listen: default_sim_listen(),
            latency_ms: 0,
        }
    }
}

/// One configured upstream.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelConfig {
    /// Unique name, referred to by models.
    pub name: String,
    /// What it speaks (DESIGN §6), by its name (`tollgate_upstream::formats`); its adapter is
    /// the upstream registry's, asked at the call.
    pub format: Format,
    /// Base URL such as `https://api.openai.com`, or `"sim"` for the in-process simulator.
    pub base_url: String,
    /// Name of the environment variable that holds the channel's key — or several names: the
    /// keys are used in turn, and one the upstream refuses (401, 403, 429) cools down while the
    /// others carry on (docs/decisions.md, "Channel pools").
    #[serde(default)]
    pub api_key_env: Option<KeyEnv>,
    /// Its share of the calls among the channels of one priority level (default 1).
    #[serde(default = "default_weight")]
    pub weight: u32,
    /// Most calls in flight on this channel at once.
    #[serde(default = "default_concurrency")]
    pub max_concurrency: usize,
    /// Connect timeout.
    #[serde(default = "default_connect_ms")]
    pub connect_timeout_ms: u64,
    /// Time to the response head.
    #[serde(default = "default_first_byte_ms")]
    pub first_byte_timeout_ms: u64,
    /// Longest silence inside a response body.
    #[serde(default = "default_idle_ms")]
    pub idle_timeout_ms: u64,
}

/// `api_key_env`: one variable's name, or several.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum KeyEnv {
    /// One key.
    One(String),
    /// A pool of keys, used in turn.
    Pool(Vec<String>),
}

impl KeyEnv {
    /// The variables' names, in order.
    pub fn names(&self) -> Vec<&str> {
        match self {
            KeyEnv::One(name) => vec![name.as_str()],
            KeyEnv::Pool(names) => names.iter().map(String::as_str).collect(),
        }
    }
}

fn default_weight() -> u32 {
    1
}

/// One entry of a model's `channels`: a channel, or a list of channels that share a priority
/// level and split its calls by their weights.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum ChannelLevel {
    /// A level of one channel.
    One(String),
    /// A level of several.
    Pool(Vec<String>),
}

impl ChannelLevel {
    /// The channels' names.
    pub fn names(&self) -> Vec<&str> {
        match self {
            ChannelLevel::One(name) => vec![name.as_str()],
            ChannelLevel::Pool(names) => names.iter().map(String::as_str).collect(),
        }
    }
}

/// What kind of endpoint a model serves.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModelKind {
    /// `/v1/embeddings`
    Embeddings,
    /// `/v1/audio/speech`, `/v1/t2a_v2`
    Speech,
    /// `/v1/audio/transcriptions`, `/v1/speech_to_text`
    Transcription,
    /// `/api/v3/contents/generations/tasks`
    ClipVideo,
    /// `/v1/video/generations`
    GenericVideo,
    /// `/v1beta/models/…`
    NativeText,
    /// `/v1/realtime`: OpenAI Realtime voice sessions.
    Realtime,
    /// Gemini Live's `BidiGenerateContent` socket: live voice sessions of the native family.
    Live,
    /// `/v1/images/generations`, `/v1/images/edits`: images drawn, priced by token class.
    Images,
    /// `/v1beta/models/{model}:predict`: the native family's image models priced by the
    /// picture (Imagen), served by its text-generation channels.
    NativeImages,
}

impl ModelKind {
    /// Whether a channel of `format` can serve models of this kind: the format's modality is the
    /// kind's — so a speech model may mix `t2a` and `openai-speech` channels, a recognition model
    /// `stt` and `openai-transcription` ones.
    pub fn served_by(self, format: Format) -> bool {
        // A live session is relayed, not translated: its channels speak the endpoint's
        // protocol.
        match self {
            ModelKind::Realtime => return format == Format::OpenAiRealtime,
            ModelKind::Live => return format == Format::GeminiLive,
            _ => {}
        }
        format.modality()
            == match self {
                ModelKind::Embeddings => Modality::Embeddings,
                ModelKind::Speech => Modality::Speech,
                ModelKind::Transcription => Modality::Recognition,
                ModelKind::ClipVideo => Modality::ClipTasks,
                ModelKind::GenericVideo => Modality::GenericVideoTasks,
                ModelKind::NativeText | ModelKind::NativeImages => Modality::TextGeneration,
                ModelKind::Realtime | ModelKind::Live => Modality::LiveSessions,
                ModelKind::Images => Modality::Images,
            }
    }
    /// The meters its endpoints count a charge on (docs/api.md §8), the usual first: a price on
    /// another meter could only charge every request its bound, so the configuration refuses
    /// one. A native model may be priced by token class (an image model: its images out cost
    /// many times its text, docs/decisions.md "Images").
    pub const fn meters(self) -> &'static [Meter] {
        match self {
            ModelKind::Embeddings => &[Meter::Tokens],
            ModelKind::Speech => &[Meter::Characters],
            ModelKind::Transcription => &[Meter::AudioSeconds],
            ModelKind::ClipVideo => &[Meter::VideoTokens],
            ModelKind::GenericVideo => &[Meter::VideoSeconds],
            ModelKind::NativeText => &[Meter::TextTokens, Meter::TokenClasses],
            ModelKind::Realtime | ModelKind::Live => &[Meter::TokenClasses],
            // By token class (gpt-image) or by the picture (dall-e): which one, the model's
            // family says (`catalog::check_images_priced`).
            ModelKind::Images => &[Meter::TokenClasses, Meter::Images],
            ModelKind::NativeImages => &[Meter::Images],
        }
    }
}

/// One public model.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// Which endpoints serve it.
    pub kind: ModelKind,
    /// Channels in priority order; an entry that is a list is one level whose channels split
    /// the calls by weight (`channels = ["a", ["b", "c"], "d"]`).
    pub channels: Vec<ChannelLevel>,
    /// The model id sent upstream; the public name when absent.
    #[serde(default)]
    pub upstream_model: Option<String>,
    /// What it costs.
    pub price: Tariff,
    /// Text generation: the most input tokens the model takes (a deployment with a smaller
    /// window, a model outside the family table); the family's when absent. A prompt part the
    /// gateway cannot measure (a `fileData` URI) is held up to it.
    #[serde(default)]
    pub max_input_tokens: Option<u64>,
    /// A realtime model: its audio and image token rates and its session's hold (the defaults
    /// are OpenAI's realtime models').
    #[serde(default)]
    pub session: Option<SessionSettings>,
    /// An image model: its family's rules and the operator's limits (docs/decisions.md,
    /// "Images").
    #[serde(default)]
    pub images: Option<ImageSettings>,
}

/// An image model's settings (`[models.NAME.images]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageSettings {
    /// The kind of model: its sizes, qualities and token tables (`gpt-image-2`, `gpt-image-1`).
    pub family: tollgate_images::Family,
    /// The most images one request may ask for; the family's most (10) when absent.
    #[serde(default)]
    pub max_n: Option<u32>,
}

impl Default for ImageSettings {
    fn default() -> ImageSettings {
        ImageSettings {
            family: tollgate_images::Family::GptImage2,
            max_n: None,
        }
    }
}

impl ImageSettings {
    /// The most images one request may ask for.
    pub fn max_n(&self) -> u32 {
        self.max_n
            .unwrap_or(self.family.max_n())
            .clamp(1, self.family.max_n())
    }
}

/// Live voice sessions' limits (`[realtime]`; docs/decisions.md, "Live voice sessions").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RealtimeConfig {
    /// Sessions one key may have open at once; more are refused with 429 before the upgrade.
    pub max_sessions_per_key: usize,
    /// The longest a session may last, in seconds (OpenAI's own limit: 60 minutes); then it
    /// ends with an `error` saying so, its response in progress charged.
    pub max_session_seconds: u64,
    /// The longest a session may go without a frame either way, in seconds.
    pub idle_timeout_seconds: u64,
    /// The largest frame either side may send, in bytes (OpenAI's 15 MiB of audio is 20 MiB of
    /// base64); a client's larger frame closes its socket (1009).
    pub max_frame_bytes: usize,
    /// How long a client secret lives when its request does not say, in seconds (10 to 7,200).
    pub client_secret_seconds: u64,
    /// Sessions one client secret may open (OpenAI's open any number until the secret expires;
    /// one by default here, so that a leaked secret opens nothing once its page has connected).
    pub sessions_per_client_secret: u32,
    /// A session whose replica has not written its heartbeat for this long (killed, paused,
    /// cut off) is settled by any replica's sweeper from what it journaled, in seconds. Its
    /// replica beats six times as often.
    pub stale_session_seconds: u64,
    /// How long a Gemini Live socket may wait for its first message, the `setup` that names
    /// its model, in seconds; then it is closed (1008).
    pub setup_timeout_seconds: u64,
}

impl Default for RealtimeConfig {
    fn default() -> RealtimeConfig {
        RealtimeConfig {
            max_sessions_per_key: 8,
            max_session_seconds: 3_600,
            idle_timeout_seconds: 600,
            max_frame_bytes: 21 << 20,
            client_secret_seconds: 600,
            sessions_per_client_secret: 1,
            stale_session_seconds: 30,
            setup_timeout_seconds: 30,
        }
    }
}

impl RealtimeConfig {
    /// How long a session's heartbeat may be silent before it is swept.
    pub fn stale_after(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.stale_session_seconds)
    }

    /// How often a session beats: six times within [`RealtimeConfig::stale_after`].
    pub fn heartbeat(&self) -> std::time::Duration {
        self.stale_after() / 6
    }

    /// Refuses a limit of zero (none would mean "no session at all", not "no limit").
    pub fn check(&self) -> Result<(), String> {
        let zero = [
            ("max_sessions_per_key", self.max_sessions_per_key == 0),
            ("max_session_seconds", self.max_session_seconds == 0),
            ("idle_timeout_seconds", self.idle_timeout_seconds == 0),
            ("max_frame_bytes", self.max_frame_bytes < 1024),
            (
                "sessions_per_client_secret",
                self.sessions_per_client_secret == 0,
            ),
            ("stale_session_seconds", self.stale_session_seconds < 3),
            ("setup_timeout_seconds", self.setup_timeout_seconds == 0),
        ];
        if let Some((name, _)) = zero.iter().find(|(_, bad)| *bad) {
            return Err(format!(
                "realtime.{name} must be at least 1 (max_frame_bytes: 1024, stale_session_seconds: 3)"
            ));
        }
        if !(10..=7_200).contains(&self.client_secret_seconds) {
            return Err("realtime.client_secret_seconds must be between 10 and 7200".into());
        }
        Ok(())
    }
}

/// The TLS listener (`[tls]`, docs/operations.md "TLS"): its address, and the PEM files of its
/// certificate chain and private key — read again on every reload (`SIGHUP`), so a renewed
/// certificate is served without a restart. Changing `listen` needs one.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// Address to listen on with TLS (`0.0.0.0:8443`).
    pub listen: String,
    /// The certificate chain, PEM, the leaf first.
    pub cert_file: std::path::PathBuf,
    /// The private key, PEM (PKCS#8, PKCS#1 or SEC1).
    pub key_file: std::path::PathBuf,
}

/// Redemption codes (`[codes]`; docs/decisions.md, "Redemption codes"): the attempts a client
/// may make in a window, counted in the database so that every replica counts the same ones.
/// A code has 130 random bits, so the limit is not what keeps it safe; it keeps a guessing
/// client from writing to the database without end, and shows up in the logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CodesConfig {
    /// Wrong codes one account may try in a window.
    pub guesses_per_account: u32,
    /// Wrong codes one address (an IPv6 client's /64) may try in a window.
    pub guesses_per_address: u32,
    /// The window, in seconds.
    pub guess_window_seconds: u64,
}

impl Default for CodesConfig {
    fn default() -> CodesConfig {
        CodesConfig {
            guesses_per_account: 10,
            guesses_per_address: 30,
            guess_window_seconds: 3_600,
        }
    }
}

impl CodesConfig {
    /// Refuses a limit of zero (no code could be redeemed at all).
    pub fn check(&self) -> Result<(), String> {
        if self.guesses_per_account == 0
            || self.guesses_per_address == 0
            || self.guess_window_seconds == 0
        {
            return Err("[codes]: guesses_per_account, guesses_per_address and \
                 guess_window_seconds must be at least 1"
                .into());
        }
        if self.guess_window_seconds > 86_400 {
            // The sweeper deletes the counts of windows a day old.
            return Err("[codes]: guess_window_seconds is at most 86400 (a day)".into());
        }
        Ok(())
    }
}

/// Top-ups through a payment provider (`[payments]`; docs/operations.md, "Payments"): none
/// unless a provider's table is there.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaymentsConfig {
    /// Stripe (`[payments.stripe]`).
    pub stripe: Option<StripeConfig>,
}

/// `[payments.stripe]`: the provider's API, its secrets' variables, and what a top-up may be.
/// Checked, and its secrets read, by `tollgate_settings::payments::StripeSettings`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StripeConfig {
    /// Stripe's API (`https://api.stripe.com`); the simulator's address in tests. Passes the
    /// one address rule (`[outbound] trusted_hosts` for one on the operator's network).
    pub base_url: String,
    /// The variable that holds the secret key (`sk_live_…`, or a restricted `rk_…` key with
    /// Checkout Sessions and PaymentIntents write, which is all the gateway uses).
    pub secret_key_env: String,
    /// The variable that holds the webhook endpoint's signing secret (`whsec_…`), or several:
    /// the old and the new one while rolling it.
    pub webhook_secret_env: KeyEnv,
    /// The currency customers pay in (`usd`).
    pub currency: String,
    /// Balance units one unit of the currency buys (`"1"`: a dollar buys 1).
    pub units_per_currency_unit: rust_decimal::Decimal,
    /// The least a top-up may be, in the currency (`"5"`).
    pub min_amount: rust_decimal::Decimal,
    /// The most one top-up may be (`"500"`).
    pub max_amount: rust_decimal::Decimal,
    /// The most an account's automatic top-ups may charge in a day (UTC); 0 turns automatic
    /// top-ups off.
    pub max_automatic_per_day: rust_decimal::Decimal,
    /// The line customers see on Stripe's page and their receipt.
    pub product_name: String,
    /// How far a delivery's signed time may be from the gateway's clock, in seconds.
    pub signature_tolerance_seconds: u64,
    /// How long a call to the provider may take, in seconds.
    pub timeout_seconds: u64,
    /// How often each replica looks for accounts below their automatic top-up's threshold,
    /// in seconds.
    pub automatic_check_seconds: u64,
}

impl Default for StripeConfig {
    fn default() -> StripeConfig {
        StripeConfig {
            base_url: "https://api.stripe.com".into(),
            secret_key_env: "STRIPE_SECRET_KEY".into(),
            webhook_secret_env: KeyEnv::One("STRIPE_WEBHOOK_SECRET".into()),
            currency: "usd".into(),
            units_per_currency_unit: rust_decimal::Decimal::ONE,
            min_amount: rust_decimal::Decimal::from(5),
            max_amount: rust_decimal::Decimal::from(500),
            max_automatic_per_day: rust_decimal::Decimal::from(500),
            product_name: "Balance top-up".into(),
            signature_tolerance_seconds: 300,
            timeout_seconds: 20,
            automatic_check_seconds: 30,
        }
    }
}

/// The customer portal (`[portal]`; docs/decisions.md, "The customer portal"): how long its
/// sessions and invitations live, and how many sign-ins a person and an address may try.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PortalConfig {
    /// Serve `/portal` at all.
    pub enabled: bool,
    /// Where customers reach the gateway (`https://gateway.example.com`), for the links the
    /// CLI prints; the admin API and the console use the address they were asked at.
    pub public_url: Option<String>,
    /// A session ends this many hours after its sign-in, whatever happens.
    pub session_hours: u64,
    /// … or after this many minutes without a request.
    pub idle_minutes: u64,
    /// An invitation link works for this many hours, once.
    pub invite_hours: u64,
    /// Failed sign-ins one person may have in a window.
    pub sign_ins_per_person: u32,
    /// Failed sign-ins one address (an IPv6 /64) may have in a window.
    pub sign_ins_per_address: u32,
    /// The window, in seconds (at most a day).
    pub sign_in_window_seconds: u64,
    /// Hosts a customer's balance alert may post to though they are not public (each also in
    /// `[outbound] trusted_hosts`, which alone never opens a host to customers); none by
    /// default (docs/decisions.md, "Balance alerts a customer sets").
    pub alert_hosts: Vec<String>,
}

impl Default for PortalConfig {
    fn default() -> PortalConfig {
        PortalConfig {
            enabled: true,
            public_url: None,
            session_hours: 12,
            idle_minutes: 30,
            invite_hours: 72,
            sign_ins_per_person: 5,
            sign_ins_per_address: 30,
            sign_in_window_seconds: 900,
            alert_hosts: Vec::new(),
        }
    }
}

impl PortalConfig {
    /// Refuses limits that would lock everyone out or keep nothing.
    pub fn check(&self) -> Result<(), String> {
        let zero = [
            ("session_hours", self.session_hours == 0),
            ("idle_minutes", self.idle_minutes == 0),
            ("invite_hours", self.invite_hours == 0),
            ("sign_ins_per_person", self.sign_ins_per_person == 0),
            ("sign_ins_per_address", self.sign_ins_per_address == 0),
            ("sign_in_window_seconds", self.sign_in_window_seconds == 0),
        ];
        if let Some((name, _)) = zero.iter().find(|(_, bad)| *bad) {
            return Err(format!("[portal] {name} must be at least 1"));
        }
        if self.sign_in_window_seconds > 86_400 {
            return Err("[portal] sign_in_window_seconds is at most 86400 (a day)".into());
        }
        if let Some(url) = &self.public_url
            && !(url.starts_with("https://") || url.starts_with("http://"))
        {
            return Err(format!(
                "[portal] public_url {url:?} must start with https:// or http://"
            ));
        }
        Ok(())
    }
}

/// A realtime model's session (`[models.NAME.session]`; docs/decisions.md, "Live voice
/// sessions").
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SessionSettings {
    /// Audio tokens a second of audio heard, as the vendor documents it.
    pub audio_in_tokens_per_second: u64,
    /// Audio tokens a second of audio spoken.
    pub audio_out_tokens_per_second: u64,
    /// The most tokens one image may count.
    pub tokens_per_image: u64,
    /// A step of the session's hold: this many seconds of audio heard and spoken, at the
    /// model's price. Opening needs one step; the hold grows a step at a time.
    pub step_seconds: u64,
    /// The vendor's voice for a session whose client names an OpenAI stock voice (alloy,
    /// marin, …; the speech endpoints' rule, `[speech] default_voice`), for a channel whose
    /// vendor does not know those names. Unset: voices pass as named (OpenAI's own).
    pub stock_voice: Option<String>,
}

impl Default for SessionSettings {
    fn default() -> SessionSettings {
        SessionSettings {
            audio_in_tokens_per_second: 10,
            audio_out_tokens_per_second: 20,
            tokens_per_image: 1_536,
            step_seconds: 60,
            stock_voice: None,
        }
    }
}

/// A configuration that could not be read or does not hang together.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The TOML is malformed or has unknown keys.
    #[error("{0}")]
    Parse(String),
    /// The pieces do not fit together (a model names a missing channel, say).
    #[error("{0}")]
    Invalid(String),
}

/// A TOML error as the gateway says it — where, and what rule — without echoing the file: the
/// text of a refused reload is kept for the admin API (read-only tokens included) and the log,
/// and the offending line may hold a secret (issue 42: a webhook URL with its token). Quoted
/// values in the parser's message are left out too.
fn toml_error(text: &str, e: &toml::de::Error) -> String {
    let place = e.span().map(|span| {
        let before = &text.as_bytes()[..span.start.min(text.len())];
        let line = before.iter().filter(|b| **b == b'\n').count() + 1;
        let column = before.iter().rev().take_while(|b| **b != b'\n').count() + 1;
        format!("line {line}, column {column}: ")
    });
    // A quoted value stays when it is a short word (a format's name, a key); anything else —
    // a URL, a token — is left out.
    let mut message = String::with_capacity(e.message().len());
    for (i, part) in e.message().split('"').enumerate() {
        if i > 0 {
            message.push('"');
        }
        let word = part.len() <= 32
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        match i % 2 {
            1 if !word => message.push('…'),
            _ => message.push_str(part),
        }
    }
    format!(
        "TOML parse error at {}{}",
        place.unwrap_or_default(),
        message.trim()
    )
}

impl Config {
    /// Parses a TOML document.
    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        let config: Config =
            toml::from_str(text).map_err(|e| ConfigError::Parse(toml_error(text, &e)))?;
        config.server.check().map_err(ConfigError::Parse)?;
        config.realtime.check().map_err(ConfigError::Parse)?;
        config.codes.check().map_err(ConfigError::Parse)?;
        config.portal.check().map_err(ConfigError::Parse)?;
        if config.alerting.evaluate_seconds == 0 || config.alerting.timeout_seconds == 0 {
            return Err(ConfigError::Parse(
                "[alerting]: evaluate_seconds and timeout_seconds must be at least 1".into(),
            ));
        }
        Ok(config)
    }

    /// The embedded default.
    pub fn embedded_default() -> Result<Config, ConfigError> {
        Config::parse(DEFAULT_CONFIG)
    }

    /// The settings that `next` changes and only a restart can (`docs/operations.md`,
    /// "Reloading the configuration"): what the process bound or opened at start — the listen
    /// address, the database, the simulator, the upstream client's roots — and the sections
    /// read once by the parts that run for the process's life.
    pub fn restart_changes(&self, next: &Config) -> Vec<&'static str> {
        [
            ("listen", self.listen != next.listen),
            ("database_url", self.database_url != next.database_url),
            (
                "shutdown_grace_seconds",
                self.shutdown_grace_seconds != next.shutdown_grace_seconds,
            ),
            ("[server]", self.server != next.server),
            ("[log]", self.log != next.log),
            ("[simulator]", self.simulator != next.simulator),
            (
                "extra_root_certificates",
                self.extra_root_certificates != next.extra_root_certificates,
            ),
            ("[tasks]", self.tasks != next.tasks),
            ("[media]", self.media != next.media),
            ("[usage]", self.usage != next.usage),
            ("[ledger]", self.ledger != next.ledger),
            ("[tracing]", self.tracing != next.tracing),
            ("[alerting]", self.alerting != next.alerting),
            ("[realtime]", self.realtime != next.realtime),
            ("[codes]", self.codes != next.codes),
            ("[portal]", self.portal != next.portal),
            ("[payments]", self.payments != next.payments),
            (
                "[tls] listen",
                self.tls.as_ref().map(|t| &t.listen) != next.tls.as_ref().map(|t| &t.listen),
            ),
        ]
        .into_iter()
        .filter_map(|(name, changed)| changed.then_some(name))
        .collect()
    }

    /// What `next` changes of the settings a reload applies — channels, models, aliases,
    /// `[limits]`, `[speech]`, `[[alerts]]` — a line each, in the file's terms (`channel "a": changed`).
    pub fn live_changes(&self, next: &Config) -> Vec<String> {
        let mut lines = Vec::new();
        let channels = |c: &Config| -> BTreeMap<String, ChannelConfig> {
            c.channels
                .iter()
                .map(|c| (c.name.clone(), c.clone()))
                .collect()
        };
        diff("channel", &channels(self), &channels(next), &mut lines);
        diff("model", &self.models, &next.models, &mut lines);
        diff("alias", &self.aliases, &next.aliases, &mut lines);
        if self.limits != next.limits {
            lines.push("[limits]: changed".into());
        }
        if self.speech != next.speech {
            lines.push("[speech]: changed".into());
        }
        let alerts = |c: &Config| -> BTreeMap<String, tollgate_alerts::RuleConfig> {
            c.alerts
                .iter()
                .map(|a| (a.name.clone(), a.clone()))
                .collect()
        };
        diff("alert", &alerts(self), &alerts(next), &mut lines);
        lines
    }
}

/// Adds a line to `lines` for each name `old` and `new` disagree on.
fn diff<T: PartialEq>(
    what: &str,
    old: &BTreeMap<String, T>,
    new: &BTreeMap<String, T>,
    lines: &mut Vec<String>,
) {
    for (name, value) in old {
        match new.get(name) {
            None => lines.push(format!("{what} {name:?}: removed")),
            Some(v) if v != value => lines.push(format!("{what} {name:?}: changed")),
            Some(_) => {}
        }
    }
    for name in new.keys().filter(|n| !old.contains_key(*n)) {
        lines.push(format!("{what} {name:?}: added"));
    }
}

fn default_listen() -> String {
    "127.0.0.1:8080".into()
}
fn default_database_url() -> String {
    "sqlite://tollgate-data/tollgate.db".into()
}
fn default_grace() -> u64 {
    30
}
fn default_log_format() -> String {
    "text".into()
}
fn default_log_filter() -> String {
    "info".into()
}
fn default_voice() -> String {
    "English_Graceful_Lady".into()
}
fn default_sample_rate() -> u32 {
    32_000
}
fn default_pcm_sample_rate() -> u32 {
    24_000
}
fn default_first_poll_ms() -> u64 {
    1_000
}
fn default_poll_interval_ms() -> u64 {
    5_000
}
fn default_max_backoff_ms() -> u64 {
    60_000
}
fn default_deadline_seconds() -> u64 {
    3 * 60 * 60
}
fn default_submission_timeout_seconds() -> u64 {
    10 * 60
}
fn default_sweep_interval_seconds() -> u64 {
    15
}
fn default_probe_timeout_ms() -> u64 {
    5_000
}
fn default_link_ttl_seconds() -> u64 {
    24 * 60 * 60
}
fn default_image_ttl_seconds() -> u64 {
    60 * 60
}
fn default_sim_listen() -> String {
    "127.0.0.1:0".into()
}
fn yes() -> bool {
    true
}
fn default_concurrency() -> usize {
    256
}
fn default_connect_ms() -> u64 {
    10_000
}
fn default_first_byte_ms() -> u64 {
    60_000
}
fn default_idle_ms() -> u64 {
    60_000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reload_names_what_it_changes_and_what_needs_a_restart() {
        let old = Config::embedded_default().unwrap();
        assert!(old.restart_changes(&old).is_empty());
        assert!(old.live_changes(&old).is_empty());

        // A default written out explicitly is no change.
        let implicit = Config::parse("").unwrap();
        let explicit = Config::parse("shutdown_grace_seconds = 30\n[server]\n").unwrap();
        assert!(implicit.restart_changes(&explicit).is_empty());

        let mut next = old.clone();
        next.listen = "0.0.0.0:9000".into();
        next.server.max_connections += 1;
        next.ledger.checkpoint_every_seconds += 1;
        assert_eq!(
            old.restart_changes(&next),
            ["listen", "[server]", "[ledger]"]
        );

        let mut next = old.clone();
        next.channels.retain(|c| c.name != "sim-stt");
        next.channels[0].max_concurrency += 1;
        let first = next.channels[0].name.clone();
        next.models.remove("asr-1.0");
        next.aliases
            .insert("e".into(), "text-embedding-3-small".into());
        next.limits.insert("embeddings".into(), 1 << 20);
        assert!(old.restart_changes(&next).is_empty());
        assert_eq!(
            old.live_changes(&next),
            [
                format!("channel {first:?}: changed"),
                r#"channel "sim-stt": removed"#.into(),
                r#"model "asr-1.0": removed"#.into(),
                r#"alias "e": added"#.into(),
                "[limits]: changed".into(),
            ]
        );
    }

    #[test]
    fn the_embedded_default_parses_and_prices_every_model() {
        let config = Config::embedded_default().unwrap();
        assert_eq!(config.listen, "127.0.0.1:8080");
        assert!(config.simulator.enabled);
        assert!(config.models.contains_key("text-embedding-3-small"));
        assert_eq!(config.aliases["tts-1"], "speech-2.8-turbo");
        assert_eq!(config.aliases["tts-1-hd"], "speech-2.8-hd");
        assert_eq!(config.speech.pcm_sample_rate, 24_000);
        assert_eq!(config.aliases["whisper-1"], "asr-1.0");
        for (name, model) in &config.models {
            assert!(model.price.validate().is_ok(), "{name}");
        }
    }

    #[test]
    fn trusted_proxies_are_networks() {
        let config =
            Config::parse("[server]\ntrusted_proxies = [\"10.0.0.0/8\", \"::1\"]").unwrap();
        assert_eq!(config.server.trusted_proxies.len(), 2);
        let bad = Config::parse("[server]\ntrusted_proxies = [\"10.0.0.0/40\"]");
        assert!(bad.is_err_and(|e| e.to_string().contains("prefix length")));
    }

    #[test]
    fn a_channel_format_is_a_format_name() {
        let channel = |format: &str| {
            Config::parse(&format!(
                "[[channels]]\nname = \"c\"\nformat = \"{format}\"\nbase_url = \"sim\"\n"
            ))
        };
        let err = channel("smoke-signals").unwrap_err().to_string();
        assert!(
            err.contains("unknown channel format \"smoke-signals\""),
            "{err}"
        );
        assert!(
            err.contains("t2a") && err.contains("generic-video"),
            "{err}"
        );
        let config = channel("openai-transcription").unwrap();
        let format = config.channels[0].format;
        assert_eq!(format, Format::OpenAiTranscription);
        assert!(ModelKind::Transcription.served_by(format));
        assert!(!ModelKind::Speech.served_by(format));
        assert!(!format.is_video_tasks());
        assert!(Format::Ark.is_video_tasks());
    }

    #[test]
    fn unknown_keys_are_refused() {
        assert!(Config::parse("listen = \"x\"\nlisten_typo = 1").is_err());
    }
}

/// The task settings in effect.
#[derive(Debug, Clone)]
pub struct TaskSettings {
    /// Run pollers and the sweeper here.
    pub workers: bool,
    /// The first upstream poll after submission.
    pub first_poll: Duration,
    /// The steady poll interval.
    pub poll_interval: Duration,
    /// The longest backoff after failed polls.
    pub max_backoff: Duration,
    /// A task's time to finish.
    pub deadline: Duration,
    /// Orphaned `submitting` rows are failed after this.
    pub submission_timeout: Duration,
    /// The sweeper's period.
    pub sweep_interval: Duration,
    /// Refuse media URLs whose host does not resolve.
    pub media_dns_fail_closed: bool,
    /// The time allowed to measure a reference video.
    pub reference_probe_timeout: Duration,
}

impl From<&TasksConfig> for TaskSettings {
    fn from(c: &TasksConfig) -> Self {
        TaskSettings {
            workers: c.workers,
            first_poll: Duration::from_millis(c.first_poll_ms),
            poll_interval: Duration::from_millis(c.poll_interval_ms.max(1)),
            max_backoff: Duration::from_millis(c.max_backoff_ms.max(c.poll_interval_ms)),
            deadline: Duration::from_secs(c.deadline_seconds),
            submission_timeout: Duration::from_secs(c.submission_timeout_seconds),
            sweep_interval: Duration::from_secs(c.sweep_interval_seconds.max(1)),
            media_dns_fail_closed: c.media_dns_fail_closed,
            reference_probe_timeout: Duration::from_millis(c.reference_probe_timeout_ms),
        }
    }
}

impl Default for TaskSettings {
    fn default() -> Self {
        TaskSettings::from(&TasksConfig::default())
    }
}
