//! The rules of a create request (docs/api.md §2.7, §8) and what the caller needs to bill it (docs/api.md §8
//! rules 4–5).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{FieldError, Rule};
use crate::request::{
    CONTENT_TYPES, ContentItem, CreateTaskRequest, ImageRole, ROLE_REFERENCE_AUDIO,
    ROLE_REFERENCE_VIDEO,
};
use crate::series::{
    ClipSeries, DEFAULT_DURATION, DURATION_MODEL_CHOOSES, MAX_REFERENCE_IMAGES, RATIOS,
    RESOLUTIONS, series,
};
use tollgate_media_url::{UrlProblem, check_audio_url, check_image_url, check_video_url, url_host};

/// The price tier of a clip task (docs/api.md §8 rule 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// Text only, first/last frames, reference images, reference audio: the main unit price.
    Standard,
    /// The content has a reference video that is submitted upstream: about 60 % of the standard
    /// price per token, the reference video's seconds counted, and an extra hold for the
    /// series' maximum reference length.
    ReferenceVideo,
}

/// What a valid request asks for, as the gateway needs it to hold and bill (docs/api.md §8 rules 4–5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Validated {
    /// The series, from the model id.
    pub series: ClipSeries,
    /// The seconds to hold for: `duration` when given; with `duration: -1` (the model
    /// chooses) the series' longest duration; without `duration`, `frames` rounded up to whole
    /// seconds at 24 fps and kept within the series' range; otherwise [`DEFAULT_DURATION`].
    pub duration_seconds: u32,
    /// Whether the request asked the model to choose the duration (`duration: -1`).
    pub duration_chosen_by_model: bool,
    /// `resolution` or its default, one of [`RESOLUTIONS`].
    pub resolution: &'static str,
    /// `ratio` or its default, one of [`RATIOS`].
    pub ratio: &'static str,
    /// `generate_audio` or its default.
    pub generate_audio: bool,
    /// The number of `video_url` items.
    pub reference_videos: u32,
    /// The number of images with the role `reference_image`.
    pub reference_images: u32,
    /// The number of `audio_url` items.
    pub reference_audios: u32,
    /// Whether there is a first or last frame (an image with one of those roles, or none).
    pub has_frames: bool,
    /// The price tier.
    pub tier: Tier,
}

impl Validated {
    /// docs/api.md §8 rule 5: the reference seconds to hold for at submission, the series' maximum for
    /// the reference-video tier (15 s for 2.0, 30 s for 2.5) and 0 otherwise. The gateway may
    /// hold for less when it has read the videos' lengths ([`validate_reference_seconds`]).
    pub fn hold_reference_seconds(&self) -> u32 {
        match self.tier {
            Tier::Standard => 0,
            Tier::ReferenceVideo => self.series.max_reference_seconds(),
        }
    }
}

