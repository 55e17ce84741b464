//! Counters and histograms of the request path, counted in one lock and plain atomics (they are
//! on every request's path) and written by `prometheus_client`'s encoder at each scrape of
//! `GET /metrics` (docs/architecture.md, "Metrics"; every series is listed in
//! docs/metrics-series.txt).
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
//!   `tollgate_ledger_commit_seconds` and `tollgate_ledger_batch_entries` (`tollgate_journal::ledger`)
//! * `tollgate_usage_records_total` — usage-log records journaled (`tollgate_journal::ledger`)
//! * `tollgate_alert_events_total{rule,type}`, `tollgate_alert_attempts_total{outcome}` —
//!   alert events this replica recorded, and webhook attempts it made (`delivered`, `retry`,
//!   `given_up`)
//! * `tollgate_limit_refusals_total{limit}`, `tollgate_budget_remaining_nanos{holder,period}` —
//!   rate limits and spend caps (`crate::quotas`)

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

/// Bucket upper bounds in seconds: from 0.5 ms (gateway overhead) to 5 minutes (long uploads).
const BUCKETS: [f64; 16] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 60.0,
    300.0,
];

#[derive(Debug, Default, Clone)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

impl Histogram {
    fn observe(&mut self, d: Duration) {
        let s = d.as_secs_f64();
        for (i, bound) in BUCKETS.iter().enumerate() {
            if s <= *bound {
                self.counts[i] += 1;
            }
        }
        self.count += 1;
        self.sum += s;
    }
}

#[derive(Debug, Default)]
struct Books {
    requests: BTreeMap<(&'static str, u16), u64>,
    duration: BTreeMap<&'static str, Histogram>,
    upstream: BTreeMap<&'static str, Histogram>,
    overhead: BTreeMap<&'static str, Histogram>,
    holds: BTreeMap<&'static str, u64>,
    tasks: BTreeMap<&'static str, u64>,
    anomalies: BTreeMap<String, u64>,
    refusals: BTreeMap<&'static str, u64>,
    /// By price group: nano-units charged, and how many charges.
    charged: BTreeMap<String, (u64, u64)>,
    /// By rule and type (`alert.fired`, `alert.resolved`).
    alert_events: BTreeMap<(String, &'static str), u64>,
    /// By outcome.
    alert_attempts: BTreeMap<&'static str, u64>,
}

/// The gateway's metrics.
#[derive(Debug, Default)]
pub struct Metrics {
    books: Mutex<Books>,
    in_flight: AtomicI64,
    connections: AtomicI64,
    /// By cap: total, per source.
    connections_refused: [AtomicU64; 2],
    connections_evicted: [AtomicU64; 2],
}

/// The caps of `crate::connections`, in the order of the counters above.
const CAPS: [crate::connections::Cap; 2] = [
    crate::connections::Cap::Total,
    crate::connections::Cap::PerSource,
];

fn cap_index(cap: crate::connections::Cap) -> usize {
    match cap {
        crate::connections::Cap::Total => 0,
        crate::connections::Cap::PerSource => 1,
    }
}

/// Counts a client connection as open until dropped; it keeps the metrics' owner (the
/// gateway's state) alive that long.
#[derive(Debug)]
pub struct OpenConnection<O: AsRef<Metrics>>(std::sync::Arc<O>);

impl<O: AsRef<Metrics>> OpenConnection<O> {
    /// Counts a connection of the gateway whose metrics `owner` has.
    pub fn new(owner: std::sync::Arc<O>) -> OpenConnection<O> {
        (*owner)
            .as_ref()
            .connections
            .fetch_add(1, Ordering::Relaxed);
        OpenConnection(owner)
    }
}

impl<O: AsRef<Metrics>> Drop for OpenConnection<O> {
    fn drop(&mut self) {
        (*self.0)
            .as_ref()
            .connections
            .fetch_sub(1, Ordering::Relaxed);
    }
}

/// Counts a request as in flight until dropped.
#[derive(Debug)]
pub struct InFlight<'a>(&'a Metrics);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Metrics {
    fn books(&self) -> std::sync::MutexGuard<'_, Books> {
        self.books
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts a connection closed as soon as it was accepted.
    pub fn connection_refused(&self, cap: crate::connections::Cap) {
        self.connections_refused[cap_index(cap)].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts an idle connection closed to admit a newer one.
    pub fn connection_evicted(&self, cap: crate::connections::Cap) {
        self.connections_evicted[cap_index(cap)].fetch_add(1, Ordering::Relaxed);
    }

    /// Marks a request in flight.
    pub fn enter(&self) -> InFlight<'_> {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
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
        let mut b = self.books();
        *b.requests.entry((endpoint, status)).or_default() += 1;
        b.duration.entry(endpoint).or_default().observe(total);
        if let Some(up) = upstream {
            b.upstream.entry(endpoint).or_default().observe(up);
            b.overhead
                .entry(endpoint)
                .or_default()
                .observe(total.saturating_sub(up));
        }
    }

