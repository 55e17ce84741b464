//! The two asynchronous video channel formats:
//!
//! * `ark` — Volcengine Ark / BytePlus ModelArk content-generation tasks
//!   (`{base}/api/v3/contents/generations/tasks`, Bearer key; wire-formats §5): create, get,
//!   list, delete; errors as Ark's `{error:{code,message,param,type}}`;
//! * `generic-video` — the generic format of docs/api.md §2.8 itself (`{base}/v1/video/generations`),
//!   so that tollgate can front another gateway of that format: create and get.
//!
//! Creates are never retried here: a timeout after sending may have created a paid task upstream
//! (DESIGN §6). The caller decides what a failure means.

use crate::client::{HttpClient, bearer_request, full_body};
use crate::common::{Answer, openai_error_message, retry_after};
use crate::{Endpoint, UpstreamError};
use bytes::Bytes;
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use http::{Method, header};
use serde::de::DeserializeOwned;
use std::time::Instant;
use tollgate_clip_tasks::{ArkError, CreateTaskRequest, ListQuery, ListResponse, Task};
use tollgate_generic_tasks::{CreateVideoRequest, VideoTask};

/// The largest task answer read.
const MAX_RESPONSE: usize = 4 << 20;

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
/// whole channel account's.) One adapter per format: `ark` ([`Ark`]), `generic-video`
/// ([`GenericVideo`]).
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
fn wrong_format(channel: &str) -> UpstreamError {
    UpstreamError::Config(format!(
        "a {channel} channel was given a task of another format"
    ))
}

/// The `ark` format behind the video-task seam.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ark;

impl VideoTasks for Ark {
    fn create<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        request: &'a TaskRequest,
    ) -> BoxFuture<'a, Result<Answer<String>, UpstreamError>> {
        async move {
            match request {
                TaskRequest::Ark(request) => ark_create(client, endpoint, request).await,
                TaskRequest::Generic(_) => Err(wrong_format("ark")),
            }
        }
        .boxed()
    }

    fn get<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Answer<TaskRecord>, UpstreamError>> {
        async move {
            let answer = ark_get(client, endpoint, id).await?;
            Ok(Answer {
                body: TaskRecord::Ark(Box::new(answer.body)),
                upstream_time: answer.upstream_time,
            })
        }
        .boxed()
    }

    fn cancel<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        id: &'a str,
    ) -> BoxFuture<'a, Result<(), UpstreamError>> {
        ark_delete(client, endpoint, id).boxed()
    }
}

/// The `generic-video` format behind the video-task seam. The format has no cancel.
#[derive(Debug, Clone, Copy, Default)]
pub struct GenericVideo;

impl VideoTasks for GenericVideo {
    fn create<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        request: &'a TaskRequest,
    ) -> BoxFuture<'a, Result<Answer<String>, UpstreamError>> {
        async move {
            match request {
                TaskRequest::Generic(request) => generic_create(client, endpoint, request).await,
                TaskRequest::Ark(_) => Err(wrong_format("generic-video")),
            }
        }
        .boxed()
    }

    fn get<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Answer<TaskRecord>, UpstreamError>> {
        async move {
            let answer = generic_get(client, endpoint, id).await?;
            Ok(Answer {
                body: TaskRecord::Generic(Box::new(answer.body)),
                upstream_time: answer.upstream_time,
            })
        }
        .boxed()
    }

    fn cancel<'a>(
        &'a self,
        _client: &'a HttpClient,
        _endpoint: &'a Endpoint,
        _id: &'a str,
    ) -> BoxFuture<'a, Result<(), UpstreamError>> {
        async {
            Err(UpstreamError::Config(
                "the generic video format has no cancel".into(),
            ))
        }
        .boxed()
    }
}

/// Ark: `POST /api/v3/contents/generations/tasks`. Returns the upstream task id.
pub async fn ark_create(
    client: &HttpClient,
    endpoint: &Endpoint,
    request: &CreateTaskRequest,
) -> Result<Answer<String>, UpstreamError> {
    #[derive(serde::Deserialize)]
    struct Created {
        id: String,
    }
    let body = serde_json::to_vec(request).map_err(|e| UpstreamError::Protocol(e.to_string()))?;
    let answer: Answer<Created> = call(
        client,
        endpoint,
        Method::POST,
        "/api/v3/contents/generations/tasks",
        Some(body),
        ark_message,
    )
    .await?;
    Ok(Answer {
        body: answer.body.id,
        upstream_time: answer.upstream_time,
    })
}

/// Ark: `GET /api/v3/contents/generations/tasks/{id}`.
pub async fn ark_get(
    client: &HttpClient,
    endpoint: &Endpoint,
    id: &str,
) -> Result<Answer<Task>, UpstreamError> {
    let path = format!("/api/v3/contents/generations/tasks/{}", path_segment(id)?);
    call(client, endpoint, Method::GET, &path, None, ark_message).await
}

