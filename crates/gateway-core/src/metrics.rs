//! Counters and histograms of the request path, kept in a `prometheus_client` registry and
//! written as Prometheus text (format 0.0.4) on `GET /metrics` (docs/architecture.md,
//! "Metrics"; every series is listed in docs/metrics-series.txt).
//!
//! Kept per gateway instance rather than in a global recorder, so that several gateways in one
//! process (the tests) keep separate books. Series:
//!
//! * `tollgate_requests_total{endpoint,status}`
//! * `tollgate_request_duration_seconds{endpoint}` — total time to the response head
//! * `tollgate_upstream_duration_seconds{endpoint}` — time spent waiting on the upstream
//! * `tollgate_gateway_overhead_seconds{endpoint}` — total − upstream, for requests that called one
//! * `tollgate_requests_in_flight`
//! * `tollgate_connections_open`, `tollgate_connections_refused_total{cap}` — client
//!   connections, and those closed at once because every connection that could have given way
//!   was busy (`cap`: `total` for `max_connections` and its reserve, `per_source`)
//! * `tollgate_connections_evicted_total{cap}` — idle connections closed to admit a newer one
//!   (`crate::connections`)
//! * `tollgate_holds_total{outcome}` — settled, released
//! * `tollgate_settlement_anomalies_total{model}` — charges capped below the upstream's figure
//! * `tollgate_policy_refusals_total{rule}` — requests an access policy refused
//! * `tollgate_charged_nanos_total{group}`, `tollgate_charges_total{group}` — money charged and
//!   charges, by price group (`none`: list prices)
//! * `tollgate_ledger_*` — the ledger engine's journal and leases, and the histograms
//!   `tollgate_ledger_commit_seconds` and `tollgate_ledger_batch_entries` (`crate::ledger`)
//! * `tollgate_usage_records_total` — usage-log records journaled (`crate::ledger`)
//! * `tollgate_limit_refusals_total{limit}`, `tollgate_budget_remaining_nanos{holder,period}` —
//!   rate limits and spend caps (`crate::quotas`)

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::time::Duration;

/// Bucket upper bounds in seconds: from 0.5 ms (gateway overhead) to 5 minutes (long uploads).
const BUCKETS: [f64; 16] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 60.0,
    300.0,
];

