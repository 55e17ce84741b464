//! The seam a configuration reload comes through (`docs/operations.md`, "Reloading the
//! configuration"): the operator's side (`POST /admin/v1/config/reload`) and the binary
//! (`SIGHUP`) call a [`Reload`]; `tollgate-gateway`'s `Reloader` is the one there is. What a
//! reload changes, and how requests keep what they started with, is
//! `tollgate_request::state::LiveSettings`.

use futures_util::future::BoxFuture;

/// Reloads the configuration: what `POST /admin/v1/config/reload` and `SIGHUP` call (the
/// binary makes one and hands it to both).
pub trait Reload: Send + Sync + std::fmt::Debug {
    /// Reads the configuration again and installs what it says, or refuses it and keeps
    /// serving the settings in force.
    fn reload(&self) -> BoxFuture<'_, Result<Reloaded, ReloadError>>;

    /// Where the configuration is read from (a path, or `the embedded default`).
    fn source(&self) -> String;
}

/// A reload that took.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, serde::Serialize)]
pub struct Reloaded {
    /// The generation in force after it (the same as before when nothing changed).
    pub generation: u64,
    /// Where the configuration was read from (a path, or `embedded default`).
    pub source: String,
    /// What changed, a line each (`channel "a": added`); empty when nothing did.
    pub changes: Vec<String>,
}

/// A reload refused; the settings in force keep serving.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ReloadError {
    /// The file cannot be read, is not valid TOML, or its values break a rule.
    #[error("the configuration cannot be read: {0}")]
    Unreadable(String),
    /// The file reads, but its parts do not fit together (a model names a missing channel).
    #[error("the configuration is invalid: {0}")]
    Invalid(String),
    /// It changes settings only a restart can change.
    #[error(
        "these settings change only with a restart: {}; nothing was reloaded",
        .0.join(", ")
    )]
    NeedsRestart(Vec<&'static str>),
    /// The new prices could not be recorded as versions.
    #[error("the new prices could not be recorded: {0}; nothing was reloaded")]
    Prices(String),
}
