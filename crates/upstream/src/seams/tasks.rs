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
use tollgate_clip_tasks::{CreateTaskRequest, Task};
use tollgate_generic_tasks::{CreateVideoRequest, VideoTask};
use tollgate_openai_videos::{Variant, Video};

/// A task to create, in its format: each public task endpoint speaks one of the two formats and
/// relays its upstream's task records faithfully (their every field reaches the client), so the
/// seam carries the format's own types rather than a common subset.
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

/// An upstream's record of a task, in its format (boxed: records are large).
#[derive(Debug, Clone)]
pub enum TaskRecord {
    /// Ark's.
    Ark(Box<Task>),
    /// The generic format's.
    Generic(Box<VideoTask>),
    /// OpenAI's Videos API's (an `openai-videos` channel serving a generic request).
    OpenAi(Box<Video>),
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

    /// The upstream's record of task `id`.
    fn get<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Answer<TaskRecord>, UpstreamError>>;

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
