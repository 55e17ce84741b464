//! What admission holds for one request — its state; the decisions are
//! `tollgate_gateway::admission`'s, the one caller of the key lookup, the quota store, the model
//! rule and the permits (`docs/architecture.md`, "Admission, in one home"). An [`Admission`]
//! travels in the request's context beside its usage record, and keeps:
//!
//! - the caller's holders with limits, for what is admitted later in the flow (a stream);
//! - the rate-limit figures for the answer's `x-ratelimit-*` headers;
//! - what the request took of its key's limits (concurrency slots, quota units), released when
//!   the last holder lets go: the service after the answer, a hold until its settlement (so a
//!   stream keeps its slot to its last frame).

use crate::quotas::{Admitted, RateHeaders};
use std::sync::{Arc, Mutex, PoisonError};
use tollgate_store::LimitedBy;

/// One request's admission; cheap to clone, every clone shares it.
#[derive(Debug, Clone, Default)]
pub struct Admission(Arc<Mutex<Held>>);

#[derive(Debug, Default)]
struct Held {
    /// The caller's holders with limits, once authenticated (none: no limits).
    limited_by: Option<LimitedBy>,
    /// The tightest rate-limit figures of each kind seen.
    rate_headers: RateHeaders,
    /// What the request holds of its key's limits.
    taken: Vec<Admitted>,
}

impl Admission {
    fn with<T>(&self, f: impl FnOnce(&mut Held) -> T) -> T {
        f(&mut self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Notes the caller's holders with limits (authentication).
    pub fn note_caller(&self, limited_by: &LimitedBy) {
        if !limited_by.is_empty() {
            self.with(|held| held.limited_by = Some(limited_by.clone()));
        }
    }

    /// The caller's holders with limits, when it has any.
    pub fn limited_by(&self) -> Option<LimitedBy> {
        self.with(|held| held.limited_by.clone())
    }

    /// Notes rate-limit figures for the answer's headers (the tightest of each kind is kept).
    pub fn note_rate_headers(&self, headers: &RateHeaders) {
        if headers != &RateHeaders::default() {
            self.with(|held| held.rate_headers.merge(headers));
        }
    }

    /// The `x-ratelimit-*` headers for the answer (none for a key without limits).
    pub fn rate_headers(&self) -> Vec<(&'static str, String)> {
        self.with(|held| held.rate_headers.render())
    }

    /// Keeps `admitted` until the request ends: until the last holder lets go.
    pub fn keep(&self, admitted: Admitted) {
        self.with(|held| held.taken.push(admitted));
    }
}
