//! # tollgate-alerts
//!
//! Alerts (`docs/decisions.md`, "Alerts"), sans-IO: the rules an operator writes
//! ([`rule::RuleConfig`], checked into a [`rule::Rule`]), what a rule makes of what the gateway
//! observed ([`rule::Rule::judge`], [`rule::Change::between`]), and the webhook's wire format —
//! Standard Webhooks signing ([`signing::Secret`]), the Standard and Slack bodies
//! ([`payload::body`]) and the retry schedule ([`schedule::RetrySchedule`]). The gateway
//! gathers the observations, stores the levels and events, and makes the HTTP calls.

pub mod payload;
pub mod rule;
pub mod schedule;
pub mod signing;

pub use rule::{Change, Format, Observed, Rule, RuleConfig, RuleError, Verdict};
pub use schedule::RetrySchedule;
pub use signing::{Secret, SigningError};
