//! The `generic-video` channel format: the generic format of docs/api.md §2.8 itself
//! (`{base}/v1/video/generations`), so that tollgate can front another gateway of that format:
//! create and get (the format has no cancel). Creates are never retried (DESIGN §6).

use crate::common::client::HttpClient;
use crate::common::{Answer, call_json, openai_error_message, path_segment};
use crate::seams::tasks::{TaskRecord, TaskRequest, VideoTasks, wrong_format};
use crate::{Endpoint, UpstreamError};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use http::Method;
use tollgate_generic_tasks::{CreateVideoRequest, VideoTask};

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
                TaskRequest::Ark(_) | TaskRequest::Remix { .. } => {
                    Err(wrong_format("generic-video"))
                }
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
            Ok(answer.map(|task| TaskRecord::Generic(Box::new(task))))
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
    let answer: Answer<Created> = call_json(
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
    call_json(
        client,
        endpoint,
        Method::GET,
        &path,
        None,
        openai_error_message,
    )
    .await
}