/// Checks a create request and returns the first broken rule, in field order, each naming its
/// field (`content[i]...` for items, in item order):
///
/// | Field | Rule | [`Rule`] |
/// |---|---|---|
/// | `model` | must not be empty | [`Required`](Rule::Required) |
/// | `model` | docs/api.md §2.7/§9: must name series 2.0 or 2.5 ([`series`]) | [`UnsupportedValue`](Rule::UnsupportedValue) |
/// | `content` | must not be empty | [`Required`](Rule::Required) |
/// | `content[i].type` | one of `text`, `image_url`, `video_url`, `audio_url`, `draft_task` | [`UnsupportedValue`](Rule::UnsupportedValue) |
/// | `content[i]...` | an item of a known type must have its fields with the right JSON types | [`Malformed`](Rule::Malformed) |
/// | `content[i].text` | must not be empty | [`Required`](Rule::Required) |
/// | `content[i].image_url.url` | docs/api.md §2.7 rule 4: a public `http(s)` URL or bounded inline image ([`check_image_url`]) | [`Required`](Rule::Required), [`InvalidUrl`](Rule::InvalidUrl), [`NotPublic`](Rule::NotPublic), [`TooLarge`](Rule::TooLarge) |
/// | `content[i].role` | docs/api.md §2.7 rule 1: first/last frames (an image without a role is a first frame) not with reference images | [`NotCombinable`](Rule::NotCombinable) |
/// | `content[i].role` | at most one first frame and one last frame | [`TooMany`](Rule::TooMany) |
/// | `content[i]` | docs/api.md §2.7 rule 2: at most [`MAX_REFERENCE_IMAGES`] reference images | [`TooMany`](Rule::TooMany) |
/// | `content[i].video_url.url` | docs/api.md §2.7 rule 4: not empty, a public `http(s)` URL ([`check_video_url`]) | [`Required`](Rule::Required), [`InvalidUrl`](Rule::InvalidUrl), [`NotPublic`](Rule::NotPublic) |
/// | `content[i].role` | a video's role is `reference_video`, an audio's `reference_audio` | [`UnsupportedValue`](Rule::UnsupportedValue) |
/// | `content[i]` | docs/api.md §2.7 rule 3: at most 3 (2.0) or 10 (2.5) reference videos | [`TooMany`](Rule::TooMany) |
/// | `content[i].audio_url.url` | a public `http(s)` URL or bounded inline audio ([`check_audio_url`]) | as for images |
/// | `content[i].draft_task.id` | must not be empty | [`Required`](Rule::Required) |
/// | `content` | at least one text, image or draft task | [`Required`](Rule::Required) |
/// | `content` | wire-formats §5.1: reference audio needs an image or a video | [`Required`](Rule::Required) |
/// | `duration` | docs/api.md §2.7: within the series' range, or `-1` (the model chooses) | [`OutOfRange`](Rule::OutOfRange) |
/// | `resolution` | docs/api.md §2.7: one of [`RESOLUTIONS`] | [`UnsupportedValue`](Rule::UnsupportedValue) |
/// | `ratio` | docs/api.md §2.7: one of [`RATIOS`] | [`UnsupportedValue`](Rule::UnsupportedValue) |
///
/// The total length of the reference videos (docs/api.md §2.7 rule 3) cannot be known from the request;
/// the gateway checks it with [`validate_reference_seconds`] when it could read the lengths, and
/// otherwise the upstream decides and the hold covers the maximum
/// ([`Validated::hold_reference_seconds`]). The fields kept in `extra` are not checked: the
/// upstream has the last word on them.
///
/// ```
/// use tollgate_clip_tasks::validate::{validate, Tier};
/// use tollgate_clip_tasks::{ContentItem, CreateTaskRequest, ImageRole, Rule};
///
/// let mut request = CreateTaskRequest::new(
///     "clipgen-cn-2.0-260128",
///     vec![ContentItem::text("A fox in the snow"), ContentItem::video("https://example.com/ref.mp4")],
/// );
/// let ok = validate(&request)?;
/// assert_eq!((ok.duration_seconds, ok.resolution, ok.tier), (5, "720p", Tier::ReferenceVideo));
/// assert_eq!(ok.hold_reference_seconds(), 15);
///
/// request.content.push(ContentItem::image("https://example.com/a.png", Some(ImageRole::FirstFrame)));
/// request.content.push(ContentItem::image("https://example.com/b.png", Some(ImageRole::ReferenceImage)));
/// let err = validate(&request).unwrap_err();
/// assert_eq!((err.field.as_str(), err.rule), ("content[3].role", Rule::NotCombinable));
/// # Ok::<(), tollgate_clip_tasks::FieldError>(())
/// ```
pub fn validate(req: &CreateTaskRequest) -> Result<Validated, FieldError> {
    validate_trusting(req, &[])
}

/// [`validate()`], accepting URLs whose host is one of `trusted_hosts` (lower case) even when it
/// is not public — an operator's internal CDN that the upstream can reach. Every other rule
/// holds for them.
///
/// ```
/// use tollgate_clip_tasks::{validate, validate_trusting, ContentItem, CreateTaskRequest};
///
/// let request = CreateTaskRequest::new(
///     "clipgen-cn-2.0-260128",
///     vec![ContentItem::text("A kite"), ContentItem::video("http://10.0.0.8:9000/ref.mp4")],
/// );
/// assert!(validate(&request).is_err());
/// assert!(validate_trusting(&request, &["10.0.0.8".to_owned()]).is_ok());
/// ```
pub fn validate_trusting(
    req: &CreateTaskRequest,
    trusted_hosts: &[String],
) -> Result<Validated, FieldError> {
    if req.model.is_empty() {
        return Err(FieldError::new(
            "model",
            Rule::Required,
            "'model' is required and must not be empty",
        ));
    }
    let Some(series) = series(&req.model) else {
        return Err(FieldError::new(
            "model",
            Rule::UnsupportedValue,
            format!(
                "'model' {:?} is not a model of the clip family's 2.0 or 2.5 series",
                req.model
            ),
        ));
    };
    let counts = validate_content(series, &req.content, trusted_hosts)?;
    let (duration_seconds, duration_chosen_by_model) = validate_duration(series, req)?;
    let resolution = one_of("resolution", req.resolution_or_default(), &RESOLUTIONS)?;
    let ratio = one_of("ratio", req.ratio_or_default(), &RATIOS)?;
    Ok(Validated {
        series,
        duration_seconds,
        duration_chosen_by_model,
        resolution,
        ratio,
        generate_audio: req.generate_audio_or_default(),
        reference_videos: counts.videos,
        reference_images: counts.reference_images,
        reference_audios: counts.audios,
        has_frames: counts.frames > 0,
        tier: if counts.videos > 0 {
            Tier::ReferenceVideo
        } else {
            Tier::Standard
        },
    })
}