    /// Counts a closed hold.
    pub fn hold_closed(&self, outcome: &'static str) {
        *self.books().holds.entry(outcome).or_default() += 1;
    }

    /// Counts a settlement capped below the upstream's figure (`docs/decisions.md`).
    pub fn settlement_anomaly(&self, model: &str) {
        *self.books().anomalies.entry(model.to_owned()).or_default() += 1;
    }

    /// Capped settlements so far, over every model.
    pub fn anomalies(&self) -> u64 {
        self.books().anomalies.values().sum()
    }

    /// Counts a request an access policy refused, by the rule (`model`, `endpoint`,
    /// `network`, `expired`).
    pub fn policy_refusal(&self, rule: &'static str) {
        *self.books().refusals.entry(rule).or_default() += 1;
    }

    /// Counts a charge of `nanos` in the price group `group` (`None`: list prices).
    pub fn charged(&self, group: Option<&str>, nanos: i64) {
        let mut books = self.books();
        let entry = books
            .charged
            .entry(group.unwrap_or("none").to_owned())
            .or_default();
        entry.0 = entry.0.saturating_add(u64::try_from(nanos).unwrap_or(0));
        entry.1 += 1;
    }

    /// Counts a video-task event (`submitted`, `refused`, `succeeded`, `failed`, `poll_error`,
    /// `expired`, …).
    pub fn task_event(&self, event: &'static str) {
        *self.books().tasks.entry(event).or_default() += 1;
    }

    /// Counts an alert event this replica recorded.
    pub fn alert_event(&self, rule: &str, event_type: &'static str) {
        *self
            .books()
            .alert_events
            .entry((rule.to_owned(), event_type))
            .or_default() += 1;
    }

    /// Counts a webhook attempt by its outcome (`delivered`, `retry`, `given_up`).
    pub fn alert_attempt(&self, outcome: &'static str) {
        *self.books().alert_attempts.entry(outcome).or_default() += 1;
    }

    /// Requests seen with this endpoint and status.
    pub fn requests(&self, endpoint: &str, status: u16) -> u64 {
        self.books()
            .requests
            .iter()
            .filter(|((e, s), _)| *e == endpoint && *s == status)
            .map(|(_, n)| *n)
            .sum()
    }

    /// Registers the request path's series in `registry` (made for one scrape): a collector
    /// that reads the books when the registry is encoded.
    pub fn register_metrics(self: &std::sync::Arc<Self>, registry: &mut Registry) {
        registry.register_collector(Box::new(Exposition(self.clone())));
    }

    /// The request path's series alone, as `/metrics` writes them.
    pub fn render(self: &std::sync::Arc<Self>) -> String {
        let mut registry = Registry::default();
        self.register_metrics(&mut registry);
        let mut text = String::new();
        encode(&mut text, &registry);
        text
    }
}

/// The request path's series, read from [`Metrics`] when a scrape encodes them.
#[derive(Debug)]
struct Exposition(std::sync::Arc<Metrics>);

/// Writes one counter family: `name` without `_total`, which the encoder adds.
fn counters<'l, L: EncodeLabelSet + 'l>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (L, u64)>,
) -> std::fmt::Result {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (labels, value) in series {
        family
            .encode_family(&labels)?
            .encode_counter::<NoLabelSet, _, u64>(&value, None)?;
    }
    Ok(())
}

/// Writes one gauge without labels.
fn gauge(encoder: &mut DescriptorEncoder, name: &str, help: &str, value: i64) -> std::fmt::Result {
    encoder
        .encode_descriptor(name, help, None, MetricType::Gauge)?
        .encode_gauge(&value)
}

/// Writes one histogram family of [`BUCKETS`].
fn histograms(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: &BTreeMap<&'static str, Histogram>,
) -> std::fmt::Result {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Histogram)?;
    for (endpoint, h) in series {
        // The encoder takes each bucket's own count and sums them itself.
        let mut below = 0;
        let buckets: Vec<(f64, u64)> = BUCKETS
            .iter()
            .zip(h.counts)
            .map(|(bound, cumulative)| {
                let own = cumulative - below;
                below = cumulative;
                (*bound, own)
            })
            .collect();
        family
            .encode_family(&[("endpoint", *endpoint)])?
            .encode_histogram::<NoLabelSet>(h.sum, h.count, &buckets, None)?;
    }
    Ok(())
}

