//! Counters and histograms, rendered as Prometheus text on `GET /metrics`.
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
//! * `tollgate_ledger_*` — the ledger engine's journal and leases (`crate::ledger`)
//! * `tollgate_usage_records_total` — usage-log records journaled (`crate::ledger`)
//! * `tollgate_limit_refusals_total{limit}`, `tollgate_budget_remaining_nanos{holder,period}` —
//!   rate limits and spend caps (`crate::quotas`)

use std::collections::BTreeMap;
use std::fmt::Write;
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

    fn render(&self, out: &mut String, name: &str, labels: &str) {
        let sep = if labels.is_empty() { "" } else { "," };
        for (i, bound) in BUCKETS.iter().enumerate() {
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels}{sep}le=\"{bound}\"}} {}",
                self.counts[i]
            );
        }
        let _ = writeln!(
            out,
            "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}",
            self.count
        );
        let _ = writeln!(out, "{name}_sum{{{labels}}} {}", self.sum);
        let _ = writeln!(out, "{name}_count{{{labels}}} {}", self.count);
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

    /// Requests seen with this endpoint and status.
    pub fn requests(&self, endpoint: &str, status: u16) -> u64 {
        self.books()
            .requests
            .iter()
            .filter(|((e, s), _)| *e == endpoint && *s == status)
            .map(|(_, n)| *n)
            .sum()
    }

    /// Prometheus text exposition format.
    pub fn render(&self) -> String {
        let b = self.books();
        let mut out = String::new();
        out.push_str("# HELP tollgate_requests_total Requests by endpoint and HTTP status.\n");
        out.push_str("# TYPE tollgate_requests_total counter\n");
        for ((endpoint, status), n) in &b.requests {
            let _ = writeln!(
                out,
                "tollgate_requests_total{{endpoint=\"{endpoint}\",status=\"{status}\"}} {n}"
            );
        }
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
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} histogram");
            for (endpoint, h) in series {
                h.render(&mut out, name, &format!("endpoint=\"{endpoint}\""));
            }
        }
        out.push_str("# HELP tollgate_requests_in_flight Requests being served now.\n");
        out.push_str("# TYPE tollgate_requests_in_flight gauge\n");
        let _ = writeln!(
            out,
            "tollgate_requests_in_flight {}",
            self.in_flight.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP tollgate_connections_open Client connections open now.\n\
             # TYPE tollgate_connections_open gauge\n\
             tollgate_connections_open {}",
            self.connections.load(Ordering::Relaxed),
        );
        for (name, help, counters) in [
            (
                "tollgate_connections_refused_total",
                "Connections closed at once, every one that could have given way busy, by cap.",
                &self.connections_refused,
            ),
            (
                "tollgate_connections_evicted_total",
                "Idle connections closed to admit a newer one, by cap.",
                &self.connections_evicted,
            ),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
            for (cap, n) in CAPS.iter().zip(counters) {
                let _ = writeln!(
                    out,
                    "{name}{{cap=\"{}\"}} {}",
                    cap.label(),
                    n.load(Ordering::Relaxed)
                );
            }
        }
        out.push_str("# HELP tollgate_holds_total Holds closed, by outcome.\n");
        out.push_str("# TYPE tollgate_holds_total counter\n");
        for (outcome, n) in &b.holds {
            let _ = writeln!(out, "tollgate_holds_total{{outcome=\"{outcome}\"}} {n}");
        }
        out.push_str("# HELP tollgate_settlement_anomalies_total Charges capped below the upstream's usage figure, by model.\n");
        out.push_str("# TYPE tollgate_settlement_anomalies_total counter\n");
        for (model, n) in &b.anomalies {
            let _ = writeln!(
                out,
                "tollgate_settlement_anomalies_total{{model=\"{}\"}} {n}",
                label(model)
            );
        }
        out.push_str(
            "# HELP tollgate_policy_refusals_total Requests an access policy refused, by rule.\n",
        );
        out.push_str("# TYPE tollgate_policy_refusals_total counter\n");
        for (rule, n) in &b.refusals {
            let _ = writeln!(out, "tollgate_policy_refusals_total{{rule=\"{rule}\"}} {n}");
        }
        out.push_str(
            "# HELP tollgate_charged_nanos_total Money charged, in nano-units, by price group.\n",
        );
        out.push_str("# TYPE tollgate_charged_nanos_total counter\n");
        for (group, (nanos, _)) in &b.charged {
            let _ = writeln!(
                out,
                "tollgate_charged_nanos_total{{group=\"{}\"}} {nanos}",
                label(group)
            );
        }
        out.push_str("# HELP tollgate_charges_total Charges, by price group.\n");
        out.push_str("# TYPE tollgate_charges_total counter\n");
        for (group, (_, n)) in &b.charged {
            let _ = writeln!(
                out,
                "tollgate_charges_total{{group=\"{}\"}} {n}",
                label(group)
            );
        }
        out.push_str("# HELP tollgate_task_events_total Video-task events seen by this replica.\n");
        out.push_str("# TYPE tollgate_task_events_total counter\n");
        for (event, n) in &b.tasks {
            let _ = writeln!(out, "tollgate_task_events_total{{event=\"{event}\"}} {n}");
        }
        out
    }
}

/// A label value with its backslashes and quotes escaped (Prometheus text format).
pub fn label(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"")
}

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
        assert_eq!(m.requests("embeddings", 401), 1);
    }
}
