//! What every request shares.

use crate::auth::KeyCache;
use crate::metrics::Metrics;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use tokio::sync::watch;
use tollgate_journal::ledger::Ledger;
use tollgate_settings::catalog::Catalog;
use tollgate_settings::config::{ServerConfig, SpeechConfig, TaskSettings};
use tollgate_settings::limits::Limits;
use tollgate_settings::media::MediaLinks;
use tollgate_store::Store;
use tollgate_upstream::HttpClient;

// ---- the settings a reload changes ----
//
// The catalog of channels, models and aliases with their prices, the body limits and the speech
// settings change without a restart (`docs/operations.md`, "Reloading the configuration";
// `docs/decisions.md`, "Reloading"). A request takes one snapshot when it starts
// (`crate::context::RequestCtx::settings`) and keeps it to its end — a stream relayed for
// minutes, an upload spooled — so it finishes on the configuration it started with; a reload
// installs the next snapshot for the requests that start after it. The snapshot is read
// without a lock on the request path (`arc-swap`).

/// One generation of the settings.
#[derive(Debug)]
pub struct Settings {
    /// Models, aliases and channels.
    pub catalog: Catalog,
    /// Body limits by endpoint.
    pub limits: Limits,
    /// Speech synthesis settings.
    pub speech: SpeechConfig,
    /// The configuration's alert rules, checked (the admin API's are read from the database).
    pub alerts: Vec<tollgate_alerts::Rule>,
}

/// The settings in force and their generation (1 at start, one more at each reload).
#[derive(Debug)]
pub struct LiveSettings {
    current: arc_swap::ArcSwap<Settings>,
    generation: watch::Sender<u64>,
    /// Reloads refused since start (`tollgate_config_reloads_refused_total`).
    refused: AtomicU64,
    /// When the generation in force was installed (Unix ms).
    installed_at: AtomicI64,
    /// The last refusal: when (Unix ms) and why.
    last_refusal: std::sync::Mutex<Option<(i64, String)>>,
}

impl LiveSettings {
    /// The first generation.
    pub fn new(first: Settings) -> LiveSettings {
        LiveSettings {
            current: arc_swap::ArcSwap::from_pointee(first),
            generation: watch::Sender::new(1),
            refused: AtomicU64::new(0),
            installed_at: AtomicI64::new(tollgate_journal::clock::now_millis()),
            last_refusal: std::sync::Mutex::new(None),
        }
    }

    /// The settings in force now: a request's for its whole life.
    pub fn snapshot(&self) -> Arc<Settings> {
        self.current.load_full()
    }

    /// Puts `next` in force for whatever starts from now on, and says so to
    /// [`LiveSettings::watch`]ers; returns its generation.
    pub fn install(&self, next: Settings) -> u64 {
        self.current.store(Arc::new(next));
        self.installed_at
            .store(tollgate_journal::clock::now_millis(), Ordering::Relaxed);
        let mut generation = 0;
        self.generation.send_modify(|g| {
            *g += 1;
            generation = *g;
        });
        generation
    }

    /// The generation in force.
    pub fn generation(&self) -> u64 {
        *self.generation.borrow()
    }

    /// Counts a reload refused for `why` (the settings in force kept serving).
    pub fn note_refused(&self, why: String) {
        self.refused.fetch_add(1, Ordering::Relaxed);
        *self
            .last_refusal
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) =
            Some((tollgate_journal::clock::now_millis(), why));
    }

    /// When the generation in force was installed (Unix ms).
    pub fn installed_at(&self) -> i64 {
        self.installed_at.load(Ordering::Relaxed)
    }

    /// The last reload refused since start: when (Unix ms) and why.
    pub fn last_refusal(&self) -> Option<(i64, String)> {
        self.last_refusal
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Reloads refused since start.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Wakes on each installed generation: what runs for the process's life beside requests
    /// (the task pollers) follows the catalog with it.
    pub fn watch(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }
}

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
    /// Models, channels, body limits and speech settings: what a reload changes
    /// (`crate::settings`). A request reads them from its context's snapshot.
    pub settings: LiveSettings,
    /// The price versions requests are priced at.
    pub prices: tollgate_settings::prices::Prices,
    /// The public keys (hex) whose ledger checkpoints are believed, served at
    /// `/.well-known/tollgate-ledger-keys`: the signing key's first.
    pub ledger_keys: Vec<String>,
    /// The shared upstream client.
    pub http: HttpClient,
    /// The client live sessions open their channel's socket with: HTTP/1.1 only, the
    /// WebSocket upgrade's (the shared one when none was set).
    pub live_http: Option<HttpClient>,
    /// The one address rule for URLs no channel configures — clients' media, vendors'
    /// records, alert webhooks — and its guarded client (`tollgate_settings::outbound`).
    pub outbound: tollgate_settings::outbound::Outbound,
    /// Counters and histograms for `/metrics`.
    pub metrics: std::sync::Arc<Metrics>,
    /// Video-task settings.
    pub tasks: TaskSettings,
    /// Links to finished videos.
    pub media: MediaLinks,
    /// Client connections: timeouts and limits.
    pub server: ServerConfig,
    /// Multipart uploads in flight, per key.
    pub uploads: crate::slots::KeySlots,
    /// Live sessions open on this replica.
    pub live: crate::live::LiveSessions,
    /// Their limits (`[realtime]`).
    pub realtime: tollgate_settings::config::RealtimeConfig,
    /// Redemption codes' guess limits (`[codes]`).
    pub codes: tollgate_settings::config::CodesConfig,
    /// The customer portal's sessions and limits (`[portal]`).
    pub portal: tollgate_settings::config::PortalConfig,
    /// Top-ups through Stripe (`[payments.stripe]`), when configured.
    pub payments: Option<std::sync::Arc<tollgate_settings::payments::StripeSettings>>,
    /// Payment webhook deliveries refused for their signature, not yet counted in the database
    /// (`tollgate_payments::webhook`): written at most once a second, whatever a forger sends.
    pub refused_webhooks: crate::tally::Tally,
    draining: AtomicBool,
}

