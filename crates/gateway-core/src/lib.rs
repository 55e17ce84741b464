//! # tollgate-gateway-core
//!
//! The floor of the request path (`docs/architecture.md`, "Layers"): what every request of
//! `tollgate-gateway` shares and what can be understood alone. It never imports the request
//! path — Cargo, not a convention, keeps it that way.
//!
//! - the gateway's shared [`state`] and its parts: the [`config`], the live settings (the
//!   [`catalog`] of models and [`channels`], what a [`reload`] changes), the [`prices`] in effect, the [`ledger`]'s journal and its keys ([`ledger_keys`]), [`quotas`] and [`limits`], [`metrics`] and the
//!   [`connections`] registry, [`media`] links;
//! - the rules a request is admitted by, as pure functions: the key cache of [`auth`], the
//!   access [`policy`], a [`routes`] row's facts and its description in the OpenAPI document
//!   ([`route_doc`]);
//! - what a request reads and answers: [`body`] under its limit, [`upload`] spooled to disk
//!   ([`spool`]), [`stream_body`] for a client stream, [`errors`] in each vendor's shape,
//!   [`response`];
//! - the request's [`context`] every step is handed, what [`admission`] holds for it, and the seam to the [`operator`]'s side
//!   (the admin API and console, `tollgate-admin`, which does not stand on the request path);
//! - what a charge is recorded with: [`usage`] (the request's usage record), the [`clock`] (how a
//!   quantity is measured is `tollgate-metering`'s).
//!
//! Nothing re-exports it: every user names `tollgate_gateway_core::…`.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod admission;
pub mod auth;
pub mod body;
pub mod catalog;
pub mod channels;
pub mod clock;
pub mod config;
pub mod connections;
pub mod context;
pub mod errors;
pub mod ledger;
pub mod ledger_keys;
pub mod limits;
pub mod media;
pub mod metrics;
pub mod operator;
pub mod outbound;
pub mod policy;
pub mod prices;
pub mod quotas;
pub mod reload;
pub mod response;
pub mod route_doc;
pub mod routes;
pub mod spool;
pub mod state;
pub mod stream_body;
pub mod upload;
pub mod usage;

pub use config::Config;
pub use state::State;
