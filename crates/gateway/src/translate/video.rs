//! The generic video format (docs/api.md §2.8) and the store's task rows: the pricing of a valid
//! request and the record a client reads. What a generic upstream's record means is its
//! adapter's (`tollgate_upstream::adapters::generic_video::report`).

use crate::tasks::record::{Pricing, Quote, TaskResult, error_parts, unix_seconds};
use tollgate_billing::Usage;
use tollgate_generic_tasks::{CreateVideoRequest, Validated, VideoError, VideoTask, spec};
use tollgate_settings::media::{MediaLinks, Origin};
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