fn seconds_histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RequestLabels {
    endpoint: &'static str,
    status: u16,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct EndpointLabels {
    endpoint: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct CapLabels {
    cap: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ModelLabels {
    model: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RuleLabels {
    rule: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct GroupLabels {
    group: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct EventLabels {
    event: &'static str,
}

type Seconds = Family<EndpointLabels, Histogram, fn() -> Histogram>;

/// The gateway's metrics of the request path, and the registry that writes them.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    duration: Seconds,
    upstream: Seconds,
    overhead: Seconds,
    in_flight: Gauge,
    connections: Gauge,
    connections_refused: Family<CapLabels, Counter>,
    connections_evicted: Family<CapLabels, Counter>,
    holds: Family<OutcomeLabels, Counter>,
    anomalies: Family<ModelLabels, Counter>,
    /// Every model's anomalies together (not exposed: [`Metrics::anomalies`]).
    anomalies_total: Counter,
    refusals: Family<RuleLabels, Counter>,
    charged_nanos: Family<GroupLabels, Counter>,
    charges: Family<GroupLabels, Counter>,
    tasks: Family<EventLabels, Counter>,
}

impl Default for Metrics {
    fn default() -> Metrics {
        let seconds = || Seconds::new_with_constructor(seconds_histogram as fn() -> Histogram);
        let metrics = Metrics {
            registry: Registry::default(),
            requests: Family::default(),
            duration: seconds(),
            upstream: seconds(),
            overhead: seconds(),
            in_flight: Gauge::default(),
            connections: Gauge::default(),
            connections_refused: Family::default(),
            connections_evicted: Family::default(),
            holds: Family::default(),
            anomalies: Family::default(),
            anomalies_total: Counter::default(),
            refusals: Family::default(),
            charged_nanos: Family::default(),
            charges: Family::default(),
            tasks: Family::default(),
        };
        metrics.registered()
    }
}

/// Counts a client connection as open until dropped; it keeps the metrics' owner (the
/// gateway's state) alive that long.
#[derive(Debug)]
pub struct OpenConnection<O: AsRef<Metrics>>(std::sync::Arc<O>);

impl<O: AsRef<Metrics>> OpenConnection<O> {
    /// Counts a connection of the gateway whose metrics `owner` has.
    pub fn new(owner: std::sync::Arc<O>) -> OpenConnection<O> {
        (*owner).as_ref().connections.inc();
        OpenConnection(owner)
    }
}

impl<O: AsRef<Metrics>> Drop for OpenConnection<O> {
    fn drop(&mut self) {
        (*self.0).as_ref().connections.dec();
    }
}

/// Counts a request as in flight until dropped.
#[derive(Debug)]
pub struct InFlight<'a>(&'a Metrics);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.dec();
    }
}

impl Metrics {
    /// Registers every family under its name of docs/metrics-series.txt (a counter's `_total`
    /// is the encoder's, and so is the period that ends a help text).
    fn registered(mut self) -> Metrics {
        let r = &mut self.registry;
        r.register(
            "tollgate_requests",
            "Requests by endpoint and HTTP status",
            self.requests.clone(),
        );
        r.register(
            "tollgate_request_duration_seconds",
            "Time from request to response head",
            self.duration.clone(),
        );
        r.register(
            "tollgate_upstream_duration_seconds",
            "Time spent waiting on the upstream",
            self.upstream.clone(),
        );
        r.register(
            "tollgate_gateway_overhead_seconds",
            "Request time minus upstream time",
            self.overhead.clone(),
        );
        r.register(
            "tollgate_requests_in_flight",
            "Requests being served now",
            self.in_flight.clone(),
        );
        r.register(
            "tollgate_connections_open",
            "Client connections open now",
            self.connections.clone(),
        );
        r.register(
            "tollgate_connections_refused",
            "Connections closed at once, every one that could have given way busy, by cap",
            self.connections_refused.clone(),
        );
        r.register(
            "tollgate_connections_evicted",
            "Idle connections closed to admit a newer one, by cap",
            self.connections_evicted.clone(),
        );
        r.register(
            "tollgate_holds",
            "Holds closed, by outcome",
            self.holds.clone(),
        );
        r.register(
            "tollgate_settlement_anomalies",
            "Charges capped below the upstream's usage figure, by model",
            self.anomalies.clone(),
        );
        r.register(
            "tollgate_policy_refusals",
            "Requests an access policy refused, by rule",
            self.refusals.clone(),
        );
        r.register(
            "tollgate_charged_nanos",
            "Money charged, in nano-units, by price group",
            self.charged_nanos.clone(),
        );
        r.register(
            "tollgate_charges",
            "Charges, by price group",
            self.charges.clone(),
        );
        r.register(
            "tollgate_task_events",
            "Video-task events seen by this replica",
            self.tasks.clone(),
        );
        // Both caps from the start, as the exposition always had them.
        for cap in [
            crate::connections::Cap::Total,
            crate::connections::Cap::PerSource,
        ] {
            let labels = CapLabels { cap: cap.label() };
            drop(self.connections_refused.get_or_create(&labels));
            drop(self.connections_evicted.get_or_create(&labels));
        }
        self
    }

    /// Counts a connection closed as soon as it was accepted.
    pub fn connection_refused(&self, cap: crate::connections::Cap) {
        self.connections_refused
            .get_or_create(&CapLabels { cap: cap.label() })
            .inc();
    }

    /// Counts an idle connection closed to admit a newer one.
    pub fn connection_evicted(&self, cap: crate::connections::Cap) {
        self.connections_evicted
            .get_or_create(&CapLabels { cap: cap.label() })
            .inc();
    }

    /// Marks a request in flight.
    pub fn enter(&self) -> InFlight<'_> {
        self.in_flight.inc();
        InFlight(self)
    }

    /// Records a finished request; `upstream` is the time spent on the upstream, if it was called.
    pub fn record(
        &self,
        endpoint: &'static str,
        status: u16,
        total: Duration,
        upstream: Option<Duration>,
    ) {
        self.requests
            .get_or_create(&RequestLabels { endpoint, status })
            .inc();
        let labels = EndpointLabels { endpoint };
        self.duration
            .get_or_create(&labels)
            .observe(total.as_secs_f64());
        if let Some(up) = upstream {
            self.upstream
                .get_or_create(&labels)
                .observe(up.as_secs_f64());
            self.overhead
                .get_or_create(&labels)
                .observe(total.saturating_sub(up).as_secs_f64());
        }
    }

    /// Counts a closed hold.
    pub fn hold_closed(&self, outcome: &'static str) {
        self.holds.get_or_create(&OutcomeLabels { outcome }).inc();
    }

    /// Counts a settlement capped below the upstream's figure (`docs/decisions.md`).
    pub fn settlement_anomaly(&self, model: &str) {
        self.anomalies
            .get_or_create(&ModelLabels {
                model: model.to_owned(),
            })
            .inc();
        self.anomalies_total.inc();
    }

    /// Capped settlements so far, over every model.
    pub fn anomalies(&self) -> u64 {
        self.anomalies_total.get()
    }

    /// Counts a request an access policy refused, by the rule (`model`, `endpoint`,
    /// `network`, `expired`).
    pub fn policy_refusal(&self, rule: &'static str) {
        self.refusals.get_or_create(&RuleLabels { rule }).inc();
    }

    /// Counts a charge of `nanos` in the price group `group` (`None`: list prices).
    pub fn charged(&self, group: Option<&str>, nanos: i64) {
        let labels = GroupLabels {
            group: group.unwrap_or("none").to_owned(),
        };
        self.charged_nanos
            .get_or_create(&labels)
            .inc_by(u64::try_from(nanos).unwrap_or(0));
        self.charges.get_or_create(&labels).inc();
    }

    /// Counts a video-task event (`submitted`, `refused`, `succeeded`, `failed`, `poll_error`,
    /// `expired`, …).
    pub fn task_event(&self, event: &'static str) {
        self.tasks.get_or_create(&EventLabels { event }).inc();
    }

    /// Requests seen with this endpoint and status.
    pub fn requests(&self, endpoint: &'static str, status: u16) -> u64 {
        self.requests
            .get_or_create(&RequestLabels { endpoint, status })
            .get()
    }

    /// The request path's series in the Prometheus text format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        encode(&mut out, &self.registry);
        out
    }
}

