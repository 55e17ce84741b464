//! Assembling a gateway from its configuration — the one way the binary, the tests and the
//! examples build one, so that what the tests run is what `tollgate serve` runs.

use std::sync::Arc;
use tokio::task::JoinHandle;
use tollgate_request::state::Settings;
use tollgate_request::state::State;
use tollgate_settings::catalog::{Catalog, Channel};
use tollgate_settings::config::{Config, ConfigError, TaskSettings};
use tollgate_settings::ledger_keys;
use tollgate_settings::limits::Limits;
use tollgate_settings::media::MediaLinks;
use tollgate_settings::outbound::Outbound;
use tollgate_settings::payments::StripeSettings;
use tollgate_store::{JournalSeal, Store};
use tollgate_upstream::{ClientConfig, HttpClient, UpstreamError};

/// Why a gateway could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The configuration does not hang together.
    #[error("configuration: {0}")]
    Config(#[from] ConfigError),
    /// The HTTP client could not be made (an unreadable root certificate, say).
    #[error("upstream client: {0}")]
    Http(#[from] UpstreamError),
}

/// What a gateway is built from besides its configuration.
pub struct Parts<'a> {
    /// Its database.
    pub store: Store,
    /// Where channels with `base_url = "sim"` point (the simulator's address), if anywhere.
    pub sim_base_url: Option<&'a str>,
    /// Looks up the environment variables that hold the channels' keys.
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// The key that signs media links.
    pub media: MediaLinks,
}

impl std::fmt::Debug for Parts<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parts")
            .field("sim_base_url", &self.sim_base_url)
            .finish_non_exhaustive()
    }
}

/// The gateway's shared state for `config`: the catalog of channels and models, the upstream
/// HTTP client, the body limits, the speech, server and task settings.
pub fn build(config: &Config, parts: Parts<'_>) -> Result<Arc<State>, BuildError> {
    let settings = settings(config, parts.sim_base_url, parts.env, &|_| None)?;
    let client = ClientConfig {
        extra_roots: config
            .extra_root_certificates
            .iter()
            .map(Into::into)
            .collect(),
        ..ClientConfig::default()
    };
    let http = HttpClient::new(&client)?;
    let live_http = HttpClient::new(&ClientConfig {
        http1_only: true,
        ..client.clone()
    })?;
    let payments = config
        .payments
        .stripe
        .as_ref()
        .map(|stripe| {
            StripeSettings::from_config(
                stripe,
                parts.env,
                &config.trusted_hosts(),
                parts.sim_base_url,
            )
        })
        .transpose()?;
    let outbound = Outbound::new(&config.trusted_hosts(), client);
    // Sessions' journals sealed with the ledger's key, which the database does not hold (an
    // unreadable key file is reported where checkpoints are signed, `Background::start`).
    if let Ok(Some(key)) = ledger_keys::signing_key(&config.ledger) {
        parts
            .store
            .seal_session_journals(JournalSeal::from_signing_key(&key));
    }
    Ok(Arc::new(
        State::new(parts.store, settings, http)
            .with_live_http(live_http)
            .with_realtime(config.realtime)
            .with_codes(config.codes)
            .with_portal(config.portal.clone())
            .with_payments(payments)
            .with_server(config.server.clone())
            .with_tasks(TaskSettings::from(&config.tasks), parts.media)
            .with_outbound(outbound)
            .with_ledger_keys(
                ledger_keys::trusted_keys(&config.ledger).map_err(ConfigError::Invalid)?,
            ),
    ))
}

/// The settings a reload changes (`tollgate_request::state::Settings`) as `config` gives them —
/// the one way they are made, at start and at each reload. `keep` hands back a channel of the
/// settings in force to serve on, with its circuit, key rotation and counters, where the
/// reload leaves it unchanged.
pub fn settings(
    config: &Config,
    sim_base_url: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
    keep: &dyn Fn(&str) -> Option<Arc<Channel>>,
) -> Result<Settings, ConfigError> {
    let catalog = Catalog::from_config_keeping(config, sim_base_url, env, keep)?;
    crate::tasks::check_submission_timeout(&catalog, &TaskSettings::from(&config.tasks))
        .map_err(ConfigError::Invalid)?;
    Ok(Settings {
        catalog,
        limits: Limits::new(&config.limits)?,
        speech: config.speech.clone(),
        alerts: tollgate_alerting::check_rules(&config.alerts, env, &config.trusted_hosts())?,
    })
}