impl Collector for Exposition {
    fn encode(&self, mut encoder: DescriptorEncoder) -> std::fmt::Result {
        let m = &*self.0;
        let b = m.books();
        counters(
            &mut encoder,
            "tollgate_requests",
            "Requests by endpoint and HTTP status.",
            b.requests.iter().map(|((endpoint, status), n)| {
                (
                    [
                        ("endpoint", endpoint.to_string()),
                        ("status", status.to_string()),
                    ],
                    *n,
                )
            }),
        )?;
        for (name, help, series) in [
            (
                "tollgate_request_duration_seconds",
                "Time from request to response head.",
                &b.duration,
            ),
            (
                "tollgate_upstream_duration_seconds",
                "Time spent waiting on the upstream.",
                &b.upstream,
            ),
            (
                "tollgate_gateway_overhead_seconds",
                "Request time minus upstream time.",
                &b.overhead,
            ),
        ] {
            histograms(&mut encoder, name, help, series)?;
        }
        gauge(
            &mut encoder,
            "tollgate_requests_in_flight",
            "Requests being served now.",
            m.in_flight.load(Ordering::Relaxed),
        )?;
        gauge(
            &mut encoder,
            "tollgate_connections_open",
            "Client connections open now.",
            m.connections.load(Ordering::Relaxed),
        )?;
        for (name, help, by_cap) in [
            (
                "tollgate_connections_refused",
                "Connections closed at once, every one that could have given way busy, by cap.",
                &m.connections_refused,
            ),
            (
                "tollgate_connections_evicted",
                "Idle connections closed to admit a newer one, by cap.",
                &m.connections_evicted,
            ),
        ] {
            counters(
                &mut encoder,
                name,
                help,
                CAPS.iter()
                    .zip(by_cap)
                    .map(|(cap, n)| ([("cap", cap.label())], n.load(Ordering::Relaxed))),
            )?;
        }
        counters(
            &mut encoder,
            "tollgate_holds",
            "Holds closed, by outcome.",
            b.holds
                .iter()
                .map(|(outcome, n)| ([("outcome", *outcome)], *n)),
        )?;
        counters(
            &mut encoder,
            "tollgate_settlement_anomalies",
            "Charges capped below the upstream's usage figure, by model.",
            b.anomalies
                .iter()
                .map(|(model, n)| ([("model", model.as_str())], *n)),
        )?;
        counters(
            &mut encoder,
            "tollgate_policy_refusals",
            "Requests an access policy refused, by rule.",
            b.refusals.iter().map(|(rule, n)| ([("rule", *rule)], *n)),
        )?;
        counters(
            &mut encoder,
            "tollgate_charged_nanos",
            "Money charged, in nano-units, by price group.",
            b.charged
                .iter()
                .map(|(group, (nanos, _))| ([("group", group.as_str())], *nanos)),
        )?;
        counters(
            &mut encoder,
            "tollgate_charges",
            "Charges, by price group.",
            b.charged
                .iter()
                .map(|(group, (_, n))| ([("group", group.as_str())], *n)),
        )?;
        counters(
            &mut encoder,
            "tollgate_task_events",
            "Video-task events seen by this replica.",
            b.tasks.iter().map(|(event, n)| ([("event", *event)], *n)),
        )?;
        counters(
            &mut encoder,
            "tollgate_alert_events",
            "Alert events this replica recorded, by rule and type.",
            b.alert_events
                .iter()
                .map(|((rule, kind), n)| ([("rule", rule.as_str()), ("type", *kind)], *n)),
        )?;
        counters(
            &mut encoder,
            "tollgate_alert_attempts",
            "Alert webhook attempts this replica made, by outcome.",
            b.alert_attempts
                .iter()
                .map(|(outcome, n)| ([("outcome", *outcome)], *n)),
        )
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
        let m = std::sync::Arc::new(Metrics::default());
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
            "tollgate_request_duration_seconds_bucket{endpoint=\"embeddings\",le=\"0.05\"} 2"
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
        // A family without series still says what it is.
        assert!(
            text.contains("# TYPE tollgate_task_events_total counter\n"),
            "{text}"
        );
        assert_eq!(m.requests("embeddings", 401), 1);
    }

    #[test]
    fn label_values_are_escaped() {
        let m = std::sync::Arc::new(Metrics::default());
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
