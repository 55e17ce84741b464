//! # tollgate-request
//!
//! One request, and what it is admitted by (`docs/architecture.md`, "Crates by concern"): what
//! every request of `tollgate-gateway` carries and shares, standing on the exchange's vocabulary
//! (`tollgate-exchange`), the operator's settings (`tollgate-settings`) and the books
//! (`tollgate-journal`). It never imports the request flow — Cargo, not a convention, keeps it
//! that way.
//!
//! - the request's [`context`] every step is handed, and what [`admission`] holds for it;
//! - a [`routes`] row's facts: family, credentials, policy, limits, logging, its description;
//! - the rules a request is admitted by: the key cache of [`auth`], the access [`policy`], the
//!   [`quotas`];
//! - the gateway's shared [`state`] (the live settings, the ledger, the quotas, the store) and
//!   its instruments: [`metrics`] and the [`connections`] registry;
//! - the seam to the [`side`]s served beside the request path (the admin API and console,
//!   `tollgate-admin`; the customer portal, `tollgate-portal`).

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod admission;
pub mod auth;
pub mod codes;
pub mod connections;
pub mod context;
pub mod live;
pub mod metrics;
pub mod policy;
pub mod quotas;
pub mod routes;
pub mod side;
pub mod slots;
pub mod state;
pub mod tally;

pub use state::State;
