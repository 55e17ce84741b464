//! The OpenAI Videos API (docs/api.md §2.8.1) on both video families: a create body made into
//! the generic request its model's row of the table validates, or into the clip request of its
//! series (the prompt its text content); and a task row read back as a `Video`. The money is
//! each family's own (`super::video`: seconds generated; `super::clip`: tokens). What an
//! `openai-videos` channel's record means is its adapter's (`tollgate_upstream::adapters::
//! openai_videos::report`).

use crate::tasks::record::{Pricing, TaskResult, error_parts, unix_seconds};
use tollgate_exchange::errors::ApiError;
use tollgate_generic_tasks::{CreateVideoRequest, FieldError, MODEL_DEFAULT, ModelSpec, Validated};
use tollgate_openai_videos::{Checked, Size, Video, VideoError};
use tollgate_settings::media::{MediaLinks, Origin};
use tollgate_store::{Task, TaskState};

/// The store's `format` of the tasks made through `/v1/videos`: readable only there.
pub const FORMAT: &str = "openai";

/// The generic request `checked` stands for on `spec`'s model: `seconds` is the duration,
/// `size` the resolution (its shorter side) and the aspect ratio; and the values to send and
/// bill, or the field the model cannot do, named as the client wrote it.
pub fn validate(checked: &Checked, spec: &ModelSpec) -> Result<Validated, ApiError> {
    let mut request = CreateVideoRequest::new(&checked.model, &checked.prompt);
    request.duration = checked.seconds.map(f64::from);
    if let Some(size) = checked.size {
        request.resolution = Some(size.resolution());
        request.aspect_ratio = Some(size.aspect_ratio());
    }
    tollgate_generic_tasks::validate(&request, spec).map_err(|e| openai_field(e, checked, spec))
}

/// A generic field error in the client's terms: `duration` is `seconds`; `resolution` and
/// `aspect_ratio` are `size`, with the sizes the model makes.
fn openai_field(e: FieldError, checked: &Checked, spec: &ModelSpec) -> ApiError {
    match e.field.as_str() {
        "duration" => seconds_refused(spec.id, checked, &spec.duration, spec.durations),
        "resolution" | "aspect_ratio" => {
            size_refused(spec.id, checked, &Size::names_of(spec.size_pairs()))
        }
        _ => ApiError::from(e),
    }
}

/// `seconds` refused: what `model` makes instead (the lengths `only`, or any in `range`).
fn seconds_refused(
    model: &str,
    checked: &Checked,
    range: &std::ops::RangeInclusive<u32>,
    only: &[u32],
) -> ApiError {
    refused_length(
        model,
        "seconds",
        checked.seconds.unwrap_or_default(),
        range,
        only,
    )
}

/// A length of `seconds` refused on `model`, asked in `param` (`seconds`, or `prompt` by its
/// inline `--dur`).
fn refused_length(
    model: &str,
    param: &str,
    seconds: impl std::fmt::Display,
    range: &std::ops::RangeInclusive<u32>,
    only: &[u32],
) -> ApiError {
    let makes = match only {
        [] => format!("{} to {}", range.start(), range.end()),
        lengths => {
            let lengths: Vec<String> = lengths.iter().map(u32::to_string).collect();
            lengths.join(", ")
        }
    };
    ApiError::invalid(
        param,
        "invalid_value",
        format!("Invalid '{param}': {model} cannot make {seconds} seconds; it makes {makes}."),
    )
}

/// `size` refused: the sizes `model` makes (none: it chooses its own).
fn size_refused(model: &str, checked: &Checked, offered: &[String]) -> ApiError {
    let asked = checked.size.map(|s| s.to_string()).unwrap_or_default();
    let message = if offered.is_empty() {
        format!("Invalid 'size': {model} chooses its own size; leave 'size' out.")
    } else {
        format!(
            "Invalid 'size': {model} cannot make {asked}; it makes {}.",
            offered.join(", ")
        )
    };
    ApiError::invalid("size", "invalid_value", message)
}