impl AsRef<Metrics> for State {
    fn as_ref(&self) -> &Metrics {
        &self.metrics
    }
}

impl State {
    /// Assembles the state with its first `settings` and starts the ledger engine on `store`
    /// (inside a Tokio runtime).
    pub fn new(store: Store, settings: Settings, http: HttpClient) -> State {
        State {
            ledger: Ledger::start(store.clone(), tollgate_ledger::Policy::default()),
            quotas: crate::quotas::Quotas::new(store.clone()),
            keys: KeyCache::default(),
            store,
            settings: LiveSettings::new(settings),
            prices: tollgate_settings::prices::Prices::default(),
            ledger_keys: Vec::new(),
            http,
            live_http: None,
            outbound: tollgate_settings::outbound::Outbound::default(),
            metrics: std::sync::Arc::new(Metrics::default()),
            tasks: TaskSettings::default(),
            media: MediaLinks::new(
                &tollgate_settings::config::MediaConfig::default(),
                &random_key(),
            ),
            server: ServerConfig::default(),
            uploads: crate::slots::KeySlots::default(),
            live: crate::live::LiveSessions::default(),
            realtime: tollgate_settings::config::RealtimeConfig::default(),
            codes: tollgate_settings::config::CodesConfig::default(),
            portal: tollgate_settings::config::PortalConfig::default(),
            payments: None,
            refused_webhooks: crate::tally::Tally::default(),
            draining: AtomicBool::new(false),
        }
    }

    /// Sets the client live sessions dial with.
    pub fn with_live_http(mut self, client: HttpClient) -> State {
        self.live_http = Some(client);
        self
    }

    /// Replaces the video-task settings and the media links (whose key every replica must
    /// share: see [`tollgate_store::Store::shared_secret`]).
    pub fn with_tasks(mut self, tasks: TaskSettings, media: MediaLinks) -> State {
        self.tasks = tasks;
        self.media = media;
        self
    }

    /// Replaces the address rule (`[outbound]`, `tollgate_settings::outbound`).
    pub fn with_outbound(mut self, outbound: tollgate_settings::outbound::Outbound) -> State {
        self.outbound = outbound;
        self
    }

    /// Sets the public keys whose ledger checkpoints are believed.
    pub fn with_ledger_keys(mut self, keys: Vec<String>) -> State {
        self.ledger_keys = keys;
        self
    }

    /// Replaces the live sessions' limits.
    pub fn with_realtime(mut self, realtime: tollgate_settings::config::RealtimeConfig) -> State {
        self.realtime = realtime;
        self
    }

    /// Replaces the redemption codes' guess limits.
    pub fn with_codes(mut self, codes: tollgate_settings::config::CodesConfig) -> State {
        self.codes = codes;
        self
    }

    /// Replaces the customer portal's settings.
    pub fn with_portal(mut self, portal: tollgate_settings::config::PortalConfig) -> State {
        self.portal = portal;
        self
    }

    /// Sets the payment provider (`[payments.stripe]`).
    pub fn with_payments(
        mut self,
        payments: Option<tollgate_settings::payments::StripeSettings>,
    ) -> State {
        self.payments = payments.map(std::sync::Arc::new);
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
        self.live.drain();
    }

    /// Whether shutdown has begun.
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }
}

/// A key for links that only this process checks (until [`State::with_tasks`] sets the shared
/// one).
fn random_key() -> [u8; 32] {
    let mut key = [0u8; 32];
    rand::RngCore::fill_bytes(&mut rand::rng(), &mut key);
    key
}
