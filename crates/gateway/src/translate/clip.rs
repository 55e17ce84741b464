//! The clip format (Ark-style tasks, docs/api.md §2.7) and the store's task rows: the pricing of a valid
//! request, the record a client reads and the list filter. What an Ark upstream's record means
//! is its adapter's (`tollgate_upstream::adapters::ark::report`).

use crate::tasks::record::{Pricing, Quote, TaskResult, error_parts, unix_seconds};
use tollgate_billing::{ClipTier, Usage, clip_frame_size, clip_token_estimate_with_reference};
use tollgate_clip_tasks::{ListQuery, Task as ClipTask, TaskError, TaskStatus, Tier, Validated};
use tollgate_exchange::errors::ApiError;
use tollgate_settings::media::{MediaLinks, Origin};
use tollgate_store::{Task, TaskFilter, TaskState};

/// docs/api.md §8 rules 4–5: the hold of a clip task. The estimate is
/// `width × height × (24 × seconds + 1) / 1024` tokens at the requested resolution and ratio; the
/// reference-video tier adds the series' maximum reference length (15 s for 2.0, 30 s for 2.5)
/// and is priced at the tariff's reference ratio. The length the gateway reads from a reference
/// video's header only refuses one that is too long: the file is the client's, and it can serve
/// the gateway's probe one header and the vendor another, so a bound never comes from it
/// (`docs/decisions.md`, "Bounded settlement").
pub fn quote(valid: &Validated) -> Result<Quote, ApiError> {
    let size = clip_frame_size(valid.resolution, valid.ratio).ok_or_else(|| {
        ApiError::internal(
            "pricing the task",
            format!("no frame size for {} {}", valid.resolution, valid.ratio),
        )
    })?;
    let (tier, reference_seconds) = match valid.tier {
        Tier::Standard => (ClipTier::Standard, None),
        Tier::ReferenceVideo => (
            ClipTier::ReferenceVideo,
            Some(valid.hold_reference_seconds()),
        ),
    };
    let tokens = clip_token_estimate_with_reference(
        size,
        valid.duration_seconds,
        reference_seconds.unwrap_or(0),
    );
    Ok(Quote {
        estimate: Usage::VideoTokens { tokens, tier },
        duration_seconds: valid.duration_seconds,
        resolution: valid.resolution.to_owned(),
        ratio: Some(valid.ratio.to_owned()),
        reference_seconds,
    })
}

/// The status a client sees: `submitting` is still `queued`; a failed task says `cancelled` or
/// `expired` when that is how it ended.
pub fn public_status(task: &Task) -> TaskStatus {
    match task.state {
        TaskState::Submitting | TaskState::Queued => TaskStatus::Queued,
        TaskState::Running => TaskStatus::Running,
        TaskState::Succeeded => TaskStatus::Succeeded,
        TaskState::Failed => match task.upstream_status.as_deref() {
            Some("cancelled") => TaskStatus::Cancelled,
            Some("expired") => TaskStatus::Expired,
            _ => TaskStatus::Failed,
        },
    }
}

/// The task record of docs/api.md §2.7 for a row: our id and public model, the requested parameters,
/// and on success the upstream's record with the gateway's link in `content.video_url`.
pub fn record(task: &Task, links: &MediaLinks, origin: &Origin) -> ClipTask {
    let status = public_status(task);
    let finished: Option<TaskResult> = task
        .result
        .as_ref()
        .and_then(|r| serde_json::from_value(r.clone()).ok());
    let mut record = match &finished {
        Some(result) if status == TaskStatus::Succeeded => {
            let mut record: ClipTask =
                serde_json::from_value(result.record.clone()).unwrap_or_default();
            let (link, _) = links.link(origin, &task.id, result.finished_at, &result.video_url);
            record
                .content
                .get_or_insert_with(Default::default)
                .video_url = Some(link);
            record
        }
        _ => ClipTask::default(),
    };
    record.id = task.id.clone();
    record.model = task.model.clone();
    record.status = status;
    record.created_at = Some(unix_seconds(task.created_at));
    record.updated_at = Some(unix_seconds(task.updated_at));
    if let Ok(pricing) = Pricing::of(task) {
        record
            .duration
            .get_or_insert(i64::from(pricing.duration_seconds));
        record.resolution.get_or_insert(pricing.resolution);
        if let Some(ratio) = pricing.ratio {
            record.ratio.get_or_insert(ratio);
        }
    }
    if task.state == TaskState::Failed {
        let (code, message) = error_parts(task);
        record.error = Some(TaskError {
            code,
            message,
            extra: Default::default(),
        });
        record.content = None;
        record.usage = None;
    }
    record
}

/// The store filter of a list query: the caller's clip tasks, by status, ids and model
/// (`model` already resolved from an alias to the public name).
pub fn list_filter(query: &ListQuery, model: Option<String>) -> TaskFilter {
    let mut filter = TaskFilter {
        ids: query.task_ids.clone(),
        model,
        format: Some(FORMAT.to_owned()),
        ..TaskFilter::default()
    };
    match &query.status {
        None => {}
        Some(TaskStatus::Queued) => filter.states = vec![TaskState::Submitting, TaskState::Queued],
        Some(TaskStatus::Running) => filter.states = vec![TaskState::Running],
        Some(TaskStatus::Succeeded) => filter.states = vec![TaskState::Succeeded],
        Some(TaskStatus::Failed) => {
            filter.states = vec![TaskState::Failed];
            filter.not_upstream_statuses = vec!["cancelled".into(), "expired".into()];
        }
        Some(TaskStatus::Cancelled) => {
            filter.states = vec![TaskState::Failed];
            filter.upstream_statuses = vec!["cancelled".into()];
        }
        Some(TaskStatus::Expired) => {
            filter.states = vec![TaskState::Failed];
            filter.upstream_statuses = vec!["expired".into()];
        }
        // Whatever an upstream called it, as last seen.
        Some(TaskStatus::Unknown(word)) => filter.upstream_statuses = vec![word.clone()],
    }
    filter
}

/// The store's `format` of clip tasks.
pub const FORMAT: &str = "clip";
