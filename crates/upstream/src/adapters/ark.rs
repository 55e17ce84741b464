//! The `ark` channel format: Volcengine Ark / BytePlus ModelArk content-generation tasks
//! (`{base}/api/v3/contents/generations/tasks`, Bearer key; wire-formats §5): create, get,
//! list, delete; errors as Ark's `{error:{code,message,param,type}}`. Creates are never retried
//! (DESIGN §6).

use crate::common::client::HttpClient;
use crate::common::{Answer, call_json, openai_error_message, path_segment};
use crate::seams::tasks::{TaskRecord, TaskRequest, VideoTasks, wrong_format};
use crate::{Endpoint, UpstreamError};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use http::Method;
use tollgate_clip_tasks::{ArkError, CreateTaskRequest, ListQuery, ListResponse, Task};

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
                TaskRequest::Generic(_) | TaskRequest::Remix { .. } => Err(wrong_format("ark")),
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
            Ok(answer.map(|task| TaskRecord::Ark(Box::new(task))))
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
    let answer: Answer<Created> = call_json(
        client,
        endpoint,
        Method::POST,
        "/api/v3/contents/generations/tasks",
        Some(body),
        ark_message,
    )
    .await?;
    Ok(answer.map(|created| created.id))
}

/// Ark: `GET /api/v3/contents/generations/tasks/{id}`.
pub async fn ark_get(
    client: &HttpClient,
    endpoint: &Endpoint,
    id: &str,
) -> Result<Answer<Task>, UpstreamError> {
    let path = format!("/api/v3/contents/generations/tasks/{}", path_segment(id)?);
    call_json(client, endpoint, Method::GET, &path, None, ark_message).await
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
    call_json(client, endpoint, Method::GET, &path, None, ark_message).await
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
        call_json(client, endpoint, Method::DELETE, &path, None, ark_message).await?;
    Ok(())
}

/// Ark's error message with its code, or an OpenAI-shaped one; `None` for any other body.
fn ark_message(body: &[u8]) -> Option<String> {
    match ArkError::parse(body) {
        Some(e) => Some(format!("{}: {}", e.error.code, e.error.message)),
        None => openai_error_message(body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ark_errors_keep_their_code() {
        let body = br#"{"error":{"code":"InvalidParameter","message":"bad ratio","param":"ratio","type":"BadRequest"}}"#;
        assert_eq!(
            ark_message(body).as_deref(),
            Some("InvalidParameter: bad ratio")
        );
    }
}
