//! [`RequestCtx`]: what one request carries through its flow (DESIGN §2), created by the service
//! and handed explicitly to every step — no step reaches request state any other way
//! (`docs/architecture.md`, "The request context"). Work spawned for the request (a stream's
//! relay, a task's submission) takes what it needs of it by value: a clone of the usage draft,
//! the state.

use crate::admission::Admission;
use crate::routes::RouteSpec;
use crate::state::Settings;
use crate::state::State;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;
use tollgate_journal::usage::Recorder;
use tollgate_store::UsageRecord;

/// One request's context.
#[derive(Debug, Clone)]
pub struct RequestCtx {
    /// Shared state.
    pub state: Arc<State>,
    /// The catalog, limits and speech settings in force when the request started, kept to its
    /// end however long it streams: a reload changes what the next request gets
    /// (`crate::state::LiveSettings`).
    pub settings: Arc<Settings>,
    /// This request's id (also the `x-request-id` response header).
    pub request_id: String,
    /// What the request is for: its row of the route table (`tollgate_gateway::routes`).
    pub route: &'static RouteSpec,
    /// The client's address: the connection's peer, or what a trusted proxy says it relayed
    /// for (`[server] trusted_proxies`); `None` when unknown.
    pub client: Option<IpAddr>,
    /// The connection's peer is one of `[server] trusted_proxies`: only then are forwarded
    /// headers (`X-Forwarded-For`, `-Proto`, `-Host`) believed.
    pub from_trusted_proxy: bool,
    /// The request came over the gateway's own TLS listener (`[tls]`).
    pub over_tls: bool,
    /// The request's usage record in the making, or `None` for a route that is not logged
    /// ([`RouteSpec::metered`]).
    pub usage: Option<Recorder>,
    /// What admission holds for the request: the caller's limits, the rate headers, the slots
    /// it took (`tollgate_gateway::admission` fills it).
    pub admission: Admission,
}

impl RequestCtx {
    /// Where the request says it was addressed to, for links handed back to it.
    pub fn origin(&self, headers: &http::HeaderMap) -> tollgate_settings::media::Origin {
        let origin = tollgate_settings::media::Origin::of(headers, self.from_trusted_proxy);
        if self.over_tls {
            origin.over_tls()
        } else {
            origin
        }
    }

    /// What the request's body must keep to: its route's limit (the row's `body` in
    /// route table, `[limits]`; 1 MiB for none) and the pace of `[server]`.
    pub fn body_bounds(&self) -> tollgate_exchange::body::Bounds {
        tollgate_exchange::body::Bounds {
            limit: self
                .route
                .body
                .map_or(1 << 20, |e| self.settings.limits.of(e)),
            pace: self.body_pace(),
        }
    }

    /// The pace `[server]` asks of every request body (`docs/decisions.md`, "Connection
    /// hygiene").
    pub fn body_pace(&self) -> tollgate_exchange::body::Pace {
        let server = &self.state.server;
        tollgate_exchange::body::Pace {
            pause: Duration::from_secs(server.body_pause_timeout_seconds),
            min_rate: server.body_min_rate_bytes_per_second,
            window: Duration::from_secs(server.body_min_rate_window_seconds),
            deadline: Duration::from_secs(server.body_deadline_seconds),
        }
    }

    /// Notes the caller on the request's usage record, if it is logged (authentication).
    pub fn note_principal(&self, principal: &tollgate_store::Principal) {
        if let Some(usage) = &self.usage {
            usage.note_principal(principal);
        }
    }

    /// Notes `f`'s part on the request's usage record, if it is logged.
    pub fn note(&self, f: impl FnOnce(&mut UsageRecord)) {
        if let Some(usage) = &self.usage {
            usage.note(f);
        }
    }
}
