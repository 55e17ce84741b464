//! The video-task seam: what the gateway asks of a task channel, whatever format the channel
//! speaks (docs/architecture.md, "Upstream seams"). One adapter per format implements
//! [`VideoTasks`]: `ark` ([`crate::adapters::ark::Ark`]), `generic-video`
//! ([`crate::adapters::generic_video::GenericVideo`]) and `openai-videos`
//! ([`crate::adapters::openai_videos::OpenAiVideos`]).
//!
//! Creates are never retried: a timeout after sending may have created a paid task upstream
//! (DESIGN §6). The caller decides what a failure means.

use crate::common::Answer;
use crate::{Endpoint, HttpClient, UpstreamError};
use futures_util::future::BoxFuture;
use tollgate_clip_tasks::CreateTaskRequest;
use tollgate_generic_tasks::CreateVideoRequest;
use tollgate_openai_videos::Variant;

/// A task to create, in the request format the public endpoint validated (Ark's, or the generic
/// one every other video format is translated from by its adapter); what comes back is a
/// [`TaskReport`], the same for every format.
#[derive(Debug, Clone)]
pub enum TaskRequest {
    /// An Ark content-generation task.
    Ark(CreateTaskRequest),
    /// A generic video task.
    Generic(CreateVideoRequest),
    /// A new video from the channel's own finished video `of` (its id there) and a new prompt:
    /// for the formats that remix ([`VideoTasks::remixes`]).
    Remix {
        /// The vendor's id of the video to remix.
        of: String,
        /// What to change.
        prompt: String,
    },
}

/// What an upstream's record of a task says, read by the channel's adapter into the terms the
/// gateway polls, settles and refunds by — the same for every format, so a new video vendor is an
/// adapter and a registry row, not a change to the gateway (docs/architecture.md, "Upstream
/// seams"). What the vendor's record means is the adapter's to say; what that costs is the
/// gateway's (the task's pricing, fixed at submit).
#[derive(Debug, Clone, PartialEq)]
pub struct TaskReport {
    /// Where the task is.
    pub phase: TaskPhase,
    /// The vendor's own word for it (`queued`, `running`, `in_progress`, `succeeded`, `expired`, …),
    /// shown to the client as the task's upstream status.
    pub word: String,
    /// How far it is, 0–100, where the vendor says (0 where it does not).
    pub progress: u8,
    /// A succeeded task's video: `None` when the vendor reported success without one.
    pub video: Option<VideoAt>,
    /// The seconds of video a succeeded task made, where the vendor reports them.
    pub seconds: Option<f64>,
    /// The video tokens a succeeded task used, where the vendor reports them.
    pub tokens: Option<u64>,
    /// Why a failed task failed (the format's defaults filled in where the vendor said nothing).
    pub failure: Option<TaskFailure>,
    /// A succeeded task's record as the vendor sent it (kept with the task; `Null` otherwise).
    pub record: serde_json::Value,
}

impl TaskPhase {
    /// What a report keeps of the vendor's `record` in this phase: a succeeded task's record as
    /// sent ([`TaskReport::record`]), nothing otherwise.
    pub fn kept<T: serde::Serialize>(self, record: &T) -> serde_json::Value {
        match self {
            TaskPhase::Succeeded => serde_json::to_value(record).unwrap_or_default(),
            _ => serde_json::Value::Null,
        }
    }
}

/// Where a task is, in every format's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskPhase {
    /// Accepted, not started.
    Queued,
    /// Being made (also a status the adapter does not know: it is not over).
    Running,
    /// Finished with a video.
    Succeeded,
    /// Failed, cancelled or expired: nothing to charge.
    Failed,
}

/// Where a finished task's video is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VideoAt {
    /// At a link the vendor handed out (pre-signed: fetched without the channel's key).
    Link(String),
    /// Only from the channel, with its key ([`VideoTasks::file`]).
    Channel,
}

/// Why a task failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskFailure {
    /// A short machine code (`generation_failed`, `cancelled`, the vendor's own).
    pub code: String,
    /// What happened, for the client.
    pub message: String,
}

/// The video-task seam: create, get and cancel a task on a task channel. (Listing stays with
/// the gateway, which lists its clients' tasks from its own table: an upstream's list is the
/// whole channel account's.) One adapter per format: `ark` ([`crate::adapters::ark::Ark`]), `generic-video`
/// ([`crate::adapters::generic_video::GenericVideo`]), `openai-videos`
/// ([`crate::adapters::openai_videos::OpenAiVideos`]).
pub trait VideoTasks: Send + Sync {
    /// Creates the task; returns the upstream's id. Never retried (DESIGN §6).
    fn create<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        request: &'a TaskRequest,
    ) -> BoxFuture<'a, Result<Answer<String>, UpstreamError>>;

    /// What the upstream's record of task `id` says.
    fn get<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Answer<TaskReport>, UpstreamError>>;

    /// Cancels task `id` (or removes it, once finished).
    fn cancel<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        id: &'a str,
    ) -> BoxFuture<'a, Result<(), UpstreamError>>;

    /// Whether the format makes a video from one of its own (a [`TaskRequest::Remix`]); a
    /// format that does not is given a new generation instead.
    fn remixes(&self) -> bool {
        false
    }

    /// The request (without its body) that downloads `variant` of finished task `id`, whose
    /// record linked its video at `video_url`; `None` when the format makes no such file. By
    /// default the video only, at its link and without credentials — a link a vendor hands out
    /// is pre-signed, and the channel's key must not travel to whatever host it names.
    fn file(
        &self,
        endpoint: &Endpoint,
        id: &str,
        video_url: &str,
        variant: Variant,
    ) -> Result<Option<http::request::Builder>, UpstreamError> {
        let _ = (endpoint, id);
        Ok((variant == Variant::Video).then(|| http::Request::get(video_url)))
    }
}

/// A request in the other format than the channel's: the catalog never pairs them.
pub(crate) fn wrong_format(channel: &str) -> UpstreamError {
    UpstreamError::Config(format!(
        "a {channel} channel was given a task of another format"
    ))
}
