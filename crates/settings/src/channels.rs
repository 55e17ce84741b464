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
//!
//! Pools (`docs/decisions.md`, "Channel pools"): a channel may hold several upstream keys, used
//! in turn ([`KeyRing`]; a key the upstream refuses cools down alone), and the channels of one
//! priority level split its calls by weight ([`Rotation`], smooth weighted round robin).

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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
    /// Error answers of the upstream, by HTTP status (401 and 403: it refused the gateway's
    /// credentials).
    refusals: std::collections::BTreeMap<u16, u64>,
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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

    /// The upstream answered an error status.
    pub fn record_refusal(&self, status: u16) {
        *self.counters().refusals.entry(status).or_default() += 1;
    }

    /// The upstream's error answers so far, by status.
    pub fn refusals(&self) -> Vec<(u16, u64)> {
        self.counters()
            .refusals
            .iter()
            .map(|(s, n)| (*s, *n))
            .collect()
    }

    /// A call that could not be sent because every key of the channel rests: a failure of the
    /// channel as far as its circuit goes (and the end of a half-open trial), with no latency.
    pub fn record_unavailable(&self) {
        let mut c = self.counters();
        c.circuit.record(false, Instant::now());
        c.failures += 1;
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
    /// The circuit's state now (what `report` says of it, without the rest).
    pub fn circuit(&self) -> CircuitState {
        self.counters().circuit.state(Instant::now())
    }

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

/// How long a key the upstream rate-limited rests when the answer named no `Retry-After`.
pub const RATE_LIMITED_FOR: Duration = Duration::from_secs(30);
/// How long a key the upstream refused (401, 403) rests before it is tried again: long enough
/// not to spend every request on it, short enough that a fixed key comes back by itself.
pub const REFUSED_FOR: Duration = Duration::from_secs(300);
/// The longest rest a `Retry-After` can ask for.
pub const MAX_REST: Duration = Duration::from_secs(300);

/// A channel's upstream keys, used in turn; a key the upstream refused rests until its time is
/// up while the others carry on. A pure state machine: time is passed in.
#[derive(Debug, Default)]
pub struct KeyRing {
    keys: Vec<String>,
    state: Mutex<RingState>,
}

#[derive(Debug, Default)]
struct RingState {
    next: usize,
    resting_until: Vec<Option<Instant>>,
}

impl KeyRing {
    /// A ring of `keys` (empty: the channel sends no key).
    pub fn new(keys: Vec<String>) -> KeyRing {
        let resting_until = vec![None; keys.len()];
        KeyRing {
            keys,
            state: Mutex::new(RingState {
                next: 0,
                resting_until,
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, RingState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// How many keys it holds.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The next key not resting at `now`, as its index and value; `None` when every key rests.
    /// A ring without keys always answers `Some((0, None))`.
    pub fn pick(&self, now: Instant) -> Option<(usize, Option<&str>)> {
        if self.keys.is_empty() {
            return Some((0, None));
        }
        let mut state = self.state();
        let n = self.keys.len();
        for step in 0..n {
            let i = (state.next + step) % n;
            match state.resting_until[i] {
                Some(until) if until > now => continue,
                _ => {
                    state.resting_until[i] = None;
                    state.next = (i + 1) % n;
                    return Some((i, Some(self.keys[i].as_str())));
                }
            }
        }
        None
    }

    /// Key `index` rests until `until`.
    pub fn rest(&self, index: usize, until: Instant) {
        if let Some(slot) = self.state().resting_until.get_mut(index) {
            *slot = Some(until);
        }
    }

    /// Keys resting at `now`.
    pub fn resting(&self, now: Instant) -> usize {
        self.state()
            .resting_until
            .iter()
            .filter(|r| r.is_some_and(|until| until > now))
            .count()
    }
}

/// How long a key rests after the upstream answered `status` (with `retry_after` seconds), or
/// `None` when the answer says nothing about the key.
pub fn rest_for(status: u16, retry_after: Option<u64>) -> Option<Duration> {
    match status {
        429 => Some(
            retry_after
                .map_or(RATE_LIMITED_FOR, Duration::from_secs)
                .min(MAX_REST),
        ),
        401 | 403 => Some(REFUSED_FOR),
        _ => None,
    }
}

/// The order in which one priority level's channels are offered a call: smooth weighted round
/// robin (each call goes to the channel furthest behind its share, so weights 3 and 1 give
/// `a a b a`, never bursts), the rest of the level after it by weight, as fallbacks.
#[derive(Debug, Default)]
pub struct Rotation {
    weights: Vec<u32>,
    current: Mutex<Vec<i64>>,
}

impl Rotation {
    /// A rotation over channels of these weights.
    pub fn new(weights: Vec<u32>) -> Rotation {
        let current = Mutex::new(vec![0; weights.len()]);
        Rotation { weights, current }
    }

    /// The channels' positions in the order this call offers them.
    pub fn order(&self) -> Vec<usize> {
        let n = self.weights.len();
        if n <= 1 {
            return (0..n).collect();
        }
        let total: i64 = self.weights.iter().map(|w| i64::from(*w)).sum();
        let first = {
            let mut current = self
                .current
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let mut best = 0;
            for i in 0..n {
                current[i] += i64::from(self.weights[i]);
                if current[i] > current[best] {
                    best = i;
                }
            }
            current[best] -= total;
            best
        };
        let mut rest: Vec<usize> = (0..n).filter(|i| *i != first).collect();
        rest.sort_by_key(|i| std::cmp::Reverse(self.weights[*i]));
        let mut order = vec![first];
        order.extend(rest);
        order
    }
}

/// How often a replica reads the operators' channel switches (`tollgate_gateway::build`
/// follows them; `tollgate admin channels` says how soon a change takes effect).
pub const SWITCHES_EVERY: Duration = Duration::from_secs(5);

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
    fn keys_are_used_in_turn_and_a_refused_key_rests_alone() {
        let now = Instant::now();
        let ring = KeyRing::new(vec!["a".into(), "b".into(), "c".into()]);
        let picked: Vec<_> = (0..4).map(|_| ring.pick(now).unwrap().1.unwrap()).collect();
        assert_eq!(picked, ["a", "b", "c", "a"]);
        ring.rest(1, now + Duration::from_secs(30));
        let picked: Vec<_> = (0..4).map(|_| ring.pick(now).unwrap().1.unwrap()).collect();
        assert_eq!(picked, ["c", "a", "c", "a"], "b rests");
        assert_eq!(ring.resting(now), 1);
        ring.rest(0, now + Duration::from_secs(30));
        ring.rest(2, now + Duration::from_secs(10));
        assert!(ring.pick(now).is_none(), "every key rests");
        let later = now + Duration::from_secs(10);
        assert_eq!(
            ring.pick(later).unwrap().1,
            Some("c"),
            "c's rest is over first"
        );
        assert_eq!(KeyRing::default().pick(now), Some((0, None)));
        assert_eq!(rest_for(429, Some(7)), Some(Duration::from_secs(7)));
        assert_eq!(rest_for(429, Some(9_999)), Some(MAX_REST));
        assert_eq!(rest_for(429, None), Some(RATE_LIMITED_FOR));
        assert_eq!(rest_for(401, None), Some(REFUSED_FOR));
        assert_eq!(rest_for(500, None), None);
    }

    #[test]
    fn weights_split_a_level_smoothly() {
        let rotation = Rotation::new(vec![3, 1]);
        let firsts: Vec<usize> = (0..8).map(|_| rotation.order()[0]).collect();
        assert_eq!(firsts, [0, 0, 1, 0, 0, 0, 1, 0]);
        assert_eq!(rotation.order().len(), 2, "the rest of the level follows");
        let three = Rotation::new(vec![1, 1, 2]);
        let mut counts = [0; 3];
        for _ in 0..400 {
            counts[three.order()[0]] += 1;
        }
        assert_eq!(counts, [100, 100, 200]);
        assert_eq!(Rotation::new(vec![5]).order(), [0]);
    }

    #[test]
    fn a_channel_whose_keys_all_rest_ends_its_trial_as_a_failure() {
        let h = ChannelHealth::default();
        for _ in 0..TRIP_AFTER {
            h.record(false, Duration::from_millis(1));
        }
        assert_eq!(h.admit(), Admit::CircuitOpen);
        h.counters().circuit.opened_at = Some(Instant::now() - OPEN_FOR);
        assert_eq!(h.admit(), Admit::Yes, "the half-open trial");
        h.record_unavailable();
        let r = h.report();
        assert_eq!(r.circuit, CircuitState::Open, "the trial ended: reopened");
        assert_eq!(r.failures, u64::from(TRIP_AFTER) + 1);
        assert_eq!(r.latency_ms.p99, Some(1), "no latency recorded for it");
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
