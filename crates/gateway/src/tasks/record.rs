//! What a task is, as data: its pricing snapshot, what an upstream record says of it, and the
//! pieces of its row a client sees — pure, so that the format translations (`translate::clip`,
//! `translate::video`) and the task machinery (`tasks`, `tasks::worker`) share them without
//! either importing the other.

use serde::{Deserialize, Serialize};
use std::time::Duration;
use tollgate_billing::{Amount, Tariff, Usage, video_seconds};
use tollgate_metering::{Basis, Bound, Measure};
use tollgate_store::{Outcome, PriceGroup, Settlement, Task, TaskState};
use tollgate_upstream::seams::tasks::{TaskFailure, TaskPhase, TaskReport, VideoAt};

/// What a valid task request asks to be held for, before any price applies: the format
/// translations (`translate::clip`, `translate::video`) work it out, and `tasks::submit` prices it
/// at the caller's tariff and version into the task's [`Pricing`].
#[derive(Debug, Clone, PartialEq)]
pub struct Quote {
    /// The usage held for.
    pub estimate: Usage,
    /// The seconds asked for (clip: the seconds held for).
    pub duration_seconds: u32,
    /// The resolution asked for, or the default.
    pub resolution: String,
    /// The aspect ratio asked for, or the default (`None`: the model's own choice).
    pub ratio: Option<String>,
    /// Clip, reference-video tier: the reference seconds held for (the series' maximum).
    pub reference_seconds: Option<u32>,
}

impl Quote {
    /// The size the task makes, (width, height): its resolution at its ratio; `None` where the
    /// model chooses either. A tariff priced by size prices the task at this size
    /// (`tollgate_billing::Usage::VideoSecondsAtSize`).
    pub fn size(&self) -> Option<(u32, u32)> {
        let ratio = self.ratio.as_deref()?;
        tollgate_openai_videos::Size::from_resolution(&self.resolution, ratio)
            .map(|s| (s.width, s.height))
    }
}

/// What is priced at submit and kept on the task row, so that a price change later never
/// reprices a task in flight (DESIGN §5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pricing {
    /// The model's tariff when the task was submitted.
    pub tariff: Tariff,
    /// The usage held for.
    pub estimate: Usage,
    /// The seconds asked for (clip: the seconds held for).
    pub duration_seconds: u32,
    /// The resolution asked for, or the default.
    pub resolution: String,
    /// The aspect ratio asked for, or the default (`None`: the model's own choice).
    pub ratio: Option<String>,
    /// Clip, reference-video tier: the reference seconds held for (the series' maximum; rows of
    /// earlier versions may say a measured length).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_seconds: Option<u32>,
    /// The price group `tariff` is scaled for (`None`: list prices), for the ledger row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_group: Option<PriceGroup>,
    /// The version of the model's price `tariff` is (`None` on rows of earlier releases).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_version: Option<i64>,
}

impl Pricing {
    /// The snapshot of `quote` at `tariff` (the caller's, scaled for `price_group`) of price
    /// version `price_version`.
    pub fn snapshot(
        quote: Quote,
        tariff: Tariff,
        price_group: Option<PriceGroup>,
        price_version: Option<i64>,
    ) -> Pricing {
        Pricing {
            tariff,
            estimate: quote.estimate,
            duration_seconds: quote.duration_seconds,
            resolution: quote.resolution,
            ratio: quote.ratio,
            reference_seconds: quote.reference_seconds,
            price_group,
            price_version,
        }
    }

    /// The price of `usage` at the submit-time tariff.
    pub fn charge(&self, usage: &Usage) -> Result<Amount, tollgate_billing::BillingError> {
        self.tariff.charge(usage)
    }

    /// Reads the snapshot of a task row.
    pub fn of(task: &Task) -> Result<Pricing, serde_json::Error> {
        serde_json::from_value(task.pricing.clone())
    }
}