/// Reads the configuration's prices into the database's versions (`Store::sync_config_prices`:
/// a changed price is a new version, said in the log) and loads every version into `state`, so
/// that the first request is priced at a version. Before the gateway serves.
pub async fn load_prices(state: &State) -> Result<(), tollgate_store::StoreError> {
    load_prices_of(state, &state.settings.snapshot().catalog).await
}

/// [`load_prices`] for `catalog`'s prices: at start, and at a reload before its catalog is
/// installed (a changed price is in effect by the time a request is served on it).
pub async fn load_prices_of(
    state: &State,
    catalog: &Catalog,
) -> Result<(), tollgate_store::StoreError> {
    let book: tollgate_billing::PriceBook = catalog
        .models()
        .into_iter()
        .map(|entry| (entry.public.clone(), entry.tariff.clone()))
        .collect();
    let now = tollgate_journal::clock::now_millis();
    for event in state.store.sync_config_prices(&book, now).await? {
        match event {
            tollgate_store::PriceSync::First { model, attributed } if attributed > 0 => {
                tracing::info!(%model, attributed, "price version 1 reconstructed from the configuration for the ledger rows written before price versions");
            }
            tollgate_store::PriceSync::First { model, .. } => {
                tracing::info!(%model, "price version 1 from the configuration");
            }
            tollgate_store::PriceSync::Changed { model, version } => {
                tracing::info!(%model, version, "the configuration's price changed: a new price version, in effect now");
            }
            tollgate_store::PriceSync::OperatorKept { model, current } => {
                tracing::warn!(%model, version = current, "an operator's price version is in effect; the configuration's price (unchanged since it was last read) is not");
            }
        }
    }
    state.prices.replace(state.store.price_schedule().await?);
    Ok(())
}

/// The work a running gateway does beside requests; aborted together by [`Background::stop`].
#[derive(Debug, Default)]
pub struct Background {
    handles: Vec<JoinHandle<()>>,
}

impl Background {
    /// Starts it for `state`: the operators' channel switches and price versions followed, the usage log pruned
    /// (after `[usage] retention_days`) and rolled up, and — with `[tasks] workers` — the
    /// video-task pollers and sweeper (a restarted replica picks up every task in flight), and
    /// the sweeper of live sessions whose replica stopped.
    pub fn start(state: &Arc<State>, config: &Config) -> Background {
        let store = state.store.clone();
        let mut handles = vec![
            tokio::spawn(follow_switches(state.clone())),
            tokio::spawn(follow_prices(state.clone())),
            tokio::spawn(tollgate_journal::usage::prune(
                store.clone(),
                config.usage.retention_days,
            )),
            tokio::spawn(tollgate_journal::usage::roll_up(store)),
            tokio::spawn(crate::live_session::sweep(state.clone())),
        ];
        match ledger_keys::signing_key(&config.ledger) {
            Ok(Some(key)) => handles.push(tokio::spawn(sign_checkpoints(
                state.store.clone(),
                key,
                ledger_keys::published_log(&config.ledger),
                std::time::Duration::from_secs(config.ledger.checkpoint_every_seconds.max(1)),
            ))),
            Ok(None) => {}
            Err(e) => tracing::error!(error = %e, "no ledger checkpoints will be signed"),
        }
        // Without task channels too: the sweeper still settles the tasks of a channel since
        // removed from the configuration.
        if config.tasks.workers {
            handles.extend(crate::tasks::worker::spawn(state));
        }
        if let Some(stripe) = &state.payments {
            handles.push(tokio::spawn(top_up_automatically(
                state.clone(),
                stripe.automatic_every,
            )));
            handles.push(tokio::spawn(count_refused_webhooks(state.clone())));
        }
        handles.extend(tollgate_alerting::spawn(
            state,
            &config.alerting,
            crate::tasks::worker::worker_id(),
        ));
        Background { handles }
    }

