//! The task: its status and state machine (docs/api.md §3.1), the create response (docs/api.md §2.7) and the
//! task record of `GET /api/v3/contents/generations/tasks/{id}` (docs/api.md §2.7, §4.7; wire-formats
//! §5.2), the endpoint paths (docs/api.md §4 rule 1) and the polling rules (docs/api.md §4 rules 2, 6, 7).
//!
//! # States
//!
//! docs/api.md §3.1, with the upstream's `cancelled` and `expired` (wire-formats §5.2, §5.3):
//!
//! | From | Event | To |
//! |---|---|---|
//! | (none) | create request accepted (an estimate is held) | `queued` |
//! | `queued` | generation starts | `running` |
//! | `running` | generation succeeds (`content.video_url` present; the hold settles against `usage`) | `succeeded` |
//! | `running` | generation fails (`error` present; refunded in full) | `failed` |
//! | `queued` | `DELETE` (wire-formats §5.3) | `cancelled` |
//! | `queued`, `running` | the upstream's execution time limit passes (`execution_expires_after`) | `expired` |
//!
//! `succeeded`, `failed`, `cancelled` and `expired` are terminal. A poller may see `queued` jump
//! straight to a terminal state (it polls every few seconds; docs/api.md §4 rule 6), so
//! [`TaskStatus::can_become`] allows every forward move and refuses moves back.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::error::null_as_empty;

/// docs/api.md §4.6, §4.7: the path of the clip-task endpoints (create and list, `POST` and `GET`).
pub const TASKS_PATH: &str = "/api/v3/contents/generations/tasks";

/// docs/api.md §4 rule 6: poll no more than once per second.
pub const MIN_POLL_INTERVAL: Duration = Duration::from_secs(1);

/// docs/api.md §4 rule 6: the recommended polling interval is 5 to 10 seconds; this is its start.
pub const RECOMMENDED_POLL_INTERVAL: Duration = Duration::from_secs(5);

/// docs/api.md §4 rule 7, wire-formats §5.2: the link to a finished video usually expires after 24
/// hours.
pub const VIDEO_URL_LIFETIME: Duration = Duration::from_secs(24 * 60 * 60);

/// docs/api.md §4.7: the path of one task, `TASKS_PATH/{id}` (docs/api.md §4 rule 2: a task is queried by its
/// id only).
///
/// ```
/// use tollgate_clip_tasks::task::{task_id_from_path, task_path};
///
/// let path = task_path("cgt-20260101123456-abcde");
/// assert_eq!(path, "/api/v3/contents/generations/tasks/cgt-20260101123456-abcde");
/// assert_eq!(task_id_from_path(&path), Some("cgt-20260101123456-abcde"));
/// assert_eq!(task_id_from_path("/api/v3/contents/generations/tasks/"), None);
/// ```
pub fn task_path(id: &str) -> String {
    format!("{TASKS_PATH}/{id}")
}

/// The task id of a path `TASKS_PATH/{id}`: not empty and without a further `/`.
pub fn task_id_from_path(path: &str) -> Option<&str> {
    let id = path.strip_prefix(TASKS_PATH)?.strip_prefix('/')?;
    (!id.is_empty() && !id.contains('/')).then_some(id)
}

/// The status of a task (docs/api.md §3.1, wire-formats §5.2), a lower-case string on the wire.
///
/// Decoding never fails on a string: the known values are matched without regard to case (and
/// the spelling `canceled` is read as [`Cancelled`](Self::Cancelled)); any other string is kept
/// in [`Unknown`](Self::Unknown), which is not terminal, so the poller keeps polling until the
/// upstream reports a known state or the task expires.
///
/// ```
/// use tollgate_clip_tasks::TaskStatus;
///
/// let status: TaskStatus = serde_json::from_str(r#""succeeded""#)?;
/// assert!(status.is_terminal() && status.is_success());
/// let odd: TaskStatus = serde_json::from_str(r#""paused""#)?;
/// assert_eq!(odd, TaskStatus::Unknown("paused".into()));
/// assert!(!odd.is_terminal());
/// assert_eq!(serde_json::to_string(&TaskStatus::Queued)?, r#""queued""#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum TaskStatus {
    /// `queued`: accepted, waiting; the default, the status of a new task.
    #[default]
    Queued,
    /// `running`: generating.
    Running,
    /// `succeeded`: `content.video_url` is present.
    Succeeded,
    /// `failed`: `error` is present.
    Failed,
    /// `cancelled`: cancelled while queued.
    Cancelled,
    /// `expired`: the upstream's execution time limit passed.
    Expired,
    /// Any other value, as given.
    Unknown(String),
}

impl TaskStatus {
    /// The known statuses, in the order of the state table.
    pub const KNOWN: [TaskStatus; 6] = [
        TaskStatus::Queued,
        TaskStatus::Running,
        TaskStatus::Succeeded,
        TaskStatus::Failed,
        TaskStatus::Cancelled,
        TaskStatus::Expired,
    ];

