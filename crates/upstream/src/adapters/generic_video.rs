//! The `generic-video` channel format: the generic format of docs/api.md §2.8 itself
//! (`{base}/v1/video/generations`), so that tollgate can front another gateway of that format:
//! create and get (the format has no cancel). Creates are never retried (DESIGN §6).

use crate::common::client::HttpClient;
use crate::common::{Answer, call_json, openai_error_message, path_segment};
use crate::seams::tasks::{
    TaskFailure, TaskPhase, TaskReport, TaskRequest, VideoAt, VideoTasks, wrong_format,
};
use crate::{Endpoint, UpstreamError};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use http::Method;
use tollgate_generic_tasks::{CreateVideoRequest, VideoError, VideoStatus, VideoTask};

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
    ) -> BoxFuture<'a, Result<Answer<TaskReport>, UpstreamError>> {
        async move {
            let answer = generic_get(client, endpoint, id).await?;
            Ok(answer.map(report))
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

/// What a generic record says: its status and progress, the video's link (`url`, or
/// `video_url`) and the seconds it made once completed (docs/api.md §8 rule 6), and a failure's
/// code and message (`generation_failed`, and the status word with that it was refunded, where
/// the record gives none; a `cancelled` or `expired` code is the status word too).
pub fn report(task: VideoTask) -> TaskReport {
    let mut word = task.status.as_str().to_owned();
    let phase = match task.status {
        VideoStatus::Queued => TaskPhase::Queued,
        VideoStatus::InProgress => TaskPhase::Running,
        VideoStatus::Completed => TaskPhase::Succeeded,
        VideoStatus::Failed => TaskPhase::Failed,
    };
    let failure = (phase == TaskPhase::Failed).then(|| {
        let error = task
            .error
            .clone()
            .unwrap_or_else(|| VideoError::new("generation_failed", ""));
        if matches!(error.code.as_str(), "cancelled" | "expired") {
            word.clone_from(&error.code);
        }
        TaskFailure {
            message: if error.message.is_empty() {
                format!("the task ended {word} upstream; it was refunded")
            } else {
                error.message
            },
            code: if error.code.is_empty() {
                "generation_failed".to_owned()
            } else {
                error.code
            },
        }
    });
    TaskReport {
        phase,
        word,
        progress: task.progress,
        video: task
            .url
            .clone()
            .or_else(|| task.video_url.clone())
            .map(VideoAt::Link),
        seconds: task.seconds_value(),
        tokens: None,
        failure,
        record: phase.kept(&task),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn task(json: &str) -> VideoTask {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn a_generic_record_reads_as_a_report() {
        let running = report(task(
            r#"{"id":"vt_9","task_id":"vt_9","object":"video","model":"m","status":"in_progress","progress":40,"created_at":1}"#,
        ));
        assert_eq!((running.phase, running.progress), (TaskPhase::Running, 40));
        let done = report(task(
            r#"{"id":"vt_9","task_id":"vt_9","object":"video","model":"m","status":"completed","progress":100,"created_at":1,"video_url":"https://cdn.example/v.mp4","seconds":"4.2"}"#,
        ));
        assert_eq!(
            (done.phase, done.seconds, done.video),
            (
                TaskPhase::Succeeded,
                Some(4.2),
                Some(VideoAt::Link("https://cdn.example/v.mp4".into()))
            )
        );
        // A cancelled or expired code is the task's word.
        let cancelled = report(task(
            r#"{"id":"vt_9","task_id":"vt_9","object":"video","model":"m","status":"failed","progress":0,"created_at":1,"error":{"code":"cancelled","message":""}}"#,
        ));
        assert_eq!(cancelled.word, "cancelled");
        assert_eq!(
            cancelled.failure.unwrap().message,
            "the task ended cancelled upstream; it was refunded"
        );
    }
}
