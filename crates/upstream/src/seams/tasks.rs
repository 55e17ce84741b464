//! The video-task seam: what the gateway asks of a task channel, whatever format the channel
//! speaks (docs/architecture.md, "Upstream seams"). One adapter per format implements
//! [`VideoTasks`]: `ark` ([`crate::adapters::ark::Ark`]) and `generic-video`
//! ([`crate::adapters::generic_video::GenericVideo`]).
//!
//! Creates are never retried: a timeout after sending may have created a paid task upstream
//! (DESIGN §6). The caller decides what a failure means.

use crate::common::Answer;
use crate::{Endpoint, HttpClient, UpstreamError};
use futures_util::future::BoxFuture;
use tollgate_clip_tasks::{CreateTaskRequest, Task};
use tollgate_generic_tasks::{CreateVideoRequest, VideoTask};

/// A task to create, in its format: each public task endpoint speaks one of the two formats and
/// relays its upstream's task records faithfully (their every field reaches the client), so the
/// seam carries the format's own types rather than a common subset.
#[derive(Debug, Clone)]
pub enum TaskRequest {
    /// An Ark content-generation task.
    Ark(CreateTaskRequest),
    /// A generic video task.
    Generic(CreateVideoRequest),
}

/// An upstream's record of a task, in its format (boxed: records are large).
#[derive(Debug, Clone)]
pub enum TaskRecord {
    /// Ark's.
    Ark(Box<Task>),
    /// The generic format's.
    Generic(Box<VideoTask>),
}

/// The video-task seam: create, get and cancel a task on a task channel. (Listing stays with
/// the gateway, which lists its clients' tasks from its own table: an upstream's list is the
/// whole channel account's.) One adapter per format: `ark` ([`crate::adapters::ark::Ark`]), `generic-video`
/// ([`crate::adapters::generic_video::GenericVideo`]).
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
}

/// A request in the other format than the channel's: the catalog never pairs them.
pub(crate) fn wrong_format(channel: &str) -> UpstreamError {
    UpstreamError::Config(format!(
        "a {channel} channel was given a task of another format"
    ))
}