    /// Reads a status; never fails (see the type's documentation).
    pub fn parse(value: &str) -> TaskStatus {
        let known = [
            ("queued", TaskStatus::Queued),
            ("running", TaskStatus::Running),
            ("succeeded", TaskStatus::Succeeded),
            ("failed", TaskStatus::Failed),
            ("cancelled", TaskStatus::Cancelled),
            ("canceled", TaskStatus::Cancelled),
            ("expired", TaskStatus::Expired),
        ];
        known
            .into_iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(value))
            .map_or_else(
                || TaskStatus::Unknown(value.to_owned()),
                |(_, status)| status,
            )
    }

    /// The value as on the wire; an unknown value as it was given.
    pub fn as_str(&self) -> &str {
        match self {
            TaskStatus::Queued => "queued",
            TaskStatus::Running => "running",
            TaskStatus::Succeeded => "succeeded",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
            TaskStatus::Expired => "expired",
            TaskStatus::Unknown(value) => value,
        }
    }

    /// Whether the task has finished: succeeded, failed, cancelled or expired.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            TaskStatus::Succeeded
                | TaskStatus::Failed
                | TaskStatus::Cancelled
                | TaskStatus::Expired
        )
    }

    /// Whether the task succeeded: the hold settles against `usage.completion_tokens`
    /// (docs/api.md §3.1, §8 rule 4).
    pub fn is_success(&self) -> bool {
        matches!(self, TaskStatus::Succeeded)
    }

    /// Whether the task ended without a video — failed, cancelled or expired — and its charge
    /// is refunded in full (docs/api.md §3.1, §7, §8 rule 4).
    pub fn is_refunded(&self) -> bool {
        matches!(
            self,
            TaskStatus::Failed | TaskStatus::Cancelled | TaskStatus::Expired
        )
    }

    /// Whether a task in this status may next be reported in `next` (see the module's state
    /// table): the same status, or any later one. `queued` may become anything else
    /// (`running` may be missed between polls); `running` may become `succeeded`, `failed` or
    /// `expired`; a terminal status becomes nothing else. An unknown status may become anything
    /// and anything not terminal may become an unknown one.
    ///
    /// ```
    /// use tollgate_clip_tasks::TaskStatus;
    ///
    /// assert!(TaskStatus::Queued.can_become(&TaskStatus::Succeeded));
    /// assert!(!TaskStatus::Running.can_become(&TaskStatus::Queued));
    /// assert!(!TaskStatus::Running.can_become(&TaskStatus::Cancelled));
    /// assert!(!TaskStatus::Failed.can_become(&TaskStatus::Succeeded));
    /// ```
    pub fn can_become(&self, next: &TaskStatus) -> bool {
        if self == next {
            return true;
        }
        match (self, next) {
            (TaskStatus::Unknown(_), _) => true,
            (from, TaskStatus::Unknown(_)) => !from.is_terminal(),
            (TaskStatus::Queued, _) => true,
            (TaskStatus::Running, next) => matches!(
                next,
                TaskStatus::Succeeded | TaskStatus::Failed | TaskStatus::Expired
            ),
            _ => false,
        }
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A status's schema: the known values, the only ones the gateway writes (a vendor's other
/// word is read, and shown as the row's state).
#[cfg(feature = "schema")]
impl schemars::JsonSchema for TaskStatus {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ClipTaskStatus".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let known: Vec<&str> = TaskStatus::KNOWN.iter().map(TaskStatus::as_str).collect();
        schemars::json_schema!({
            "type": "string",
            "enum": known,
        })
    }
}

impl Serialize for TaskStatus {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for TaskStatus {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = String::deserialize(deserializer)?;
        Ok(TaskStatus::parse(&value))
    }
}

/// The create response (docs/api.md §2.7): `id`, `model`, `status` (`queued`), `created_at`.
///
/// The vendor answers with the `id` alone (wire-formats §5.1); docs/api.md §2.7 adds the other three,
/// which are optional here so that either decodes.
///
/// ```
/// use tollgate_clip_tasks::{CreateTaskResponse, TaskStatus};
///
/// let answer = CreateTaskResponse::queued("cgt-1", "clipgen-cn-2.0-260128", 1767240000);
/// assert_eq!(
///     serde_json::to_string(&answer)?,
///     r#"{"id":"cgt-1","model":"clipgen-cn-2.0-260128","status":"queued","created_at":1767240000}"#
/// );
/// let vendor: CreateTaskResponse = serde_json::from_str(r#"{"id": "cgt-2"}"#)?;
/// assert_eq!((vendor.id.as_str(), vendor.status), ("cgt-2", None));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(rename = "ClipTaskCreated")
)]
pub struct CreateTaskResponse {
    /// The task id.
    pub id: String,
    /// The model id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `queued` at creation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskStatus>,
    /// Unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<i64>,
    /// Fields this crate does not model (`safety_identifier`), kept so they pass through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CreateTaskResponse {
    /// The answer to an accepted create request: the task is `queued`.
    pub fn queued(id: impl Into<String>, model: impl Into<String>, created_at: i64) -> Self {
        Self {
            id: id.into(),
            model: Some(model.into()),
            status: Some(TaskStatus::Queued),
            created_at: Some(created_at),
            extra: Map::new(),
        }
    }
}

