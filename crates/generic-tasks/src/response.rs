//! The create response and the task record of the generic format (docs/api.md §2.8, §3.2, §4.8–4.9).
//!
//! Both are OpenAI `VideoResource`-style objects (wire-formats §7.1–7.2) with new-api's
//! `task_id` duplicate of `id`:
//!
//! ```json
//! {"id":"vt_1","task_id":"vt_1","object":"video","model":"omni","status":"queued","progress":0,"created_at":1767240000}
//! ```
//!
//! A finished record adds `completed_at`; a completed one `progress: 100` and `url` (and
//! `video_url` with the same link for the models that return it,
//! [`ModelSpec::returns_video_url`]); a failed one `error: {code, message}`. Fields without a
//! value are left out rather than sent as `null`.
//!
//! Decoding is lenient so that the types also read what a generic upstream answers: a missing
//! `task_id` is the `id`, a missing `object` is `video`, `progress` may be a number or a string
//! such as `"50%"` (new-api) and is clamped to 0–100, `seconds` may be a number or a string,
//! `error` may be a bare string, `status` takes every spelling of
//! [`UpstreamStatus`](crate::UpstreamStatus), and unknown fields are ignored.

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};

use crate::error::opt_string_or_number;
use crate::models::ModelSpec;
use crate::status::VideoStatus;

/// The `object` of a video task: `"video"`.
pub const VIDEO_OBJECT: &str = "video";

/// The answer to a create request (docs/api.md §2.8): the new task, queued, at progress 0.
///
/// ```
/// use tollgate_generic_tasks::{CreateVideoResponse, VideoStatus};
///
/// let response = CreateVideoResponse::new("vt_123", "omni", 1_767_240_000);
/// assert_eq!(response.task_id, response.id);
/// assert_eq!(response.status, VideoStatus::Queued);
/// assert_eq!(
///     serde_json::to_string(&response)?,
///     r#"{"id":"vt_123","task_id":"vt_123","object":"video","model":"omni","status":"queued","progress":0,"created_at":1767240000}"#
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "CreateWire")]
pub struct CreateVideoResponse {
    /// The task id (this service's own, never the upstream's).
    pub id: String,
    /// The same value as `id` (new-api's duplicate, wire-formats §7.1).
    pub task_id: String,
    /// Always [`VIDEO_OBJECT`].
    pub object: String,
    /// The model, as the client named it.
    pub model: String,
    /// [`VideoStatus::Queued`] at creation.
    pub status: VideoStatus,
    /// 0 at creation.
    pub progress: u8,
    /// Creation time, Unix seconds.
    pub created_at: i64,
}

impl CreateVideoResponse {
    /// The response for a task just created: `task_id` = `id`, `object` `video`, status
    /// `queued`, progress 0.
    pub fn new(id: impl Into<String>, model: impl Into<String>, created_at: i64) -> Self {
        let id = id.into();
        Self {
            task_id: id.clone(),
            id,
            object: VIDEO_OBJECT.to_owned(),
            model: model.into(),
            status: VideoStatus::Queued,
            progress: 0,
            created_at,
        }
    }
}

#[derive(Deserialize)]
struct CreateWire {
    id: String,
    #[serde(default)]
    task_id: Option<String>,
    #[serde(default)]
    object: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default = "queued")]
    status: VideoStatus,
    #[serde(default, deserialize_with = "lenient_progress")]
    progress: u8,
    #[serde(default)]
    created_at: Option<i64>,
}

fn queued() -> VideoStatus {
    VideoStatus::Queued
}

impl From<CreateWire> for CreateVideoResponse {
    fn from(wire: CreateWire) -> Self {
        Self {
            task_id: wire.task_id.unwrap_or_else(|| wire.id.clone()),
            id: wire.id,
            object: wire.object.unwrap_or_else(|| VIDEO_OBJECT.to_owned()),
            model: wire.model.unwrap_or_default(),
            status: wire.status,
            progress: wire.progress,
            created_at: wire.created_at.unwrap_or_default(),
        }
    }
}

/// The `error` of a failed task (docs/api.md §2.8, §7: "an `error` field is present"; its shape follows
/// OpenAI's `{code, message}`, wire-formats §7.2).
///
/// Decoding also takes a bare string as the message, and a numeric code as its decimal text.
///
/// ```
/// use tollgate_generic_tasks::VideoError;
///
/// let error: VideoError = serde_json::from_str(r#""content policy""#)?;
/// assert_eq!(error, VideoError::new("", "content policy"));
/// let error: VideoError = serde_json::from_str(r#"{"code":1301,"message":"sensitive"}"#)?;
/// assert_eq!(error.code, "1301");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(rename = "GenericVideoError")
)]
#[serde(from = "ErrorWire")]
pub struct VideoError {
    /// A machine-readable code, e.g. `generation_failed`, `cancelled`, `expired` (see
    /// [`UpstreamStatus::failure_code`](crate::UpstreamStatus::failure_code)); empty when absent.
    pub code: String,
    /// A sentence for the API user; empty when absent.
    pub message: String,
}