/// What one poll of the upstream found.
#[derive(Debug, Clone, PartialEq)]
pub enum Observation {
    /// Still going.
    Live {
        /// Queued or running.
        state: TaskState,
        /// The upstream's own word.
        word: String,
        /// 0–100.
        progress: i64,
    },
    /// Finished with a result, billed at `usage`.
    Succeeded {
        /// What the row keeps (the upstream record, its video URL, the finish time).
        result: serde_json::Value,
        /// What to charge.
        usage: Usage,
        /// Whether the usage is the upstream's own figure.
        basis: Basis,
        /// The upstream's own word.
        word: String,
    },
    /// Failed, cancelled or expired: refunded in full.
    Failed {
        /// `{code, message}`.
        error: serde_json::Value,
        /// The upstream's own word (`failed`, `cancelled`, `expired`).
        word: String,
    },
}

impl Observation {
    /// The terminal outcome to record, priced at the task's snapshot, when there is one.
    pub fn outcome(&self, pricing: &Pricing) -> Option<Outcome> {
        match self {
            Observation::Live { .. } => None,
            Observation::Failed { error, .. } => Some(Outcome::Failed {
                error: error.clone(),
            }),
            Observation::Succeeded {
                result,
                usage,
                basis,
                ..
            } => {
                // Bounded settlement (`docs/decisions.md`): the hold is priced from what was
                // asked — the seconds, the resolution, the reference tier's maximum — so no
                // honest upstream figure exceeds it; more is charged at the hold, as an anomaly.
                let held = pricing.charge(&pricing.estimate).unwrap_or(Amount::ZERO);
                let quantity = serde_json::to_string(usage).unwrap_or_default();
                let bound = Bound::measured(held);
                let (actual, anomaly) = bound.charge(&pricing.tariff, usage, &quantity);
                let mut settlement = Settlement::new(actual)
                    .quantity(quantity)
                    .price_group(pricing.price_group.clone())
                    .priced_at(pricing.price_version, bound.amount, "what was asked")
                    .measured(basis.measured);
                if let Some(anomaly) = anomaly {
                    tracing::warn!(anomaly, "task settlement capped");
                    settlement = settlement.anomaly(anomaly);
                }
                if basis.estimated {
                    settlement = settlement.estimated();
                }
                if let Some(note) = &basis.note {
                    settlement = settlement.note(note.clone());
                }
                Some(Outcome::Succeeded {
                    result: result.clone(),
                    settlement: Box::new(settlement),
                })
            }
        }
    }
}

/// What one poll's report (`tollgate_upstream::seams::tasks::TaskReport`, read from the vendor's record
/// by the channel's adapter) means for a task priced at `pricing`, seen at Unix second `now` —
/// the same for every video format. A task reported finished without a video is refunded. One
/// that finished is charged in the unit its hold was priced in: video tokens as reported
/// (docs/api.md §8 rule 4), or the seconds reported rounded up, at least 1, at the size held for
/// where the hold was priced by size (rule 6); the estimate (the seconds asked for) where the
/// vendor reported none. Never more than the hold ([`Observation::outcome`]).
pub fn observe(report: TaskReport, pricing: &Pricing, now: i64) -> Observation {
    let TaskReport {
        phase,
        word,
        progress,
        video,
        seconds,
        tokens,
        failure,
        record,
    } = report;
    match phase {
        TaskPhase::Queued => Observation::Live {
            state: TaskState::Queued,
            word,
            progress: 0,
        },
        TaskPhase::Running => Observation::Live {
            state: TaskState::Running,
            word,
            progress: i64::from(progress.min(99)),
        },
        TaskPhase::Failed => {
            let failure = failure.unwrap_or_else(|| TaskFailure {
                code: "generation_failed".to_owned(),
                message: format!("the task ended {word} upstream; it was refunded"),
            });
            Observation::Failed {
                error: serde_json::json!({"code": failure.code, "message": failure.message}),
                word,
            }
        }
        TaskPhase::Succeeded => {
            let Some(video) = video else {
                return Observation::Failed {
                    error: serde_json::json!({"code": "upstream_no_video",
                        "message": "the upstream reported success without a video; the task was refunded"}),
                    word: "failed".into(),
                };
            };
            let video_url = match video {
                VideoAt::Link(url) => url,
                // Fetched from the channel with its key (`crate::video_file`): no public link.
                VideoAt::Channel => String::new(),
            };
            let (usage, basis) = made(seconds, tokens, pricing);
            let result = TaskResult {
                record,
                video_url,
                finished_at: now,
            };
            Observation::Succeeded {
                result: serde_json::to_value(result).unwrap_or_default(),
                usage,
                basis,
                word,
            }
        }
    }
}

