//! Assembling a gateway from its configuration — the one way the binary, the tests and the
//! examples build one, so that what the tests run is what `tollgate serve` runs.

use std::sync::Arc;
use tokio::task::JoinHandle;
use tollgate_gateway_core::catalog::Catalog;
use tollgate_gateway_core::config::{Config, ConfigError, TaskSettings};
use tollgate_gateway_core::limits::Limits;
use tollgate_gateway_core::media::MediaLinks;
use tollgate_gateway_core::state::State;
use tollgate_store::Store;
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
    let catalog = Catalog::from_config(config, parts.sim_base_url, parts.env)?;
    let http = HttpClient::new(&ClientConfig {
        extra_roots: config
            .extra_root_certificates
            .iter()
            .map(Into::into)
            .collect(),
        ..ClientConfig::default()
    })?;
    let limits = Limits::new(&config.limits)?;
    let tasks = TaskSettings::from(&config.tasks);
    crate::tasks::check_submission_timeout(&catalog, &tasks).map_err(ConfigError::Invalid)?;
    Ok(Arc::new(
        State::new(parts.store, catalog, http, limits)
            .with_speech(config.speech.clone())
            .with_server(config.server.clone())
            .with_tasks(tasks, parts.media),
    ))
}

/// The work a running gateway does beside requests; aborted together by [`Background::stop`].
#[derive(Debug, Default)]
pub struct Background {
    handles: Vec<JoinHandle<()>>,
}

impl Background {
    /// Starts it for `state`: the operators' channel switches followed, the usage log pruned
    /// (after `[usage] retention_days`) and rolled up, and — with `[tasks] workers` — the
    /// video-task pollers and sweeper (a restarted replica picks up every task in flight).
    pub fn start(state: &Arc<State>, config: &Config) -> Background {
        let store = state.store.clone();
        let mut handles = vec![
            tokio::spawn(follow_switches(state.clone())),
            tokio::spawn(tollgate_gateway_core::usage::prune(
                store.clone(),
                config.usage.retention_days,
            )),
            tokio::spawn(tollgate_gateway_core::usage::roll_up(store)),
        ];
        // Without task channels too: the sweeper still settles the tasks of a channel since
        // removed from the configuration.
        if config.tasks.workers {
            handles.extend(crate::tasks::worker::spawn(state));
        }
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
async fn follow_switches(state: std::sync::Arc<tollgate_gateway_core::state::State>) {
    let mut tick = tokio::time::interval(tollgate_gateway_core::channels::SWITCHES_EVERY);
    loop {
        tick.tick().await;
        match state.store.disabled_channels().await {
            Ok(off) => {
                for channel in state.catalog.channels() {
                    channel
                        .health
                        .set_disabled(off.iter().any(|name| *name == channel.name));
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not read the channel switches"),
        }
    }
}
