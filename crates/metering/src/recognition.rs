//! A recognition stream's seconds (docs/api.md §8 rule 2): the duration the upstream reported
//! with its last piece, rounded up; else the seconds the gateway probed in the uploaded file,
//! marked estimated. A client that leaves early still pays for the whole file: the upstream
//! transcribes (and bills) all of it.

use crate::{Basis, Measure, StreamEnd};
use std::time::Duration;
use tollgate_billing::audio_seconds;

/// Seconds billed for a reported duration (rounded up); `None` for one that is not a duration
/// (negative, not finite).
pub fn billed_seconds(seconds: f64) -> Option<u64> {
    (seconds.is_finite() && seconds >= 0.0)
        .then(|| audio_seconds(Duration::from_secs_f64(seconds.min(1e9))))
}

/// What a recognition stream is charged, in seconds: `reported` is the duration the upstream's
/// last piece gave, `probed` the gateway's reading of the file.
pub fn seconds(end: &StreamEnd, reported: Option<f64>, probed: u64) -> (u64, Basis) {
    let reported = reported.and_then(billed_seconds);
    let (seconds, mut basis) = Basis::reported_or_local(reported, probed, Measure::Probe);
    if reported.is_none() {
        basis.note = Some(match end {
            StreamEnd::Cut(why) => {
                format!("partial: upstream cut ({why}); charged the probed duration")
            }
            _ => {
                "partial: the stream ended without its duration; charged the probed duration".into()
            }
        });
    } else if matches!(end, StreamEnd::ClientGone) {
        basis.note = Some("client disconnected before the end of the stream".into());
    }
    (seconds, basis)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reported_duration_rounds_up_and_the_probe_backs_it() {
        assert_eq!(
            seconds(&StreamEnd::Complete, Some(2.1), 9),
            (3, Basis::default())
        );
        let (s, basis) = seconds(&StreamEnd::Cut("reset".into()), None, 9);
        assert_eq!(s, 9);
        assert!(basis.estimated);
        assert!(basis.note.unwrap().contains("reset"));
        // A lying upstream's duration is not a duration: the probe stands.
        assert_eq!(seconds(&StreamEnd::Complete, Some(f64::NAN), 4).0, 4);
        assert_eq!(seconds(&StreamEnd::Complete, Some(-1.0), 4).0, 4);
        let (s, basis) = seconds(&StreamEnd::ClientGone, Some(3.0), 9);
        assert_eq!(s, 3);
        assert!(!basis.estimated);
    }
}