/// What a finished task made, in the unit its hold was priced in, and how it is known.
fn made(seconds: Option<f64>, tokens: Option<u64>, pricing: &Pricing) -> (Usage, Basis) {
    if let Usage::VideoTokens { tier, .. } = pricing.estimate {
        return match tokens {
            Some(tokens) => (Usage::VideoTokens { tokens, tier }, Basis::default()),
            None => (
                pricing.estimate,
                Basis::local(
                    "upstream reported no usage; charged the estimate",
                    Measure::Requested,
                ),
            ),
        };
    }
    let (seconds, basis) = match seconds.filter(|s| *s >= 0.0) {
        Some(s) => (
            video_seconds(Duration::from_secs_f64(s.min(86_400.0))),
            Basis::default(),
        ),
        None => (
            u64::from(pricing.duration_seconds.max(1)),
            Basis::local(
                "upstream reported no length; charged the requested seconds",
                Measure::Requested,
            ),
        ),
    };
    (
        Usage::VideoSeconds(seconds).sized_like(&pricing.estimate),
        basis,
    )
}

/// The `code` and `message` of a failed row's error.
pub fn error_parts(task: &Task) -> (String, String) {
    let text = |name: &str| {
        task.error
            .as_ref()
            .and_then(|e| e.get(name))
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_owned()
    };
    (text("code"), text("message"))
}

/// Unix seconds of a row's Unix milliseconds.
pub fn unix_seconds(millis: i64) -> i64 {
    millis.div_euclid(1000)
}

