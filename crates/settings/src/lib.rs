//! # tollgate-settings
//!
//! What the operator configured, and what follows from it alone (`docs/architecture.md`,
//! "Crates by concern"): the [`config`] file and its embedded default; the [`catalog`] of models,
//! aliases and [`channels`] with their health; the [`prices`] in effect; body [`limits`]; signed
//! [`media`] links; the ledger's signing keys ([`ledger_keys`]); the one address rule for every
//! URL the gateway did not configure ([`outbound`]); and what a [`reload`] changed.
//!
//! It holds no request and no shared state: the request's state (`tollgate-request`) holds a
//! snapshot of it.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod catalog;
pub mod channels;
pub mod config;
pub mod ledger_keys;
pub mod limits;
pub mod media;
pub mod outbound;
pub mod payments;
pub mod prices;
pub mod reload;

pub use config::Config;
