//! Task states: the four of the generic format ([`VideoStatus`], docs/api.md §3.2) and what a generic
//! upstream may report ([`UpstreamStatus`], wire-formats §7).
//!
//! ```text
//!            ┌──────────────────────────────┐
//! (create) → queued → in_progress → completed (progress 100, url)
//!            │             └──────→ failed    (error; refunded)
//!            └─────────────────────→ (either, when a poll skipped in_progress)
//! ```
//!
//! Clients also treat `succeeded` as success when polling (docs/api.md §3.2); upstream states
//! `cancelled` and `expired` are terminal failures; an upstream state nobody knows is treated as
//! still running (DESIGN §5: logged, until the task's deadline).

use std::convert::Infallible;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The state of a generic-format task as this service reports it (docs/api.md §3.2), snake_case on the
/// wire.
///
/// It serializes as one of `queued`, `in_progress`, `completed`, `failed`. Decoding is lenient,
/// so that a client can read any generic upstream with it: every spelling of
/// [`UpstreamStatus`] is accepted case-insensitively (`succeeded` and `SUCCESS` are
/// [`Completed`](Self::Completed), docs/api.md §3.2) and mapped by [`UpstreamStatus::video_status`],
/// so an unknown state decodes as [`InProgress`](Self::InProgress). Decode the value as an
/// [`UpstreamStatus`] to keep what was actually said.
///
/// ```
/// use tollgate_generic_tasks::VideoStatus;
///
/// assert_eq!(serde_json::to_string(&VideoStatus::InProgress)?, r#""in_progress""#);
/// assert_eq!(serde_json::from_str::<VideoStatus>(r#""succeeded""#)?, VideoStatus::Completed);
/// assert_eq!(serde_json::from_str::<VideoStatus>(r#""IN_PROGRESS""#)?, VideoStatus::InProgress);
/// assert!(VideoStatus::Queued.can_transition_to(VideoStatus::InProgress));
/// assert!(!VideoStatus::Completed.can_transition_to(VideoStatus::Failed));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(rename = "GenericVideoStatus")
)]
#[serde(rename_all = "snake_case")]
pub enum VideoStatus {
    /// Accepted, not started; `progress` is 0 at creation.
    Queued,
    /// Generating.
    InProgress,
    /// Done: `progress` is 100 and `url` is present. Terminal.
    Completed,
    /// Failed, cancelled or expired: `error` is present and the charge is refunded. Terminal.
    Failed,
}

impl VideoStatus {
    /// Every state, in the order of the state machine.
    pub const ALL: [VideoStatus; 4] = [
        VideoStatus::Queued,
        VideoStatus::InProgress,
        VideoStatus::Completed,
        VideoStatus::Failed,
    ];

    /// The wire value, e.g. `"in_progress"`.
    pub const fn as_str(&self) -> &'static str {
        match self {
            VideoStatus::Queued => "queued",
            VideoStatus::InProgress => "in_progress",
            VideoStatus::Completed => "completed",
            VideoStatus::Failed => "failed",
        }
    }

    /// Whether the task has finished: [`Completed`](Self::Completed) or [`Failed`](Self::Failed).
    pub const fn is_terminal(&self) -> bool {
        matches!(self, VideoStatus::Completed | VideoStatus::Failed)
    }

    /// Whether the task finished with a video.
    pub const fn is_success(&self) -> bool {
        matches!(self, VideoStatus::Completed)
    }

    /// The step in the state machine: 0 queued, 1 in progress, 2 finished.
    const fn stage(&self) -> u8 {
        match self {
            VideoStatus::Queued => 0,
            VideoStatus::InProgress => 1,
            VideoStatus::Completed | VideoStatus::Failed => 2,
        }
    }

    /// Whether a task in this state may move to `next` (docs/api.md §3.2): only forward, never out of a
    /// terminal state, never to the same state. `queued → completed|failed` is allowed, since a
    /// poll can miss the `in_progress` step (or a task can be cancelled before it starts).
    pub const fn can_transition_to(&self, next: VideoStatus) -> bool {
        self.stage() < next.stage()
    }
}

impl fmt::Display for VideoStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for VideoStatus {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(UpstreamStatus::deserialize(deserializer)?.video_status())
    }
}