/// The clip request `checked` stands for on the clip model `model` (its series' id): the prompt
/// as its text item, `reference` (an image URL) as its first frame, `seconds` its duration,
/// `size` its resolution and ratio — and the prompt's inline flags (`--dur 12 --rs 1080p`)
/// lifted into the fields they stand for, as the clip API lifts them
/// (`tollgate_clip_tasks::lift_inline_flags`): the vendor obeys the text, so the hold must cover
/// what it says. A flag that contradicts `seconds` or `size` is refused naming `prompt`.
pub fn clip_request(
    checked: &Checked,
    model: &str,
    reference: Option<&str>,
) -> Result<tollgate_clip_tasks::CreateTaskRequest, ApiError> {
    let mut content = vec![tollgate_clip_tasks::ContentItem::text(&checked.prompt)];
    if let Some(url) = reference {
        content.push(tollgate_clip_tasks::ContentItem::image(
            url,
            Some(tollgate_clip_tasks::request::ImageRole::FirstFrame),
        ));
    }
    let mut request = tollgate_clip_tasks::CreateTaskRequest::new(model, content);
    // The flags first, alone: a malformed one, or one given twice differently, is the
    // prompt's own fault.
    tollgate_clip_tasks::lift_inline_flags(&mut request).map_err(|e| {
        let message = e.message.replace("content[0].text", "prompt");
        ApiError::invalid("prompt", e.rule.code(), message)
    })?;
    if let Some(seconds) = checked.seconds {
        let seconds = i64::from(seconds);
        match request.duration {
            Some(inline) if inline != seconds => {
                return Err(contradiction("--dur", inline, "seconds", seconds));
            }
            _ => request.duration = Some(seconds),
        }
    }
    if let Some(size) = checked.size {
        let (resolution, ratio) = (size.resolution(), size.aspect_ratio());
        for (flag, inline, given) in [
            ("--rs", &mut request.resolution, resolution),
            ("--rt", &mut request.ratio, ratio),
        ] {
            match inline {
                Some(inline) if *inline != given => {
                    return Err(contradiction(flag, inline, "size", size));
                }
                _ => *inline = Some(given),
            }
        }
    }
    Ok(request)
}

/// An inline flag of the prompt that says other than the field beside it.
fn contradiction(
    flag: &str,
    inline: impl std::fmt::Display,
    field: &str,
    given: impl std::fmt::Display,
) -> ApiError {
    ApiError::invalid(
        "prompt",
        "conflicting_value",
        format!(
            "Invalid 'prompt': its inline flag {flag} {inline} contradicts '{field}': {given}; give it once"
        ),
    )
}

/// A clip request's validation, its field errors in the client's terms (as [`validate`]'s): a
/// length or size the prompt's inline flags asked for is refused naming `prompt`.
pub fn validate_clip(
    checked: &Checked,
    request: &tollgate_clip_tasks::CreateTaskRequest,
    trusted_hosts: &[String],
) -> Result<tollgate_clip_tasks::Validated, ApiError> {
    use tollgate_clip_tasks::series::{RATIOS, RESOLUTIONS};
    tollgate_clip_tasks::validate_trusting(request, trusted_hosts).map_err(|e| {
        match e.field.as_str() {
            "duration" => {
                let range = tollgate_clip_tasks::series(&request.model)
                    .map_or(4..=15, |s| s.duration_range());
                match (checked.seconds, request.duration) {
                    (None, Some(inline)) => refused_length(
                        &request.model,
                        "prompt",
                        format!("{inline} (its --dur)"),
                        &range,
                        &[],
                    ),
                    _ => seconds_refused(&request.model, checked, &range, &[]),
                }
            }
            "resolution" | "ratio" if checked.size.is_none() => ApiError::invalid(
                "prompt",
                "invalid_value",
                format!(
                    "Invalid 'prompt': its inline flags ask {} for a {} video at {}, which it does not make",
                    request.model,
                    request.resolution.as_deref().unwrap_or("default"),
                    request.ratio.as_deref().unwrap_or("the default ratio"),
                ),
            ),
            "resolution" | "ratio" => {
                let pairs = RESOLUTIONS
                    .iter()
                    .flat_map(|r| RATIOS.iter().map(move |q| (*r, *q)));
                size_refused(&request.model, checked, &Size::names_of(pairs))
            }
            _ => as_input_reference(ApiError::from(e)),
        }
    })
}

/// An error about the clip request's image item (`content[1]…`) named as the client's field,
/// `input_reference`.
pub fn as_input_reference(mut e: ApiError) -> ApiError {
    if e.param
        .as_deref()
        .is_some_and(|p| p.starts_with("content[1]"))
    {
        e.param = Some("input_reference".into());
    }
    e
}

/// The size a task makes, `""` where its model chooses.
fn size_of(resolution: &str, ratio: Option<&str>) -> String {
    if resolution == MODEL_DEFAULT {
        return String::new();
    }
    Size::from_resolution(resolution, ratio.unwrap_or("16:9"))
        .map(|s| s.to_string())
        .unwrap_or_default()
}

