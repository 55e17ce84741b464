//! # tollgate-journal
//!
//! What a charge is held, settled and recorded with (DESIGN §4; `docs/architecture.md`, "Crates
//! by concern"): the driver of the sans-IO ledger engine (`tollgate-ledger`) — holds, leases and
//! the writer that commits the journal in batches ([`ledger`]) —, each request's [`usage`]
//! record, written once with its charge or at its end, and the [`clock`]s both read.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod clock;
pub mod ledger;
pub mod usage;
