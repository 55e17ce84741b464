//! The generic video format (docs/api.md §2.8) and the store's task rows: the pricing of a valid
//! request, the record a client reads, and what a generic upstream's record means for the task.

use crate::tasks::record::{Observation, Pricing, Quote, TaskResult, error_parts, unix_seconds};
use std::time::Duration;
use tollgate_billing::{Usage, video_seconds};
use tollgate_gateway_core::media::{MediaLinks, Origin};
use tollgate_generic_tasks::{
    CreateVideoRequest, Validated, VideoError, VideoStatus, VideoTask, spec,
};
use tollgate_metering::{Basis, Measure};
use tollgate_store::{Task, TaskState};

/// The store's `format` of generic tasks.
pub const FORMAT: &str = "generic";

/// docs/api.md §8 rule 6: the hold is the requested seconds (already whole, within the model's range)
/// times the unit price.
pub fn quote(valid: &Validated) -> Quote {
    Quote {
        estimate: Usage::VideoSeconds(u64::from(valid.duration_seconds.max(1))),
        duration_seconds: valid.duration_seconds,
        resolution: valid.resolution.clone(),
        ratio: valid.aspect_ratio.clone(),
        reference_seconds: None,
    }
}

/// What is sent upstream for `request` once valid: the upstream model, the duration to make, the
/// resolution in the table's spelling (none where the model chooses its own) and the ratio.
pub fn upstream(
    mut request: CreateVideoRequest,
    upstream_model: &str,
    valid: &Validated,
) -> CreateVideoRequest {
    request.model = upstream_model.to_owned();
    request.duration = Some(f64::from(valid.duration_seconds));
    request.resolution = (valid.resolution != tollgate_generic_tasks::MODEL_DEFAULT)
        .then(|| valid.resolution.clone());
    request.aspect_ratio = valid.aspect_ratio.clone();
    request
}

/// The task record of docs/api.md §2.8 for a row.
pub fn record(task: &Task, links: &MediaLinks, origin: &Origin) -> VideoTask {
    let created = unix_seconds(task.created_at);
    let record = VideoTask::queued(&task.id, &task.model, created);
    match task.state {
        TaskState::Submitting | TaskState::Queued => record,
        TaskState::Running => record.in_progress(u8::try_from(task.progress).unwrap_or(0)),
        TaskState::Succeeded => {
            let result: TaskResult = task
                .result
                .as_ref()
                .and_then(|r| serde_json::from_value(r.clone()).ok())
                .unwrap_or_default();
            let (link, expires) =
                links.link(origin, &task.id, result.finished_at, &result.video_url);
            let upstream: Option<VideoTask> = serde_json::from_value(result.record).ok();
            let model = spec(&task.model).or_else(|| spec(&task.upstream_model));
            let mut done = match model {
                Some(model) => record.completed_for(model, link),
                None => record.completed(link, None),
            }
            .finished_at(result.finished_at);
            done.expires_at = expires;
            done.seconds = upstream.and_then(|u| u.seconds).or_else(|| {
                Pricing::of(task)
                    .ok()
                    .map(|p| p.duration_seconds.to_string())
            });
            done
        }
        TaskState::Failed => {
            let (code, message) = error_parts(task);
            record
                .failed(VideoError::new(code, message))
                .finished_at(unix_seconds(task.updated_at))
        }
    }
}

/// A video generated: charged, by docs/api.md §8 rule 6, the seconds the upstream `reported`
/// rounded up, at least 1 (the seconds asked for where it reported none), at the size held for
/// where the hold was priced by size; never more than the hold (`Observation::outcome`).
pub fn generated(
    finished: TaskResult,
    reported: Option<f64>,
    pricing: &Pricing,
    word: String,
) -> Observation {
    let (seconds, basis) = match reported.filter(|s| *s >= 0.0) {
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
    Observation::Succeeded {
        result: serde_json::to_value(finished).unwrap_or_default(),
        usage: Usage::VideoSeconds(seconds).sized_like(&pricing.estimate),
        basis,
        word,
    }
}

/// What a generic upstream's record of the task means.
pub fn observe(upstream: VideoTask, pricing: &Pricing, now: i64) -> Observation {
    let word = upstream.status.as_str().to_owned();
    match upstream.status {
        VideoStatus::Queued => Observation::Live {
            state: TaskState::Queued,
            word,
            progress: 0,
        },
        VideoStatus::InProgress => Observation::Live {
            state: TaskState::Running,
            word,
            progress: i64::from(upstream.progress.min(99)),
        },
        VideoStatus::Completed => {
            let Some(video_url) = upstream.url.clone().or_else(|| upstream.video_url.clone())
            else {
                return Observation::Failed {
                    error: serde_json::json!({"code": "upstream_no_video",
                        "message": "the upstream reported completion without a video; the task was refunded"}),
                    word: "failed".into(),
                };
            };
            let finished = TaskResult {
                record: serde_json::to_value(&upstream).unwrap_or_default(),
                video_url,
                finished_at: now,
            };
            generated(finished, upstream.seconds_value(), pricing, word)
        }
        VideoStatus::Failed => {
            let error = upstream
                .error
                .unwrap_or_else(|| VideoError::new("generation_failed", ""));
            let word = match error.code.as_str() {
                "cancelled" | "expired" => error.code.clone(),
                _ => word,
            };
            let message = if error.message.is_empty() {
                format!("the task ended {word} upstream; it was refunded")
            } else {
                error.message
            };
            Observation::Failed {
                error: serde_json::json!({"code": if error.code.is_empty() { "generation_failed".to_owned() } else { error.code }, "message": message}),
                word,
            }
        }
    }
}