/// The task record (docs/api.md §2.7, wire-formats §5.2).
///
/// Only `id`, `model` and `status` are required (`model` may be `null`, read as empty); every
/// other field may be absent or `null`, and fields this crate does not model (`subdivisionlevel`,
/// `fileformat`, ...) are kept in [`extra`](Self::extra).
///
/// ```
/// use tollgate_clip_tasks::{Task, TaskStatus};
///
/// let task: Task = serde_json::from_str(r#"{
///     "id": "cgt-1", "model": "clipgen-cn-2.0-260128", "status": "succeeded",
///     "content": {"video_url": "https://cdn.example.com/v.mp4"},
///     "usage": {"completion_tokens": 108900, "total_tokens": 108900},
///     "error": null, "duration": 5, "resolution": "720p", "ratio": "16:9"
/// }"#)?;
/// assert_eq!(task.status, TaskStatus::Succeeded);
/// assert_eq!(task.video_url(), Some("https://cdn.example.com/v.mp4"));
/// assert_eq!(task.completion_tokens(), Some(108900));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(rename = "ClipTask")
)]
pub struct Task {
    /// The task id.
    pub id: String,
    /// The model id.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub model: String,
    /// The status.
    pub status: TaskStatus,
    /// On success: the video (and the last frame, when `return_last_frame` was asked for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<TaskContent>,
    /// On success: the tokens billed (docs/api.md §8 rule 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// On failure: what went wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<TaskError>,
    /// Unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<i64>,
    /// Unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<i64>,
    /// The seed used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    /// The resolution, e.g. `720p`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<String>,
    /// The aspect ratio, e.g. `16:9`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio: Option<String>,
    /// The clip's length in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<i64>,
    /// The clip's length in frames.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frames: Option<i64>,
    /// Frames per second (one word on the wire).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub framespersecond: Option<i64>,
    /// Whether the clip has sound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generate_audio: Option<bool>,
    /// Whether the task is a draft.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft: Option<bool>,
    /// The draft this task rendered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft_task_id: Option<String>,
    /// `default` or `flex`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_tier: Option<String>,
    /// The execution time limit in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_expires_after: Option<i64>,
    /// The priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    /// The tools used, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Value>,
    /// The prompt as revised by the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revised_prompt: Option<String>,
    /// The caller's end-user id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safety_identifier: Option<String>,
    /// Fields this crate does not model, kept so they pass through unchanged.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Task {
    /// A record with only `id`, `model` and `status` set.
    pub fn new(id: impl Into<String>, model: impl Into<String>, status: TaskStatus) -> Self {
        Self {
            id: id.into(),
            model: model.into(),
            status,
            ..Self::default()
        }
    }

    /// `content.video_url`, the link to the video (docs/api.md §4 rule 7: it usually expires after
    /// [`VIDEO_URL_LIFETIME`]).
    pub fn video_url(&self) -> Option<&str> {
        self.content.as_ref()?.video_url.as_deref()
    }

    /// `usage.completion_tokens`, the tokens billed (docs/api.md §8 rule 4).
    pub fn completion_tokens(&self) -> Option<u64> {
        self.usage.as_ref()?.completion_tokens
    }
}

/// The `content` of a finished task (wire-formats §5.2).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(rename = "ClipTaskContent")
)]
pub struct TaskContent {
    /// The video (mp4), valid for about 24 hours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub video_url: Option<String>,
    /// The last frame, when `return_last_frame` was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_frame_url: Option<String>,
    /// A non-video output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_url: Option<String>,
    /// Fields this crate does not model, kept so they pass through unchanged.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The `usage` of a finished task (docs/api.md §2.7, §8 rule 4).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(rename = "ClipTaskUsage")
)]
pub struct Usage {
    /// The tokens billed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    /// The tokens in total (optional in the vendor SDK).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    /// Fields this crate does not model, kept so they pass through unchanged.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The `error` of a failed task (wire-formats §5.2: `code`, `message`; the code strings vary,
/// e.g. `OutputVideoSensitiveContentDetected`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(rename = "ClipTaskError")
)]
pub struct TaskError {
    /// The error code.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub code: String,
    /// A sentence for the API user.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub message: String,
    /// Fields this crate does not model, kept so they pass through unchanged.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
