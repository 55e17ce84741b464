//! How each channel is doing (`docs/decisions.md`, "Channel health"): calls that succeeded and
//! failed, recent latencies, and a circuit breaker — after [`TRIP_AFTER`] failures in a row a
//! channel is tried after the model's other channels for [`OPEN_FOR`] (last, not never: with
//! no other channel left, refusing would only make the failure certain), then one trial call
//! decides whether it is back. An
//! operator can also switch a channel off (`POST /admin/v1/channels/{name}/disable`), for every
//! replica: the switch is in the database and each replica reads it every few seconds.
//!
//! [`Circuit`] is the pure state machine (time passed in); [`ChannelHealth`] holds it with the
//! counters behind a lock that no `.await` crosses.

use serde::Serialize;
use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Failures in a row that open the circuit.
pub const TRIP_AFTER: u32 = 5;
/// How long an open circuit skips the channel before a trial call.
pub const OPEN_FOR: Duration = Duration::from_secs(30);
/// How many recent latencies the percentiles are taken over.
const LATENCY_WINDOW: usize = 512;

/// A circuit breaker's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CircuitState {
    /// Calls go through.
    Closed,
    /// Calls skip the channel until the cool-down ends.
    Open,
    /// The cool-down ended: one trial call is let through.
    HalfOpen,
}

/// The circuit breaker of one channel.
#[derive(Debug, Clone, Default)]
pub struct Circuit {
    failures_in_a_row: u32,
    opened_at: Option<Instant>,
    trial_in_flight: bool,
}

impl Circuit {
    /// The state at `now`.
    pub fn state(&self, now: Instant) -> CircuitState {
        match self.opened_at {
            None => CircuitState::Closed,
            Some(at) if now.duration_since(at) < OPEN_FOR => CircuitState::Open,
            Some(_) => CircuitState::HalfOpen,
        }
    }

    /// Whether a call may go to the channel now; a half-open circuit lets one through.
    pub fn admit(&mut self, now: Instant) -> bool {
        match self.state(now) {
            CircuitState::Closed => true,
            CircuitState::Open => false,
            CircuitState::HalfOpen if self.trial_in_flight => false,
            CircuitState::HalfOpen => {
                self.trial_in_flight = true;
                true
            }
        }
    }

    /// A call ended: a success closes the circuit; a failure counts, and opens it at
    /// [`TRIP_AFTER`] in a row (at once, after a failed trial).
    pub fn record(&mut self, ok: bool, now: Instant) {
        let trial = std::mem::take(&mut self.trial_in_flight);
        if ok {
            *self = Circuit::default();
            return;
        }
        self.failures_in_a_row = self.failures_in_a_row.saturating_add(1);
        if trial || self.failures_in_a_row >= TRIP_AFTER {
            self.opened_at = Some(now);
        }
    }
}

#[derive(Debug, Default)]
struct Counters {
    circuit: Circuit,
    successes: u64,
    failures: u64,
    latencies_ms: VecDeque<u32>,
}

/// What [`ChannelHealth::admit`] says of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Send it.
    Yes,
    /// An operator switched the channel off: never send.
    SwitchedOff,
    /// The circuit is open: try the model's other channels first, this one last.
    CircuitOpen,
}

/// A channel's health: counters, latencies, its circuit, and the operator's switch.
#[derive(Debug, Default)]
pub struct ChannelHealth {
    counters: Mutex<Counters>,
    disabled: AtomicBool,
}

/// What `GET /admin/v1/channels` shows of one channel.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HealthReport {
    /// Calls that succeeded since the start.
    pub successes: u64,
    /// Calls that failed since the start.
    pub failures: u64,
    /// successes / (successes + failures), `None` before the first call.
    pub success_rate: Option<f64>,
    /// Latency percentiles over the last calls, milliseconds.
    pub latency_ms: Latency,
    /// The circuit breaker.
    pub circuit: CircuitState,
    /// Failures in a row right now.
    pub failures_in_a_row: u32,
    /// Switched off by an operator.
    pub disabled: bool,
}

/// Latency percentiles, milliseconds (`None` before the first call).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Latency {
    /// Median.
    pub p50: Option<u32>,
    /// 95th percentile.
    pub p95: Option<u32>,
    /// 99th percentile.
    pub p99: Option<u32>,
}