/// A task state as a generic upstream reports it (wire-formats §7: new-api's internal states in
/// capitals, Ark/Doubao's, OpenAI's), parsed case-insensitively with `-` and spaces read as `_`.
///
/// | Reported | Variant | [`VideoStatus`] | Terminal |
/// |---|---|---|---|
/// | `queued`, `pending`, `submitted`, `not_start` | [`Queued`](Self::Queued), [`Pending`](Self::Pending), [`Submitted`](Self::Submitted), [`NotStart`](Self::NotStart) | `queued` | no |
/// | `in_progress`, `processing`, `running` | [`InProgress`](Self::InProgress), [`Processing`](Self::Processing), [`Running`](Self::Running) | `in_progress` | no |
/// | `completed`, `succeeded`, `success` | [`Completed`](Self::Completed), [`Succeeded`](Self::Succeeded), [`Success`](Self::Success) | `completed` | yes |
/// | `failed`, `failure` | [`Failed`](Self::Failed), [`Failure`](Self::Failure) | `failed` | yes |
/// | `cancelled`, `canceled` | [`Cancelled`](Self::Cancelled) | `failed` | yes |
/// | `expired` | [`Expired`](Self::Expired) | `failed` | yes |
/// | anything else (`unknown`, `""`, ...) | [`Unknown`](Self::Unknown), as reported | `in_progress` | no |
///
/// ```
/// use tollgate_generic_tasks::{UpstreamStatus, VideoStatus};
///
/// let status = UpstreamStatus::parse("SUCCESS");
/// assert_eq!(status, UpstreamStatus::Success);
/// assert_eq!(status.video_status(), VideoStatus::Completed);
///
/// let status = UpstreamStatus::parse("canceled");
/// assert_eq!((status.video_status(), status.is_terminal()), (VideoStatus::Failed, true));
/// assert_eq!(status.failure_code(), Some("cancelled"));
///
/// let status = UpstreamStatus::parse("warming_up");
/// assert_eq!(status, UpstreamStatus::Unknown("warming_up".into()));
/// assert_eq!((status.video_status(), status.is_terminal()), (VideoStatus::InProgress, false));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum UpstreamStatus {
    /// `queued` (OpenAI, Ark, new-api `QUEUED`).
    Queued,
    /// `pending` (Ark).
    Pending,
    /// `submitted` (new-api `SUBMITTED`).
    Submitted,
    /// `not_start` (new-api `NOT_START`).
    NotStart,
    /// `in_progress` (OpenAI, new-api `IN_PROGRESS`).
    InProgress,
    /// `processing` (Gemini channels of new-api).
    Processing,
    /// `running` (Ark).
    Running,
    /// `completed` (OpenAI).
    Completed,
    /// `succeeded` (Ark; clients of the generic format, docs/api.md §3.2).
    Succeeded,
    /// `success` (new-api `SUCCESS`).
    Success,
    /// `failed` (OpenAI, Ark).
    Failed,
    /// `failure` (new-api `FAILURE`).
    Failure,
    /// `cancelled` or `canceled`: a terminal failure.
    Cancelled,
    /// `expired`: a terminal failure.
    Expired,
    /// Any other value, as reported: treated as still running.
    Unknown(String),
}

impl UpstreamStatus {
    /// Parses a reported state; never fails (see the table on [`UpstreamStatus`]).
    pub fn parse(reported: &str) -> Self {
        let normalized: String = reported
            .trim()
            .chars()
            .map(|c| match c {
                '-' | ' ' => '_',
                c => c.to_ascii_lowercase(),
            })
            .collect();
        match normalized.as_str() {
            "queued" => Self::Queued,
            "pending" => Self::Pending,
            "submitted" => Self::Submitted,
            "not_start" => Self::NotStart,
            "in_progress" => Self::InProgress,
            "processing" => Self::Processing,
            "running" => Self::Running,
            "completed" => Self::Completed,
            "succeeded" => Self::Succeeded,
            "success" => Self::Success,
            "failed" => Self::Failed,
            "failure" => Self::Failure,
            "cancelled" | "canceled" => Self::Cancelled,
            "expired" => Self::Expired,
            _ => Self::Unknown(reported.to_owned()),
        }
    }

    /// The canonical lowercase spelling (`cancelled` for both spellings), or the reported text of
    /// an [`Unknown`](Self::Unknown) state.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Queued => "queued",
            Self::Pending => "pending",
            Self::Submitted => "submitted",
            Self::NotStart => "not_start",
            Self::InProgress => "in_progress",
            Self::Processing => "processing",
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Succeeded => "succeeded",
            Self::Success => "success",
            Self::Failed => "failed",
            Self::Failure => "failure",
            Self::Cancelled => "cancelled",
            Self::Expired => "expired",
            Self::Unknown(reported) => reported,
        }
    }

    /// The state of the generic format this maps to (see the table on [`UpstreamStatus`]).
    pub fn video_status(&self) -> VideoStatus {
        match self {
            Self::Queued | Self::Pending | Self::Submitted | Self::NotStart => VideoStatus::Queued,
            Self::InProgress | Self::Processing | Self::Running | Self::Unknown(_) => {
                VideoStatus::InProgress
            }
            Self::Completed | Self::Succeeded | Self::Success => VideoStatus::Completed,
            Self::Failed | Self::Failure | Self::Cancelled | Self::Expired => VideoStatus::Failed,
        }
    }

    /// Whether the task has finished upstream, with a video or without.
    pub fn is_terminal(&self) -> bool {
        self.video_status().is_terminal()
    }

    /// Whether the state is one of the known spellings.
    pub fn is_known(&self) -> bool {
        !matches!(self, Self::Unknown(_))
    }

    /// The `error.code` to report for a terminal failure: `generation_failed` for
    /// `failed`/`failure`, `cancelled`, `expired`; `None` for a state that is not a failure.
    pub fn failure_code(&self) -> Option<&'static str> {
        match self {
            Self::Failed | Self::Failure => Some("generation_failed"),
            Self::Cancelled => Some("cancelled"),
            Self::Expired => Some("expired"),
            _ => None,
        }
    }
}

impl FromStr for UpstreamStatus {
    type Err = Infallible;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Self::parse(s))
    }
}

impl From<&str> for UpstreamStatus {
    fn from(s: &str) -> Self {
        Self::parse(s)
    }
}

impl From<&UpstreamStatus> for VideoStatus {
    fn from(status: &UpstreamStatus) -> Self {
        status.video_status()
    }
}

impl fmt::Display for UpstreamStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for UpstreamStatus {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for UpstreamStatus {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let reported = String::deserialize(deserializer)?;
        Ok(Self::parse(&reported))
    }
}