/// docs/api.md §2.7 content rule 3: the reference videos last at most 15 s (2.0) or 30 s (2.5) in
/// total. `seconds` are the lengths the gateway could read, in content order; each must be a
/// finite number of at least 0.
///
/// ```
/// use tollgate_clip_tasks::series::ClipSeries;
/// use tollgate_clip_tasks::validate::validate_reference_seconds;
/// use tollgate_clip_tasks::Rule;
///
/// assert!(validate_reference_seconds(ClipSeries::V2_0, &[5.0, 10.0]).is_ok());
/// let err = validate_reference_seconds(ClipSeries::V2_0, &[5.0, 10.5]).unwrap_err();
/// assert_eq!((err.field.as_str(), err.rule), ("content", Rule::TooLong));
/// assert!(validate_reference_seconds(ClipSeries::V2_5, &[12.0, 10.0, 8.0]).is_ok());
/// ```
pub fn validate_reference_seconds(series: ClipSeries, seconds: &[f64]) -> Result<(), FieldError> {
    if let Some(bad) = seconds.iter().find(|s| !s.is_finite() || **s < 0.0) {
        return Err(FieldError::new(
            "content",
            Rule::OutOfRange,
            format!(
                "a reference video's length must be a number of seconds of at least 0, not {bad}"
            ),
        ));
    }
    let total: f64 = seconds.iter().sum();
    let max = series.max_reference_seconds();
    if total > f64::from(max) {
        return Err(FieldError::new(
            "content",
            Rule::TooLong,
            format!(
                "the reference videos last {total:.2} s in total; the {series} series allows at \
                 most {max} s"
            ),
        ));
    }
    Ok(())
}

#[derive(Debug, Default)]
struct Counts {
    frames: u32,
    first_frames: u32,
    last_frames: u32,
    reference_images: u32,
    videos: u32,
    audios: u32,
    texts: u32,
    drafts: u32,
}

fn validate_content(
    series: ClipSeries,
    content: &[ContentItem],
    trusted_hosts: &[String],
) -> Result<Counts, FieldError> {
    let trusted = |url: &str| url_host(url).is_some_and(|host| trusted_hosts.contains(&host));
    if content.is_empty() {
        return Err(FieldError::new(
            "content",
            Rule::Required,
            "'content' is required and must have at least one item",
        ));
    }
    let mut counts = Counts::default();
    for (i, item) in content.iter().enumerate() {
        match item {
            ContentItem::Text { text } => {
                if text.is_empty() {
                    return Err(required(format!("content[{i}].text")));
                }
                counts.texts += 1;
            }
            ContentItem::ImageUrl { image_url, role } => {
                let field = format!("content[{i}].image_url.url");
                check_url(
                    &field,
                    "an image",
                    check_image_url(&image_url.url),
                    trusted(&image_url.url),
                )?;
                count_image(i, *role, &mut counts)?;
            }
            ContentItem::VideoUrl { video_url, role } => {
                let field = format!("content[{i}].video_url.url");
                check_url(
                    &field,
                    "a reference video",
                    check_video_url(&video_url.url),
                    trusted(&video_url.url),
                )?;
                check_role(i, role.as_deref(), ROLE_REFERENCE_VIDEO)?;
                counts.videos += 1;
                let max = series.max_reference_videos();
                if counts.videos > max {
                    return Err(FieldError::new(
                        format!("content[{i}]"),
                        Rule::TooMany,
                        format!("the {series} series takes at most {max} reference videos"),
                    ));
                }
            }
            ContentItem::AudioUrl { audio_url, role } => {
                let field = format!("content[{i}].audio_url.url");
                check_url(
                    &field,
                    "reference audio",
                    check_audio_url(&audio_url.url),
                    trusted(&audio_url.url),
                )?;
                check_role(i, role.as_deref(), ROLE_REFERENCE_AUDIO)?;
                counts.audios += 1;
            }
            ContentItem::DraftTask { draft_task } => {
                if draft_task.id.is_empty() {
                    return Err(required(format!("content[{i}].draft_task.id")));
                }
                counts.drafts += 1;
            }
            ContentItem::Other(value) => return Err(diagnose(i, value)),
        }
    }
    let images = counts.frames + counts.reference_images;
    if counts.texts + images + counts.drafts == 0 {
        return Err(FieldError::new(
            "content",
            Rule::Required,
            "'content' must have at least one text, image or draft task item",
        ));
    }
    if counts.audios > 0 && images + counts.videos == 0 {
        return Err(FieldError::new(
            "content",
            Rule::Required,
            "reference audio needs at least one image or video in 'content'",
        ));
    }
    Ok(counts)
}