impl ChannelHealth {
    fn counters(&self) -> std::sync::MutexGuard<'_, Counters> {
        // A panic elsewhere while holding the lock leaves counters that are still counters.
        self.counters
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether a call may be sent now: switched on, and its circuit admits it.
    pub fn admit(&self) -> Admit {
        if self.is_disabled() {
            Admit::SwitchedOff
        } else if self.counters().circuit.admit(Instant::now()) {
            Admit::Yes
        } else {
            Admit::CircuitOpen
        }
    }

    /// A call ended after `elapsed`; `ok` unless the channel failed (an upstream 5xx, a
    /// timeout, a refused connection — not the client's bad request).
    pub fn record(&self, ok: bool, elapsed: Duration) {
        let mut c = self.counters();
        c.circuit.record(ok, Instant::now());
        if ok {
            c.successes += 1;
        } else {
            c.failures += 1;
        }
        if c.latencies_ms.len() == LATENCY_WINDOW {
            c.latencies_ms.pop_front();
        }
        c.latencies_ms
            .push_back(u32::try_from(elapsed.as_millis()).unwrap_or(u32::MAX));
    }

    /// Switches the channel off or on.
    pub fn set_disabled(&self, disabled: bool) {
        self.disabled.store(disabled, Ordering::Relaxed);
    }

    /// Whether an operator switched it off.
    pub fn is_disabled(&self) -> bool {
        self.disabled.load(Ordering::Relaxed)
    }

    /// The report.
    pub fn report(&self) -> HealthReport {
        let c = self.counters();
        let total = c.successes + c.failures;
        let mut sorted: Vec<u32> = c.latencies_ms.iter().copied().collect();
        sorted.sort_unstable();
        let pick = |q: usize| -> Option<u32> {
            let last = sorted.len().checked_sub(1)?;
            sorted.get(last * q / 100).copied()
        };
        HealthReport {
            successes: c.successes,
            failures: c.failures,
            // A ratio for a dashboard, not money.
            #[allow(clippy::cast_precision_loss)]
            success_rate: (total > 0).then(|| c.successes as f64 / total as f64),
            latency_ms: Latency {
                p50: pick(50),
                p95: pick(95),
                p99: pick(99),
            },
            circuit: c.circuit.state(Instant::now()),
            failures_in_a_row: c.circuit.failures_in_a_row,
            disabled: self.is_disabled(),
        }
    }
}

/// How often a replica reads the operators' channel switches.
pub const SWITCHES_EVERY: Duration = Duration::from_secs(5);

/// Keeps this replica's channel switches in step with the database's, for as long as it runs
/// (the first read at once, so a replica starts with the channels switched off already off).
pub async fn follow_switches(state: std::sync::Arc<crate::state::State>) {
    let mut tick = tokio::time::interval(SWITCHES_EVERY);
    loop {
        tick.tick().await;
        match state.store.disabled_channels().await {
            Ok(off) => {
                for channel in state.catalog.channels() {
                    channel
                        .health
                        .set_disabled(off.iter().any(|name| *name == channel.name));
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not read the channel switches"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trips_after_failures_in_a_row_and_recovers_by_trial() {
        let start = Instant::now();
        let mut c = Circuit::default();
        for _ in 0..TRIP_AFTER - 1 {
            assert!(c.admit(start));
            c.record(false, start);
        }
        assert_eq!(c.state(start), CircuitState::Closed);
        c.record(true, start);
        for _ in 0..TRIP_AFTER {
            c.record(false, start);
        }
        assert_eq!(c.state(start), CircuitState::Open);
        assert!(!c.admit(start + OPEN_FOR / 2));
        let later = start + OPEN_FOR;
        assert_eq!(c.state(later), CircuitState::HalfOpen);
        assert!(c.admit(later), "one trial");
        assert!(!c.admit(later), "only one");
        c.record(false, later);
        assert_eq!(c.state(later), CircuitState::Open, "a failed trial reopens");
        let again = later + OPEN_FOR;
        assert!(c.admit(again));
        c.record(true, again);
        assert_eq!(c.state(again), CircuitState::Closed);
    }

    #[test]
    fn percentiles_of_recent_calls() {
        let h = ChannelHealth::default();
        assert_eq!(h.report().latency_ms.p50, None);
        for ms in 1..=100 {
            h.record(true, Duration::from_millis(ms));
        }
        h.record(false, Duration::from_millis(1000));
        let r = h.report();
        assert_eq!((r.successes, r.failures), (100, 1));
        assert_eq!(r.latency_ms.p50, Some(51));
        assert_eq!(r.latency_ms.p99, Some(100));
        assert_eq!(h.admit(), Admit::Yes);
        h.set_disabled(true);
        assert_eq!(h.admit(), Admit::SwitchedOff);
    }
}