/// What a succeeded task's row keeps in `result`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    /// The upstream's final record, as it sent it.
    pub record: serde_json::Value,
    /// The upstream's link to the video.
    pub video_url: String,
    /// When the gateway saw it finish, Unix seconds (links expire relative to it).
    pub finished_at: i64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use tollgate_billing::{ClipTier, Decimal};

    fn pricing(tariff: Tariff, estimate: Usage) -> Pricing {
        Pricing {
            tariff,
            estimate,
            duration_seconds: 5,
            resolution: "720p".into(),
            ratio: Some("16:9".into()),
            reference_seconds: None,
            price_group: None,
            price_version: None,
        }
    }

    fn by_seconds() -> Pricing {
        let tariff = Tariff::VideoSeconds {
            per_second: Decimal::new(10, 2),
            per_second_by_size: Default::default(),
        };
        pricing(tariff, Usage::VideoSeconds(5))
    }

    fn by_tokens() -> Pricing {
        let tariff = Tariff::VideoTokens {
            per_million_tokens: Decimal::new(15, 0),
            reference_video_ratio: Decimal::new(6, 1),
        };
        let estimate = Usage::VideoTokens {
            tokens: 100_000,
            tier: ClipTier::ReferenceVideo,
        };
        pricing(tariff, estimate)
    }

    fn report(phase: TaskPhase) -> TaskReport {
        TaskReport {
            phase,
            word: "w".into(),
            progress: 100,
            video: Some(VideoAt::Link("https://cdn.example/v.mp4".into())),
            seconds: None,
            tokens: None,
            failure: None,
            record: serde_json::json!({"id": "up-1"}),
        }
    }

    fn charged(observation: &Observation) -> (Usage, bool) {
        match observation {
            Observation::Succeeded { usage, basis, .. } => (*usage, basis.estimated),
            other => panic!("not succeeded: {other:?}"),
        }
    }

    #[test]
    fn a_finished_task_is_charged_in_the_unit_its_hold_was_priced_in() {
        // Seconds: the reported length rounded up; the requested seconds where none is reported.
        let seconds = TaskReport {
            seconds: Some(4.2),
            tokens: Some(999),
            ..report(TaskPhase::Succeeded)
        };
        assert_eq!(
            charged(&observe(seconds, &by_seconds(), 7)),
            (Usage::VideoSeconds(5), false)
        );
        let (usage, estimated) = charged(&observe(report(TaskPhase::Succeeded), &by_seconds(), 7));
        assert_eq!((usage, estimated), (Usage::VideoSeconds(5), true));
        // Tokens: the reported tokens at the tier held for; the estimate where none are reported.
        let tokens = TaskReport {
            seconds: Some(4.2),
            tokens: Some(80_000),
            ..report(TaskPhase::Succeeded)
        };
        let tier = ClipTier::ReferenceVideo;
        assert_eq!(
            charged(&observe(tokens, &by_tokens(), 7)),
            (
                Usage::VideoTokens {
                    tokens: 80_000,
                    tier
                },
                false
            )
        );
        let (usage, estimated) = charged(&observe(report(TaskPhase::Succeeded), &by_tokens(), 7));
        assert_eq!((usage, estimated), (by_tokens().estimate, true));
    }

    #[test]
    fn the_row_keeps_the_vendors_record_and_where_its_video_is() {
        let Observation::Succeeded { result, .. } =
            observe(report(TaskPhase::Succeeded), &by_seconds(), 7)
        else {
            panic!("not succeeded");
        };
        let result: TaskResult = serde_json::from_value(result).unwrap();
        assert_eq!(result.record, serde_json::json!({"id": "up-1"}));
        assert_eq!(result.video_url, "https://cdn.example/v.mp4");
        assert_eq!(result.finished_at, 7);
        let from_channel = TaskReport {
            video: Some(VideoAt::Channel),
            ..report(TaskPhase::Succeeded)
        };
        let Observation::Succeeded { result, .. } = observe(from_channel, &by_seconds(), 7) else {
            panic!("not succeeded");
        };
        let result: TaskResult = serde_json::from_value(result).unwrap();
        assert_eq!(result.video_url, "");
    }

    #[test]
    fn success_without_a_video_and_failure_are_refunded() {
        let no_video = TaskReport {
            video: None,
            ..report(TaskPhase::Succeeded)
        };
        let observed = observe(no_video, &by_tokens(), 7);
        assert!(
            matches!(&observed, Observation::Failed { error, .. } if error["code"] == "upstream_no_video")
        );
        assert!(matches!(
            observed.outcome(&by_tokens()),
            Some(Outcome::Failed { .. })
        ));
        let failed = TaskReport {
            failure: Some(TaskFailure {
                code: "content_policy".into(),
                message: "no".into(),
            }),
            ..report(TaskPhase::Failed)
        };
        assert_eq!(
            observe(failed, &by_seconds(), 7),
            Observation::Failed {
                error: serde_json::json!({"code": "content_policy", "message": "no"}),
                word: "w".into()
            }
        );
        let said_nothing = observe(report(TaskPhase::Failed), &by_seconds(), 7);
        assert!(
            matches!(&said_nothing, Observation::Failed { error, .. } if error["code"] == "generation_failed")
        );
    }

    #[test]
    fn a_live_task_is_never_shown_done() {
        let running = observe(report(TaskPhase::Running), &by_seconds(), 7);
        assert_eq!(
            running,
            Observation::Live {
                state: TaskState::Running,
                word: "w".into(),
                progress: 99
            }
        );
        let queued = observe(report(TaskPhase::Queued), &by_seconds(), 7);
        assert!(matches!(
            queued,
            Observation::Live {
                state: TaskState::Queued,
                progress: 0,
                ..
            }
        ));
    }
}