/// The `Video` a row is; `expires_at` as its signed links say (`None` in `direct` mode).
pub fn record(task: &Task, links: &MediaLinks, origin: &Origin) -> Video {
    let pricing = Pricing::of(task).ok();
    let seconds = pricing
        .as_ref()
        .map(|p| p.duration_seconds.to_string())
        .unwrap_or_default();
    let size = pricing
        .as_ref()
        .map(|p| size_of(&p.resolution, p.ratio.as_deref()))
        .unwrap_or_default();
    let mut video = Video::queued(
        &task.id,
        &task.model,
        unix_seconds(task.created_at),
        seconds,
        size,
    );
    video.prompt = task.request["prompt"].as_str().map(str::to_owned);
    video.remixed_from_video_id = task.request["remix_of"].as_str().map(str::to_owned);
    match task.state {
        TaskState::Submitting | TaskState::Queued => video,
        TaskState::Running => video.in_progress(u8::try_from(task.progress).unwrap_or(0)),
        TaskState::Succeeded => {
            let (finished_at, expires) = match result(task) {
                Some(result) => (
                    result.finished_at,
                    links
                        .link(origin, &task.id, result.finished_at, &result.video_url)
                        .1,
                ),
                None => (unix_seconds(task.updated_at), None),
            };
            video.completed(finished_at, expires)
        }
        TaskState::Failed => {
            let (code, message) = error_parts(task);
            video.failed(unix_seconds(task.updated_at), VideoError { code, message })
        }
    }
}

/// A finished task's result (its video's upstream URL and when it finished).
pub fn result(task: &Task) -> Option<TaskResult> {
    task.result
        .as_ref()
        .and_then(|r| serde_json::from_value(r.clone()).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tollgate_generic_tasks::spec;
    use tollgate_openai_videos::CreateVideoBody;

    fn checked(json: &str) -> Checked {
        serde_json::from_str::<CreateVideoBody>(json)
            .unwrap()
            .check()
            .unwrap()
    }

    #[test]
    fn seconds_and_size_on_the_generic_table() {
        let wave = spec("wave-3-0-video").unwrap();
        let valid = validate(
            &checked(r#"{"model":"wave-3-0-video","prompt":"x","seconds":"8","size":"854x480"}"#),
            wave,
        )
        .unwrap();
        assert_eq!(
            (valid.duration_seconds, valid.resolution.as_str()),
            (8, "480p")
        );
        assert_eq!(valid.aspect_ratio.as_deref(), Some("16:9"));
        // The model's defaults where the body gives none.
        let valid = validate(&checked(r#"{"model":"wave-3-0-video","prompt":"x"}"#), wave).unwrap();
        assert_eq!(
            size_of(&valid.resolution, valid.aspect_ratio.as_deref()),
            "854x480"
        );
        assert_eq!(Size::names_of(wave.size_pairs()), ["854x480"]);
        let horse = spec("horse-1.1-t2v").unwrap();
        assert_eq!(
            Size::names_of(horse.size_pairs()),
            [
                "1920x1080",
                "1080x1920",
                "1080x1080",
                "1280x720",
                "720x1280",
                "720x720"
            ]
        );
    }

    #[test]
    fn what_a_model_cannot_do_names_the_clients_field() {
        let wave = spec("wave-3-0-video").unwrap();
        let refused = |json: &str| {
            let e = validate(&checked(json), wave).unwrap_err();
            (e.param.clone().unwrap_or_default(), e.message.clone())
        };
        let (param, message) =
            refused(r#"{"model":"wave-3-0-video","prompt":"x","size":"1280x720"}"#);
        assert_eq!(param, "size");
        assert!(message.contains("it makes 854x480"), "{message}");
        let (param, message) = refused(r#"{"model":"wave-3-0-video","prompt":"x","seconds":"60"}"#);
        assert_eq!(param, "seconds");
        assert!(message.contains("2 to 30"), "{message}");
        let sora = spec("sora-2-pro").unwrap();
        let refused = |json: &str| {
            let e = validate(&checked(json), sora).unwrap_err();
            (e.param.clone().unwrap_or_default(), e.message.clone())
        };
        let (param, message) = refused(r#"{"model":"sora-2-pro","prompt":"x","seconds":"6"}"#);
        assert_eq!(param, "seconds");
        assert!(message.contains("it makes 4, 8, 12."), "{message}");
        let (param, message) = refused(r#"{"model":"sora-2-pro","prompt":"x","size":"1820x1024"}"#);
        assert_eq!(param, "size");
        assert!(
            message.contains("it makes 720x1280, 1280x720, 1024x1792, 1792x1024."),
            "{message}"
        );
        let imagine = spec("imagine-video").unwrap();
        let e = validate(
            &checked(r#"{"model":"imagine-video","prompt":"x","size":"1280x720"}"#),
            imagine,
        )
        .unwrap_err();
        assert!(e.message.contains("chooses its own size"), "{}", e.message);
    }
}