/// Writes `registry` to `out` in the Prometheus text format (version 0.0.4): every part of
/// `/metrics` goes through here.
pub fn encode(out: &mut String, registry: &Registry) {
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::prometheus_text::encode(out, registry);
}

/// The content type of [`encode`]'s text.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_and_cumulative_buckets() {
        let m = Metrics::default();
        m.record(
            "embeddings",
            200,
            Duration::from_millis(30),
            Some(Duration::from_millis(28)),
        );
        m.record("embeddings", 401, Duration::from_micros(300), None);
        let text = m.render();
        assert!(text.contains("tollgate_requests_total{endpoint=\"embeddings\",status=\"200\"} 1"));
        assert!(text.contains(
            "tollgate_request_duration_seconds_bucket{endpoint=\"embeddings\",le=\"0.0005\"} 1"
        ));
        assert!(text.contains(
            "tollgate_request_duration_seconds_bucket{endpoint=\"embeddings\",le=\"+Inf\"} 2"
        ));
        assert!(
            text.contains("tollgate_gateway_overhead_seconds_count{endpoint=\"embeddings\"} 1")
        );
        assert!(
            text.contains("# TYPE tollgate_requests_total counter\n"),
            "{text}"
        );
        assert!(
            text.contains("# HELP tollgate_requests_total Requests by endpoint and HTTP status.\n"),
            "{text}"
        );
        assert_eq!(m.requests("embeddings", 401), 1);
    }

    #[test]
    fn label_values_are_escaped() {
        let m = Metrics::default();
        m.settlement_anomaly("a \"quoted\" \\ model");
        let text = m.render();
        assert!(
            text.contains(
                r#"tollgate_settlement_anomalies_total{model="a \"quoted\" \\ model"} 1"#
            ),
            "{text}"
        );
    }
}