/// Ark: `GET /api/v3/contents/generations/tasks?…`.
pub async fn ark_list(
    client: &HttpClient,
    endpoint: &Endpoint,
    query: &ListQuery,
) -> Result<Answer<ListResponse>, UpstreamError> {
    let path = format!(
        "/api/v3/contents/generations/tasks?{}",
        query.to_query_string()
    );
    call(client, endpoint, Method::GET, &path, None, ark_message).await
}

/// Ark: `DELETE /api/v3/contents/generations/tasks/{id}` (cancel a queued task, or remove a
/// finished one).
pub async fn ark_delete(
    client: &HttpClient,
    endpoint: &Endpoint,
    id: &str,
) -> Result<(), UpstreamError> {
    let path = format!("/api/v3/contents/generations/tasks/{}", path_segment(id)?);
    let _: Answer<serde_json::Value> =
        call(client, endpoint, Method::DELETE, &path, None, ark_message).await?;
    Ok(())
}

/// Generic: `POST /v1/video/generations`. Returns the upstream task id.
pub async fn generic_create(
    client: &HttpClient,
    endpoint: &Endpoint,
    request: &CreateVideoRequest,
) -> Result<Answer<String>, UpstreamError> {
    #[derive(serde::Deserialize)]
    struct Created {
        id: Option<String>,
        task_id: Option<String>,
    }
    let body = serde_json::to_vec(request).map_err(|e| UpstreamError::Protocol(e.to_string()))?;
    let answer: Answer<Created> = call(
        client,
        endpoint,
        Method::POST,
        "/v1/video/generations",
        Some(body),
        openai_error_message,
    )
    .await?;
    let id = answer
        .body
        .id
        .or(answer.body.task_id)
        .ok_or_else(|| UpstreamError::Protocol("create answer without an id".into()))?;
    Ok(Answer {
        body: id,
        upstream_time: answer.upstream_time,
    })
}

/// Generic: `GET /v1/video/generations/{id}`.
pub async fn generic_get(
    client: &HttpClient,
    endpoint: &Endpoint,
    id: &str,
) -> Result<Answer<VideoTask>, UpstreamError> {
    let path = format!("/v1/video/generations/{}", path_segment(id)?);
    call(
        client,
        endpoint,
        Method::GET,
        &path,
        None,
        openai_error_message,
    )
    .await
}

async fn call<T: DeserializeOwned>(
    client: &HttpClient,
    endpoint: &Endpoint,
    method: Method,
    path: &str,
    body: Option<Vec<u8>>,
    error_message: fn(&[u8]) -> Option<String>,
) -> Result<Answer<T>, UpstreamError> {
    let mut builder =
        bearer_request(endpoint, method, path).header(header::ACCEPT, "application/json");
    if body.is_some() {
        builder = builder.header(header::CONTENT_TYPE, "application/json");
    }
    let request = builder
        .body(full_body(body.map(Bytes::from).unwrap_or_default()))
        .map_err(|e| UpstreamError::Config(e.to_string()))?;
    let started = Instant::now();
    let response = client.send(request, &endpoint.timeouts).await?;
    let status = response.status();
    let retry_after = retry_after(response.headers());
    let bytes =
        HttpClient::read_body(response.into_body(), MAX_RESPONSE, &endpoint.timeouts).await?;
    if !status.is_success() {
        return Err(UpstreamError::refused(
            status.as_u16(),
            &bytes,
            error_message,
            retry_after,
        ));
    }
    // DELETE answers may be empty.
    let bytes = if bytes.is_empty() {
        Bytes::from_static(b"null")
    } else {
        bytes
    };
    let body = serde_json::from_slice(&bytes)
        .map_err(|e| UpstreamError::Protocol(format!("{path}: {e}")))?;
    Ok(Answer {
        body,
        upstream_time: started.elapsed(),
    })
}

/// Ark's error message with its code, or an OpenAI-shaped one; `None` for any other body.
fn ark_message(body: &[u8]) -> Option<String> {
    match ArkError::parse(body) {
        Some(e) => Some(format!("{}: {}", e.error.code, e.error.message)),
        None => openai_error_message(body),
    }
}

/// An upstream id placed in a path must not be able to change the path.
fn path_segment(id: &str) -> Result<&str, UpstreamError> {
    if id.is_empty()
        || !id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    {
        return Err(UpstreamError::Protocol(format!(
            "unusable upstream task id {id:?}"
        )));
    }
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_cannot_escape_the_path() {
        assert!(path_segment("cgt-20260101-abc").is_ok());
        assert!(path_segment("../admin").is_err());
        assert!(path_segment("a/b").is_err());
        assert!(path_segment("").is_err());
    }

    #[test]
    fn ark_errors_keep_their_code() {
        let body = br#"{"error":{"code":"InvalidParameter","message":"bad ratio","param":"ratio","type":"BadRequest"}}"#;
        assert_eq!(
            ark_message(body).as_deref(),
            Some("InvalidParameter: bad ratio")
        );
    }
}
