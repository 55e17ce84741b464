//! # tollgate-payments
//!
//! Top-ups through a payment provider (docs/decisions.md, "Payments"; docs/operations.md,
//! "Payments"): the I/O around the sans-IO `tollgate-stripe`. Beside the request path like
//! `tollgate-portal`: the portal starts top-ups, the gateway's webhook route and its background
//! work call the rest.
//!
//! * [`provider`]: the calls to Stripe's API, through the one address rule;
//! * [`topup`]: a top-up a person starts and pays on the provider's page;
//! * [`webhook`]: a delivery verified, read and applied to the payment it names, once;
//! * [`automatic`]: one pass over the accounts below their automatic top-up's threshold.
//!
//! The adversaries: the **forger** who posts events (the signature, within its tolerance), the
//! **replayer** (the tolerance, and every step applied once), the **provider delivering twice,
//! late or out of order, to two replicas** (each step a compare-and-swap in the store), and the
//! **compromised or misconfigured provider** that says more was paid than was asked (a payment
//! is credited only for the amount and currency the gateway fixed when it made it).

pub mod automatic;
pub mod provider;
pub mod topup;
pub mod webhook;