impl VideoError {
    /// An error with the given parts.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
        }
    }
}

#[derive(Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
enum ErrorWire {
    Message(String),
    Object {
        #[serde(default, deserialize_with = "opt_string_or_number")]
        code: Option<String>,
        #[serde(default)]
        message: Option<String>,
    },
}

impl From<ErrorWire> for VideoError {
    fn from(wire: ErrorWire) -> Self {
        match wire {
            ErrorWire::Message(message) => Self::new("", message),
            ErrorWire::Object { code, message } => {
                Self::new(code.unwrap_or_default(), message.unwrap_or_default())
            }
        }
    }
}

/// The task record of `GET /v1/video/generations/{task_id}` (docs/api.md §2.8, §3.2).
///
/// Build it with [`queued`](Self::queued) and move it along with [`in_progress`](Self::in_progress),
/// [`completed`](Self::completed) (or [`completed_for`](Self::completed_for)) and
/// [`failed`](Self::failed); [`VideoStatus::can_transition_to`] tells which moves are allowed.
///
/// ```
/// use tollgate_generic_tasks::models::spec;
/// use tollgate_generic_tasks::{VideoError, VideoTask};
///
/// let task = VideoTask::queued("vt_9", "wave-2-7-video", 1_767_240_000).in_progress(40);
/// assert_eq!(
///     serde_json::to_string(&task)?,
///     r#"{"id":"vt_9","task_id":"vt_9","object":"video","model":"wave-2-7-video","status":"in_progress","progress":40,"created_at":1767240000}"#
/// );
///
/// let wave = spec("wave-2-7-video").ok_or("unknown model")?;
/// let done = task.clone().completed_for(wave, "https://gw.example/v1/media/vt_9").finished_at(1_767_240_062);
/// let json = serde_json::to_value(&done)?;
/// assert_eq!((json["status"].as_str(), json["progress"].as_u64()), (Some("completed"), Some(100)));
/// assert_eq!(json["url"], json["video_url"]);
///
/// let failed = task.failed(VideoError::new("expired", "the task expired upstream"));
/// assert_eq!(serde_json::to_value(&failed)?["error"]["code"], "expired");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(from = "TaskWire")]
pub struct VideoTask {
    /// The task id (this service's own, never the upstream's).
    pub id: String,
    /// The same value as `id`.
    pub task_id: String,
    /// Always [`VIDEO_OBJECT`].
    #[cfg_attr(feature = "schema", schemars(extend("const" = VIDEO_OBJECT)))]
    pub object: String,
    /// The model, as the client named it.
    pub model: String,
    /// The state.
    pub status: VideoStatus,
    /// Percent done, 0–100; 100 exactly when completed.
    #[cfg_attr(feature = "schema", schemars(range(max = 100)))]
    pub progress: u8,
    /// Creation time, Unix seconds.
    pub created_at: i64,
    /// When the task finished (completed or failed), Unix seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<i64>,
    /// When the links of a completed task stop working, Unix seconds (docs/api.md §4 rule 7: usually 24
    /// hours after completion).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
    /// The link to the video, once completed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The same link, for the models that also return `video_url`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub video_url: Option<String>,
    /// The length of the video in seconds, as a decimal string like OpenAI's (`"8"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seconds: Option<String>,
    /// Why the task failed, once failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<VideoError>,
}

impl VideoTask {
    /// A task just created: queued, progress 0, `task_id` = `id`.
    pub fn queued(id: impl Into<String>, model: impl Into<String>, created_at: i64) -> Self {
        Self::from(CreateVideoResponse::new(id, model, created_at))
    }

    /// The task generating, at `progress` percent. Progress is capped at 99, since 100 means
    /// completed.
    pub fn in_progress(mut self, progress: u8) -> Self {
        self.status = VideoStatus::InProgress;
        self.progress = progress.min(99);
        self
    }

    /// The task completed (docs/api.md §3.2): progress 100, `url` present, `video_url` as given (see
    /// [`completed_for`](Self::completed_for)), no error.
    pub fn completed(mut self, url: impl Into<String>, video_url: Option<String>) -> Self {
        self.status = VideoStatus::Completed;
        self.progress = 100;
        self.url = Some(url.into());
        self.video_url = video_url;
        self.error = None;
        self
    }

