//! What every request shares.

use crate::auth::KeyCache;
use crate::catalog::Catalog;
use crate::config::{ServerConfig, SpeechConfig, TaskSettings};
use crate::ledger::Ledger;
use crate::limits::Limits;
use crate::media::MediaLinks;
use crate::metrics::Metrics;
use std::sync::atomic::{AtomicBool, Ordering};
use tollgate_store::Store;
use tollgate_upstream::HttpClient;

/// The gateway's shared state.
#[derive(Debug)]
pub struct State {
    /// Keys, balances, ledger.
    pub store: Store,
    /// The ledger engine: holds and charges in memory, journaled in batches.
    pub ledger: Ledger,
    /// Rate limits and spend caps of accounts and keys, served from database slices.
    pub quotas: crate::quotas::Quotas,
    /// Recent key lookups.
    pub keys: KeyCache,
    /// Models and channels.
    pub catalog: Catalog,
    /// The price versions requests are priced at.
    pub prices: crate::prices::Prices,
    /// The public keys (hex) whose ledger checkpoints are believed, served at
    /// `/.well-known/tollgate-ledger-keys`: the signing key's first.
    pub ledger_keys: Vec<String>,
    /// The shared upstream client.
    pub http: HttpClient,
    /// The client for URLs clients gave (reference videos): it connects only to public
    /// addresses and the trusted media hosts. `None` if it could not be built: then nothing is
    /// fetched (the hold covers the maximum).
    pub media_http: Option<HttpClient>,
    /// Counters and histograms for `/metrics`.
    pub metrics: std::sync::Arc<Metrics>,
    /// Body limits by endpoint.
    pub limits: Limits,
    /// Speech synthesis settings.
    pub speech: SpeechConfig,
    /// Video-task settings.
    pub tasks: TaskSettings,
    /// Links to finished videos.
    pub media: MediaLinks,
    /// Client connections: timeouts and limits.
    pub server: ServerConfig,
    /// Multipart uploads in flight, per key.
    pub uploads: crate::quotas::UploadSlots,
    draining: AtomicBool,
}

impl AsRef<Metrics> for State {
    fn as_ref(&self) -> &Metrics {
        &self.metrics
    }
}

impl State {
    /// What a request body under `endpoint`'s limit must keep to: that limit (`[limits]`; 1 MiB
    /// for none) and its pace (`[server]`).
    pub fn body_bounds(&self, endpoint: Option<crate::limits::Endpoint>) -> crate::body::Bounds {
        crate::body::Bounds {
            limit: endpoint.map_or(1 << 20, |e| self.limits.of(e)),
            pace: crate::body::Pace::of(&self.server),
        }
    }

    /// Assembles the state and starts the ledger engine on `store` (inside a Tokio runtime).
    pub fn new(store: Store, catalog: Catalog, http: HttpClient, limits: Limits) -> State {
        State {
            ledger: Ledger::start(store.clone(), tollgate_ledger::Policy::default()),
            quotas: crate::quotas::Quotas::new(store.clone()),
            keys: KeyCache::default(),
            store,
            catalog,
            prices: crate::prices::Prices::default(),
            ledger_keys: Vec::new(),
            http,
            media_http: media_client(&[]),
            metrics: std::sync::Arc::new(Metrics::default()),
            limits,
            speech: SpeechConfig::default(),
            tasks: TaskSettings::default(),
            media: MediaLinks::new(&crate::config::MediaConfig::default(), &random_key()),
            server: ServerConfig::default(),
            uploads: crate::quotas::UploadSlots::default(),
            draining: AtomicBool::new(false),
        }
    }

    /// Replaces the speech settings.
    pub fn with_speech(mut self, speech: SpeechConfig) -> State {
        self.speech = speech;
        self
    }

    /// Replaces the video-task settings and the media links (whose key every replica must
    /// share: see [`tollgate_store::Store::shared_secret`]).
    pub fn with_tasks(mut self, tasks: TaskSettings, media: MediaLinks) -> State {
        self.media_http = media_client(&tasks.trusted_media_hosts);
        self.tasks = tasks;
        self.media = media;
        self
    }

    /// Sets the public keys whose ledger checkpoints are believed.
    pub fn with_ledger_keys(mut self, keys: Vec<String>) -> State {
        self.ledger_keys = keys;
        self
    }

    /// Replaces the connection settings.
    pub fn with_server(mut self, server: ServerConfig) -> State {
        self.server = server;
        self
    }

    /// Marks the gateway as shutting down: `/readyz` fails so load balancers stop sending.
    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// Whether shutdown has begun.
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }
}

/// The guarded client for media URLs (`docs/decisions.md`, "Media URLs and SSRF").
fn media_client(trusted_hosts: &[String]) -> Option<HttpClient> {
    let config = tollgate_upstream::ClientConfig {
        address_guard: Some(tollgate_upstream::AddressGuard {
            allows: tollgate_media_url::is_public_ip,
            trusted_hosts: trusted_hosts.to_vec(),
        }),
        ..tollgate_upstream::ClientConfig::default()
    };
    HttpClient::new(&config)
        .map_err(|e| tracing::error!(error = %e, "the media client could not be built"))
        .ok()
}

/// A key for links that only this process checks (until [`State::with_tasks`] sets the shared
/// one).
fn random_key() -> [u8; 32] {
    let mut key = [0u8; 32];
    rand::RngCore::fill_bytes(&mut rand::rng(), &mut key);
    key
}
