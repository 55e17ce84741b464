//! # tollgate-gateway
//!
//! The request pipeline as a hyper `Service` ([`Gateway`]). It is the one crate that composes
//! the formats: it routes, authenticates, reads and validates bodies with the protocol crates,
//! resolves models through the catalog, holds and settles money through the ledger engine, calls
//! channels through `tollgate-upstream`, and translates between formats ([`translate`]).
//!
//! A request's way through (DESIGN §2), and where each step lives:
//!
//! 1. route — the route table ([`routes::TABLE`]: each row's facts and its handler; a row's type
//!    and the lookup in [`endpoint`]), handed to the [`service`]
//! 2. credentials and admission — [`admission`] (with `auth` and `policy`), called once by
//!    the [`service`] for every client route; the request's state travels in a
//!    `RequestCtx` handed to every step
//! 3. body under its limit, decoded and validated — `body`, `limits`, the protocol crates
//! 4. model — `catalog`
//! 5. hold — [`admission`] (the tariff, the bound) on the `ledger` engine (memory, leases)
//! 6. upstream call with failover — [`relay`], `tollgate-upstream`
//! 7. translation back — [`translate`]
//! 8. settle or release, exactly once — [`hold`]; the request's usage record with it —
//!    `usage`
//!
//! Handlers live in [`handlers`], one module per endpoint family; steps two of them share live in a
//! module of their own ([`generation`], [`embedding`]). `docs/architecture.md`, "Layers", says
//! who may import whom (checked by `.ci/check-layers`). [`build()`] assembles a gateway
//! from its configuration (the binary, the tests and the examples all use it); a [`Reloader`]
//! changes its settings (`state::LiveSettings`) while it serves.
//!
//! What every request stands on lives in crates by concern, each named by its own path and none
//! re-exported here (a reader sees which crate a thing is in): the exchange with the client —
//! bodies, responses, errors, a route's description — is `tollgate-exchange`; what the operator
//! configured is `tollgate-settings`; holds, settlements and the usage record are
//! `tollgate-journal`; the request's context, its route row, admission's rules and the shared
//! state are `tollgate-request`. What only this crate reads — a multipart [`upload`] spooled to
//! disk ([`spool`]), a client's [`stream_body`] — lives here.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod admission;
pub mod build;
pub mod embedding;
pub mod endpoint;
pub mod generation;
pub mod handlers;
pub mod hold;
pub mod image_bytes;
pub mod imaging;
pub mod live_session;
pub mod pump;
pub mod recognition;
pub mod relay;
pub mod reload;
pub mod routes;
pub mod server;
pub mod service;
pub mod speech_relay;
pub mod spool;
pub mod stream_body;
pub mod tasks;
pub mod tls;
pub mod trace;
pub mod translate;
pub mod upload;
pub mod video_file;

pub use build::{Background, BuildError, Parts, build};
pub use reload::Reloader;
pub use service::Gateway;