fn count_image(i: usize, role: Option<ImageRole>, counts: &mut Counts) -> Result<(), FieldError> {
    let field = format!("content[{i}].role");
    let is_frame = role.is_none_or(ImageRole::is_frame);
    if (is_frame && counts.reference_images > 0) || (!is_frame && counts.frames > 0) {
        return Err(FieldError::new(
            field,
            Rule::NotCombinable,
            "first/last frames cannot be combined with reference images (an image without a \
             role is a first frame)",
        ));
    }
    match role {
        Some(ImageRole::ReferenceImage) => {
            counts.reference_images += 1;
            if counts.reference_images > MAX_REFERENCE_IMAGES {
                return Err(FieldError::new(
                    format!("content[{i}]"),
                    Rule::TooMany,
                    format!("at most {MAX_REFERENCE_IMAGES} reference images are allowed"),
                ));
            }
            return Ok(());
        }
        Some(ImageRole::FirstFrame) => counts.first_frames += 1,
        Some(ImageRole::LastFrame) => counts.last_frames += 1,
        None => {}
    }
    counts.frames += 1;
    // Role-less images fill the first frame, then the last frame (wire-formats §5.1).
    if counts.first_frames > 1 || counts.last_frames > 1 || counts.frames > 2 {
        return Err(FieldError::new(
            field,
            Rule::TooMany,
            "at most one first frame and one last frame are allowed (an image without a role is \
             a first frame, a second one the last frame)",
        ));
    }
    Ok(())
}

fn check_role(i: usize, role: Option<&str>, expected: &str) -> Result<(), FieldError> {
    match role {
        None => Ok(()),
        Some(role) if role == expected => Ok(()),
        Some(role) => Err(FieldError::new(
            format!("content[{i}].role"),
            Rule::UnsupportedValue,
            format!(
                "'content[{i}].role' {role:?} is not accepted; use {expected:?} or leave it out"
            ),
        )),
    }
}

fn check_url(
    field: &str,
    what: &str,
    result: Result<(), UrlProblem>,
    trusted_host: bool,
) -> Result<(), FieldError> {
    let Err(problem) = result else {
        return Ok(());
    };
    if trusted_host
        && matches!(
            problem,
            UrlProblem::NotPublicIp(_) | UrlProblem::NotPublicName(_)
        )
    {
        return Ok(());
    }
    let rule = match problem {
        UrlProblem::Empty => return Err(required(field.to_owned())),
        UrlProblem::NotPublicIp(_) | UrlProblem::NotPublicName(_) => Rule::NotPublic,
        UrlProblem::TooLarge { .. } => Rule::TooLarge,
        _ => Rule::InvalidUrl,
    };
    let message = match rule {
        Rule::NotPublic => format!("'{field}' must be publicly accessible: {problem}"),
        _ => format!("'{field}' is not {what} URL that can be accepted: {problem}"),
    };
    Err(FieldError::new(field, rule, message))
}

fn required(field: String) -> FieldError {
    let message = format!("'{field}' is required and must not be empty");
    FieldError::new(field, Rule::Required, message)
}

