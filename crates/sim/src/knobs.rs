//! Fault and latency injection.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

/// What the knobs are set to; also the JSON of `GET`/`PUT /_sim/knobs`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KnobSettings {
    /// Added before every answer, in milliseconds.
    pub latency_ms: u64,
    /// Answer with this HTTP status (in the vendor's error shape) instead of doing the work.
    pub fail_status: Option<u16>,
    /// With `fail_status`: fail only the next N requests, then recover. `None` = every request.
    pub fail_times: Option<u32>,
    /// Accept requests and never answer (a dead upstream, for timeout tests).
    pub stall: bool,
    /// Streams: the pause between two frames, in milliseconds (default 20).
    pub frame_interval_ms: Option<u64>,
    /// Streams: drop the connection after this many frames (an upstream cut).
    pub cut_after_frames: Option<u32>,
    /// Streams: send an error frame after this many frames, then end.
    pub error_after_frames: Option<u32>,
    /// Video tasks: how long a new task stays `queued`, in milliseconds (default 200).
    pub task_queued_ms: Option<u64>,
    /// Video tasks: how long a task then stays `running`, in milliseconds (default 800).
    pub task_running_ms: Option<u64>,
    /// Video tasks: fail every Nth created task (`Some(10)` fails 10 %); `None` or `Some(0)`
    /// fails none. Counted over both task formats since the simulator started.
    pub task_fail_every: Option<u32>,
    /// Report this number as every usage figure (tokens, characters, seconds, video tokens)
    /// instead of the true one: an upstream that lies about usage.
    pub report_usage: Option<u64>,
    /// Images: draw every image this many times larger than asked (a vendor that returns a
    /// larger image than it was asked for).
    pub image_scale: Option<u32>,
    /// Refuse requests bearing one of these keys with 401 (a revoked upstream key).
    pub refuse_keys: Vec<String>,
}

impl KnobSettings {
    /// The pause between stream frames.
    pub fn frame_interval(&self) -> Duration {
        Duration::from_millis(self.frame_interval_ms.unwrap_or(20))
    }

    /// How long a new video task stays queued.
    pub fn task_queued(&self) -> Duration {
        Duration::from_millis(self.task_queued_ms.unwrap_or(200))
    }

    /// How long a video task runs once it leaves the queue.
    pub fn task_running(&self) -> Duration {
        Duration::from_millis(self.task_running_ms.unwrap_or(800))
    }
}

/// What the simulator decided for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    None,
    Status(u16),
    Stall,
}

/// Shared, changeable knobs plus request counters.
#[derive(Debug, Default)]
pub struct Knobs {
    settings: Mutex<KnobSettings>,
    served: Mutex<BTreeMap<String, u64>>,
}

impl Knobs {
    /// Knobs with these settings.
    pub fn new(settings: KnobSettings) -> Knobs {
        Knobs {
            settings: Mutex::new(settings),
            served: Mutex::default(),
        }
    }

    /// Replaces every setting.
    pub fn set(&self, settings: KnobSettings) {
        *lock(&self.settings) = settings;
    }

    /// The current settings.
    pub fn get(&self) -> KnobSettings {
        lock(&self.settings).clone()
    }

    /// Requests served on `route` (e.g. `"POST /v1/embeddings"`) since start.
    pub fn served(&self, route: &str) -> u64 {
        lock(&self.served).get(route).copied().unwrap_or(0)
    }

    /// All counters.
    pub fn stats(&self) -> BTreeMap<String, u64> {
        lock(&self.served).clone()
    }

    /// Counts something seen under `name` (`served(name)` reads it).
    pub(crate) fn count(&self, name: &str) {
        *lock(&self.served).entry(name.to_owned()).or_default() += 1;
    }

    /// Counts a request and decides its fault, consuming one of `fail_times`.
    pub(crate) fn admit(&self, route: &str) -> (Duration, Fault) {
        self.count(route);
        let mut s = lock(&self.settings);
        let latency = Duration::from_millis(s.latency_ms);
        if s.stall {
            return (latency, Fault::Stall);
        }
        let fault = match (s.fail_status, s.fail_times) {
            (None, _) => Fault::None,
            (Some(status), None) => Fault::Status(status),
            (Some(_), Some(0)) => Fault::None,
            (Some(status), Some(n)) => {
                s.fail_times = Some(n - 1);
                Fault::Status(status)
            }
        };
        (latency, fault)
    }
}

/// A poisoned lock only means another request panicked mid-update of plain data; carry on.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fail_times_counts_down_then_recovers() {
        let k = Knobs::new(KnobSettings {
            fail_status: Some(503),
            fail_times: Some(2),
            ..KnobSettings::default()
        });
        assert_eq!(k.admit("r").1, Fault::Status(503));
        assert_eq!(k.admit("r").1, Fault::Status(503));
        assert_eq!(k.admit("r").1, Fault::None);
        assert_eq!(k.served("r"), 3);
    }
}
