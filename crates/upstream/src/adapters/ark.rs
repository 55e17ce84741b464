//! The `ark` channel format: Volcengine Ark / BytePlus ModelArk content-generation tasks
//! (`{base}/api/v3/contents/generations/tasks`, Bearer key; wire-formats §5): create, get,
//! list, delete; errors as Ark's `{error:{code,message,param,type}}`. Creates are never retried
//! (DESIGN §6).

use crate::common::client::HttpClient;
use crate::common::{Answer, call_json, openai_error_message, path_segment};
use crate::seams::tasks::{
    TaskFailure, TaskPhase, TaskReport, TaskRequest, VideoAt, VideoTasks, wrong_format,
};
use crate::{Endpoint, UpstreamError};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use http::Method;
use tollgate_clip_tasks::{ArkError, CreateTaskRequest, ListQuery, ListResponse, Task, TaskStatus};

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
    ) -> BoxFuture<'a, Result<Answer<TaskReport>, UpstreamError>> {
        async move {
            let answer = ark_get(client, endpoint, id).await?;
            Ok(answer.map(report))
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

/// What an Ark record says: its status (one Ark has not documented is still running), the
/// video's link and the video tokens once succeeded (`usage.completion_tokens`, docs/api.md §8
/// rule 4), and a failure's code and message — the status word, and that it was refunded, where
/// Ark gives none.
pub fn report(task: Task) -> TaskReport {
    let word = task.status.as_str().to_owned();
    let phase = match &task.status {
        TaskStatus::Queued => TaskPhase::Queued,
        TaskStatus::Running => TaskPhase::Running,
        TaskStatus::Unknown(other) => {
            tracing::warn!(status = %other, "unknown upstream task status; treating it as running");
            TaskPhase::Running
        }
        TaskStatus::Succeeded => TaskPhase::Succeeded,
        TaskStatus::Failed | TaskStatus::Cancelled | TaskStatus::Expired => TaskPhase::Failed,
    };
    let failure = (phase == TaskPhase::Failed).then(|| {
        let error = task.error.clone().unwrap_or_default();
        TaskFailure {
            code: if error.code.is_empty() {
                word.clone()
            } else {
                error.code
            },
            message: if error.message.is_empty() {
                format!("the task ended {word} upstream; it was refunded")
            } else {
                error.message
            },
        }
    });
    TaskReport {
        phase,
        progress: 0,
        video: task.video_url().map(|url| VideoAt::Link(url.to_owned())),
        seconds: None,
        tokens: task.completion_tokens(),
        failure,
        record: phase.kept(&task),
        word,
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

    fn task(json: &str) -> Task {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn an_ark_record_reads_as_a_report() {
        let done = report(task(
            r#"{"id":"cgt-1","model":"m","status":"succeeded","content":{"video_url":"https://cdn.example/v.mp4"},"usage":{"completion_tokens":108900,"total_tokens":108900}}"#,
        ));
        assert_eq!(
            (done.phase, done.tokens, done.video),
            (
                TaskPhase::Succeeded,
                Some(108_900),
                Some(VideoAt::Link("https://cdn.example/v.mp4".into()))
            )
        );
        assert_eq!(done.record["id"], "cgt-1");
        // A status Ark has not documented is not over; a failure without a code is its word.
        let paused = report(task(r#"{"id":"cgt-1","model":"m","status":"paused"}"#));
        assert_eq!(
            (paused.phase, paused.word.as_str()),
            (TaskPhase::Running, "paused")
        );
        assert_eq!(paused.record, serde_json::Value::Null);
        let expired = report(task(r#"{"id":"cgt-1","model":"m","status":"expired"}"#));
        let failure = expired.failure.unwrap();
        assert_eq!(expired.phase, TaskPhase::Failed);
        assert_eq!(failure.code, "expired");
        assert_eq!(
            failure.message,
            "the task ended expired upstream; it was refunded"
        );
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
