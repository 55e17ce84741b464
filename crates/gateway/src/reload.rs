//! Reloading the configuration while the gateway serves (`docs/operations.md`, "Reloading the
//! configuration"; `docs/decisions.md`, "Reloading"): `SIGHUP` and
//! `POST /admin/v1/config/reload` both call [`Reloader::reload_now`].
//!
//! A reload reads the file again, refuses it whole — naming why — when it does not read, does
//! not fit together or changes a setting only a restart can change, and otherwise makes the
//! next [`Settings`] the way the gateway's start makes the first ([`crate::build::settings`]),
//! records its prices as versions and installs it. Requests already started keep the settings
//! they started with ([`tollgate_request::state::LiveSettings`]); the connections stay open.

use futures_util::future::BoxFuture;
use std::sync::Arc;
use tollgate_request::state::Settings;
use tollgate_request::state::State;
use tollgate_settings::config::Config;
use tollgate_settings::reload::{Reload, ReloadError, Reloaded};

/// Reads the configuration as the process first read it (the same file, the same command-line
/// overrides).
pub type Load = Box<dyn Fn() -> Result<Config, String> + Send + Sync>;

/// Looks up the environment variables that hold the channels' keys, as at start.
pub type Env = Box<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// What reloads one gateway's configuration; one reload at a time.
pub struct Reloader {
    state: Arc<State>,
    load: Load,
    source: String,
    sim_base_url: Option<String>,
    env: Env,
    /// The configuration the settings in force were made from.
    in_force: tokio::sync::Mutex<Config>,
    /// The TLS listener's certificate, read again on every reload.
    tls: Option<Arc<crate::tls::Certs>>,
}

impl std::fmt::Debug for Reloader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reloader")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl Reloader {
    /// A reloader for the gateway `state` was built from `in_force` with: `load` reads the
    /// configuration again from `source` (a path, or `embedded default`); `sim_base_url` and
    /// `env` are what the gateway was built with (`crate::build::Parts`).
    pub fn new(
        state: Arc<State>,
        in_force: Config,
        source: String,
        load: Load,
        sim_base_url: Option<String>,
        env: Env,
    ) -> Reloader {
        Reloader {
            state,
            load,
            source,
            sim_base_url,
            env,
            in_force: tokio::sync::Mutex::new(in_force),
            tls: None,
        }
    }

    /// Reads the TLS listener's certificate and key again on every reload (a renewed
    /// certificate, served from the next handshake); a pair that does not read refuses the
    /// reload.
    #[must_use]
    pub fn with_tls(mut self, certs: Arc<crate::tls::Certs>) -> Reloader {
        self.tls = Some(certs);
        self
    }

    /// Reads the configuration again and installs it, or refuses it and leaves the settings in
    /// force serving (counted: `tollgate_config_reloads_refused_total`).
    pub async fn reload_now(&self) -> Result<Reloaded, ReloadError> {
        let outcome = self.try_reload().await;
        if let Err(e) = &outcome {
            self.state.settings.note_refused(e.to_string());
        }
        outcome
    }

    async fn try_reload(&self) -> Result<Reloaded, ReloadError> {
        let mut in_force = self.in_force.lock().await;
        let next = (self.load)().map_err(ReloadError::Unreadable)?;
        let restart = in_force.restart_changes(&next);
        if !restart.is_empty() {
            return Err(ReloadError::NeedsRestart(restart));
        }
        if let (Some(certs), Some(tls)) = (&self.tls, &next.tls) {
            certs.reload(tls).map_err(ReloadError::Invalid)?;
            tracing::info!(cert_file = %tls.cert_file.display(), "reload: the TLS certificate is read again");
        }
        let changes = in_force.live_changes(&next);
        let settings = self.state.settings.snapshot();
        if changes.is_empty() {
            return Ok(Reloaded {
                generation: self.state.settings.generation(),
                source: self.source.clone(),
                changes,
            });
        }
        // A channel the file leaves as it was keeps serving as it was: its circuit, key
        // rotation, permits and counters carry over.
        let keep = |name: &str| {
            let written = |c: &Config| c.channels.iter().find(|c| c.name == name).cloned();
            (written(&in_force) == written(&next))
                .then(|| settings.catalog.channel(name).cloned())
                .flatten()
        };
        let next_settings: Settings =
            crate::build::settings(&next, self.sim_base_url.as_deref(), &*self.env, &keep)
                .map_err(|e| ReloadError::Invalid(e.to_string()))?;
        // The operators' switches, at once for the new channels too.
        crate::build::apply_switches(&self.state.store, &next_settings.catalog).await;
        // Prices first: a request served on the new catalog is priced at its version.
        crate::build::load_prices_of(&self.state, &next_settings.catalog)
            .await
            .map_err(|e| ReloadError::Prices(e.to_string()))?;
        let generation = self.state.settings.install(next_settings);
        *in_force = next;
        for change in &changes {
            tracing::info!(generation, source = %self.source, "configuration reloaded: {change}");
        }
        Ok(Reloaded {
            generation,
            source: self.source.clone(),
            changes,
        })
    }

    /// Reloads on every `SIGHUP` for as long as it runs, saying in the log what came of each.
    #[cfg(unix)]
    pub async fn on_sighup(self: Arc<Self>) {
        use tokio::signal::unix::{SignalKind, signal};
        let mut hangups = match signal(SignalKind::hangup()) {
            Ok(s) => s,
            Err(e) => {
                tracing::error!(error = %e, "SIGHUP cannot be listened for: reload through the admin API");
                return;
            }
        };
        while hangups.recv().await.is_some() {
            match self.reload_now().await {
                Ok(r) if r.changes.is_empty() => {
                    tracing::info!(source = %r.source, generation = r.generation, "SIGHUP: the configuration is unchanged");
                }
                Ok(r) => {
                    tracing::info!(source = %r.source, generation = r.generation, changes = r.changes.len(), "SIGHUP: the configuration is reloaded");
                }
                Err(e) => tracing::error!(error = %e, "SIGHUP: the configuration was not reloaded"),
            }
        }
    }
}

impl Reload for Reloader {
    fn reload(&self) -> BoxFuture<'_, Result<Reloaded, ReloadError>> {
        Box::pin(self.reload_now())
    }

    fn source(&self) -> String {
        self.source.clone()
    }
}