    /// The task completed with `url`, and with `video_url` set to the same link when the model
    /// returns it ([`ModelSpec::returns_video_url`]).
    pub fn completed_for(self, spec: &ModelSpec, url: impl Into<String>) -> Self {
        let url = url.into();
        let video_url = spec.returns_video_url.then(|| url.clone());
        self.completed(url, video_url)
    }

    /// The task failed (docs/api.md §3.2, §7): `error` present, no links; progress stays where it was.
    pub fn failed(mut self, error: VideoError) -> Self {
        self.status = VideoStatus::Failed;
        self.error = Some(error);
        self.url = None;
        self.video_url = None;
        self
    }

    /// The same task with `completed_at` set.
    pub fn finished_at(mut self, completed_at: i64) -> Self {
        self.completed_at = Some(completed_at);
        self
    }

    /// The same task with `seconds` set to a whole number of seconds.
    pub fn with_seconds(mut self, seconds: u32) -> Self {
        self.seconds = Some(seconds.to_string());
        self
    }

    /// `seconds` as a number, when it holds a finite one.
    pub fn seconds_value(&self) -> Option<f64> {
        self.seconds
            .as_deref()
            .and_then(|s| s.trim().parse::<f64>().ok())
            .filter(|x| x.is_finite())
    }
}

impl From<CreateVideoResponse> for VideoTask {
    fn from(created: CreateVideoResponse) -> Self {
        Self {
            id: created.id,
            task_id: created.task_id,
            object: created.object,
            model: created.model,
            status: created.status,
            progress: created.progress,
            created_at: created.created_at,
            completed_at: None,
            expires_at: None,
            url: None,
            video_url: None,
            seconds: None,
            error: None,
        }
    }
}

#[derive(Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
struct TaskWire {
    id: String,
    #[serde(default)]
    task_id: Option<String>,
    #[serde(default)]
    object: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default = "queued")]
    status: VideoStatus,
    #[serde(default, deserialize_with = "lenient_progress")]
    progress: u8,
    #[serde(default)]
    created_at: Option<i64>,
    #[serde(default)]
    completed_at: Option<i64>,
    #[serde(default)]
    expires_at: Option<i64>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    video_url: Option<String>,
    #[serde(default, deserialize_with = "opt_string_or_number")]
    seconds: Option<String>,
    #[serde(default)]
    error: Option<VideoError>,
}

impl From<TaskWire> for VideoTask {
    fn from(wire: TaskWire) -> Self {
        Self {
            task_id: wire.task_id.unwrap_or_else(|| wire.id.clone()),
            id: wire.id,
            object: wire.object.unwrap_or_else(|| VIDEO_OBJECT.to_owned()),
            model: wire.model.unwrap_or_default(),
            status: wire.status,
            progress: wire.progress,
            created_at: wire.created_at.unwrap_or_default(),
            completed_at: wire.completed_at,
            expires_at: wire.expires_at,
            url: wire.url,
            video_url: wire.video_url,
            seconds: wire.seconds,
            error: wire.error,
        }
    }
}

/// `progress` as a number (rounded, clamped to 0–100), a string such as `"50%"` or `"50"`, or
/// `null` (0).
fn lenient_progress<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u8, D::Error> {
    deserializer.deserialize_any(ProgressVisitor)
}

struct ProgressVisitor;

fn clamp_percent(x: f64) -> u8 {
    // NaN fails both comparisons and ends up as 0.
    if x >= 100.0 {
        100
    } else if x > 0.0 {
        // Within (0, 100), so the cast is exact after rounding.
        x.round() as u8
    } else {
        0
    }
}

impl<'de> Visitor<'de> for ProgressVisitor {
    type Value = u8;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a progress percentage as a number or a string such as \"50%\"")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u8, E> {
        Ok(u8::try_from(v.clamp(0, 100)).unwrap_or(0))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u8, E> {
        Ok(u8::try_from(v.min(100)).unwrap_or(100))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<u8, E> {
        Ok(clamp_percent(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<u8, E> {
        let number = v.trim().trim_end_matches('%').trim();
        if number.is_empty() {
            return Ok(0);
        }
        number
            .parse::<f64>()
            .map(clamp_percent)
            .map_err(|_| E::invalid_value(de::Unexpected::Str(v), &self))
    }

    fn visit_unit<E: de::Error>(self) -> Result<u8, E> {
        Ok(0)
    }

    fn visit_none<E: de::Error>(self) -> Result<u8, E> {
        Ok(0)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<u8, D::Error> {
        deserializer.deserialize_any(self)
    }
}