/// The error for an item that decoded as [`ContentItem::Other`]: an unknown `type`, or a known
/// type whose fields have the wrong JSON type.
fn diagnose(i: usize, value: &Value) -> FieldError {
    let kind = match value.get("type") {
        Some(Value::String(kind)) if CONTENT_TYPES.contains(&kind.as_str()) => kind.as_str(),
        Some(Value::String(kind)) => {
            return FieldError::new(
                format!("content[{i}].type"),
                Rule::UnsupportedValue,
                format!(
                    "'content[{i}].type' {kind:?} is not accepted; use one of {}",
                    CONTENT_TYPES.join(", ")
                ),
            );
        }
        None | Some(Value::Null) if !value.is_object() => {
            return FieldError::new(
                format!("content[{i}]"),
                Rule::Malformed,
                format!("'content[{i}]' must be an object with a 'type'"),
            );
        }
        None | Some(Value::Null) => return required(format!("content[{i}].type")),
        Some(_) => {
            return FieldError::new(
                format!("content[{i}].type"),
                Rule::Malformed,
                format!("'content[{i}].type' must be a string"),
            );
        }
    };
    let malformed = |field: String, what: &str| {
        let message = format!("'{field}' must be {what}");
        FieldError::new(field, Rule::Malformed, message)
    };
    match kind {
        "text" => malformed(format!("content[{i}].text"), "a string"),
        "draft_task" => match value.get("draft_task") {
            Some(Value::Object(_)) => malformed(format!("content[{i}].draft_task.id"), "a string"),
            None | Some(Value::Null) => required(format!("content[{i}].draft_task")),
            Some(_) => malformed(
                format!("content[{i}].draft_task"),
                "an object {\"id\": ...}",
            ),
        },
        media => match value.get(media) {
            None | Some(Value::Null) => required(format!("content[{i}].{media}")),
            Some(Value::Object(object)) => match object.get("url") {
                Some(Value::String(_)) | Some(Value::Null) | None => {
                    // The URL is fine as a value: the role is what failed.
                    let accepted = match media {
                        "image_url" => ImageRole::ALL.map(ImageRole::as_str).join(", "),
                        "video_url" => ROLE_REFERENCE_VIDEO.to_owned(),
                        _ => ROLE_REFERENCE_AUDIO.to_owned(),
                    };
                    let field = format!("content[{i}].role");
                    let message = format!(
                        "'{field}' {} is not accepted; use one of {accepted}, or leave it out",
                        value.get("role").map_or_else(String::new, Value::to_string)
                    );
                    FieldError::new(field, Rule::UnsupportedValue, message)
                }
                Some(_) => malformed(format!("content[{i}].{media}.url"), "a string"),
            },
            Some(_) => malformed(format!("content[{i}].{media}"), "an object {\"url\": ...}"),
        },
    }
}

fn validate_duration(
    series: ClipSeries,
    req: &CreateTaskRequest,
) -> Result<(u32, bool), FieldError> {
    let range = series.duration_range();
    match req.duration {
        Some(DURATION_MODEL_CHOOSES) => Ok((*range.end(), true)),
        Some(duration) => match u32::try_from(duration) {
            Ok(seconds) if range.contains(&seconds) => Ok((seconds, false)),
            _ => Err(FieldError::new(
                "duration",
                Rule::OutOfRange,
                format!(
                    "'duration' must be between {} and {} seconds for the {series} series (or -1 to \
                     let the model choose), not {duration}",
                    range.start(),
                    range.end()
                ),
            )),
        },
        None => match req.frames() {
            // wire-formats §5.1/§5.5: 24 fps, frames = 24 × seconds + 1.
            Some(frames) if frames > 0 => {
                let seconds = (frames.unsigned_abs() - 1).div_ceil(24);
                let seconds = u32::try_from(seconds).unwrap_or(u32::MAX);
                Ok((seconds.clamp(*range.start(), *range.end()), false))
            }
            _ => Ok((DEFAULT_DURATION, false)),
        },
    }
}

fn one_of(field: &str, value: &str, accepted: &[&'static str]) -> Result<&'static str, FieldError> {
    accepted
        .iter()
        .find(|candidate| **candidate == value)
        .copied()
        .ok_or_else(|| {
            FieldError::new(
                field,
                Rule::UnsupportedValue,
                format!(
                    "'{field}' {value:?} is not accepted; use one of {}",
                    accepted.join(", ")
                ),
            )
        })
}