    /// Stops it all.
    pub fn stop(self) {
        for handle in self.handles {
            handle.abort();
        }
    }
}

/// Keeps this replica's channel switches in step with the database's, for as long as it runs
/// (the first read at once, so a replica starts with the channels switched off already off).
async fn follow_switches(state: std::sync::Arc<tollgate_request::state::State>) {
    let mut tick = tokio::time::interval(tollgate_settings::channels::SWITCHES_EVERY);
    loop {
        tick.tick().await;
        apply_switches(&state.store, &state.settings.snapshot().catalog).await;
    }
}

/// Switches `catalog`'s channels off and on as the operators' switches in the database say:
/// every [`tollgate_settings::channels::SWITCHES_EVERY`], and at once for a reload's
/// catalog.
pub async fn apply_switches(store: &Store, catalog: &Catalog) {
    match store.disabled_channels().await {
        Ok(off) => {
            for channel in catalog.channels() {
                channel
                    .health
                    .set_disabled(off.iter().any(|name| *name == channel.name));
            }
        }
        Err(e) => tracing::warn!(error = %e, "could not read the channel switches"),
    }
}

/// Charges the accounts below their automatic top-up's threshold, every `every`
/// (`tollgate_payments::automatic`).
async fn top_up_automatically(
    state: std::sync::Arc<tollgate_request::state::State>,
    every: std::time::Duration,
) {
    let mut tick = tokio::time::interval(every);
    loop {
        tick.tick().await;
        let now = tollgate_journal::clock::now_millis();
        if let Err(e) = tollgate_payments::automatic::top_up_due(&state, now).await {
            tracing::warn!(error = %e, "automatic top-ups could not be looked for");
        }
    }
}

/// Writes what is left of a burst of refused webhook deliveries, every second
/// (`tollgate_payments::webhook::flush_refused`), so the alert counts a burst's end too.
async fn count_refused_webhooks(state: std::sync::Arc<tollgate_request::state::State>) {
    let every = std::time::Duration::from_millis(
        u64::try_from(tollgate_request::tally::WRITE_EVERY_MS).unwrap_or(1_000),
    );
    let mut tick = tokio::time::interval(every);
    loop {
        tick.tick().await;
        let now = tollgate_journal::clock::now_millis();
        tollgate_payments::webhook::flush_refused(&state, now).await;
    }
}

/// Keeps this replica's price versions in step with the database's, so that a version an
/// operator adds anywhere prices requests here within
/// `tollgate_settings::prices::PRICES_EVERY` of taking effect.
async fn follow_prices(state: std::sync::Arc<tollgate_request::state::State>) {
    let mut tick = tokio::time::interval(tollgate_settings::prices::PRICES_EVERY);
    loop {
        tick.tick().await;
        match state.store.price_schedule().await {
            Ok(schedule) => state.prices.replace(schedule),
            Err(e) => tracing::warn!(error = %e, "could not read the price versions"),
        }
    }
}

/// Signs every chain head every `every` (docs/architecture.md, "The chained ledger"), unless
/// another replica signed within it.
async fn sign_checkpoints(
    store: tollgate_store::Store,
    key: ed25519_dalek::SigningKey,
    log: Option<tollgate_store::checkpoint::PublishedLog>,
    every: std::time::Duration,
) {
    let mut tick = tokio::time::interval(every);
    let every_ms = i64::try_from(every.as_millis()).unwrap_or(i64::MAX);
    loop {
        tick.tick().await;
        let now = tollgate_journal::clock::now_millis();
        match store.last_checkpoint().await {
            Ok(Some(last)) if now - last.created_at < every_ms * 9 / 10 => continue,
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "could not read the last ledger checkpoint");
                continue;
            }
        }
        match store.make_checkpoint(&key, log.as_ref()).await {
            Ok(c) => {
                tracing::info!(checkpoint = %c.id, accounts = c.heads.len(), "ledger checkpoint signed")
            }
            Err(e) => tracing::error!(error = %e, "could not sign a ledger checkpoint"),
        }
    }
}
