//! The `openai-videos` channel format: a Sora-style vendor that speaks OpenAI's Videos API
//! (`{base}/v1/videos`, Bearer key; wire-formats §7.2), so that tollgate can sit in front of
//! one. It serves generic-video models (docs/api.md §2.8 and the Sora-style rows of
//! `tollgate_generic_tasks::models`): a generic request's duration is sent as `seconds`, its
//! resolution and aspect ratio as `size`; the vendor's `Video` record is read into the seam's
//! `TaskReport` ([`report`]) and kept as it came. Its files — the video, the thumbnail, the spritesheet — are
//! downloaded from `…/{id}/content` with the channel's key: they have no public URL. A remix
//! of one of its videos is the vendor's own (`…/{id}/remix`). Creates are never retried
//! (DESIGN §6).

use crate::common::client::{HttpClient, bearer_request};
use crate::common::{Answer, call_json, openai_error_message, path_segment};
use crate::seams::tasks::{
    TaskFailure, TaskPhase, TaskReport, TaskRequest, VideoAt, VideoTasks, wrong_format,
};
use crate::{Endpoint, UpstreamError};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use http::Method;
use tollgate_generic_tasks::CreateVideoRequest;
use tollgate_openai_videos::{CreateVideoBody, Size, Variant, Video, VideoStatus};

/// The `openai-videos` format behind the video-task seam.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAiVideos;

/// Where the format's tasks live.
const VIDEOS_PATH: &str = "/v1/videos";

impl VideoTasks for OpenAiVideos {
    fn create<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        request: &'a TaskRequest,
    ) -> BoxFuture<'a, Result<Answer<String>, UpstreamError>> {
        async move {
            match request {
                TaskRequest::Generic(request) => create(client, endpoint, request).await,
                TaskRequest::Remix { of, prompt } => remix(client, endpoint, of, prompt).await,
                TaskRequest::Ark(_) => Err(wrong_format("openai-videos")),
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
            let path = format!("{VIDEOS_PATH}/{}", path_segment(id)?);
            let answer: Answer<Video> = call_json(
                client,
                endpoint,
                Method::GET,
                &path,
                None,
                openai_error_message,
            )
            .await?;
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
        async move {
            let path = format!("{VIDEOS_PATH}/{}", path_segment(id)?);
            let _: Answer<serde_json::Value> = call_json(
                client,
                endpoint,
                Method::DELETE,
                &path,
                None,
                openai_error_message,
            )
            .await?;
            Ok(())
        }
        .boxed()
    }

    fn remixes(&self) -> bool {
        true
    }

    fn file(
        &self,
        endpoint: &Endpoint,
        id: &str,
        _video_url: &str,
        variant: Variant,
    ) -> Result<Option<http::request::Builder>, UpstreamError> {
        let path = format!(
            "{VIDEOS_PATH}/{}/content?variant={}",
            path_segment(id)?,
            variant.as_str()
        );
        Ok(Some(bearer_request(endpoint, Method::GET, &path)))
    }
}

/// What a vendor's `Video` says: its status and progress, the seconds it made once completed
/// (docs/api.md §8 rule 6, as the generic format's) with its video fetched from the channel —
/// it has no public link — and a failure's code and message (`generation_failed`, and that it
/// was refunded, where the vendor gives none).
pub fn report(video: Video) -> TaskReport {
    let (phase, word) = match video.status {
        VideoStatus::Queued => (TaskPhase::Queued, "queued"),
        VideoStatus::InProgress => (TaskPhase::Running, "in_progress"),
        VideoStatus::Completed => (TaskPhase::Succeeded, "completed"),
        VideoStatus::Failed => (TaskPhase::Failed, "failed"),
    };
    let failure = (phase == TaskPhase::Failed).then(|| {
        let (code, message) = match video.error.clone() {
            Some(e) if !e.code.is_empty() => (e.code, e.message),
            Some(e) => ("generation_failed".to_owned(), e.message),
            None => ("generation_failed".to_owned(), String::new()),
        };
        TaskFailure {
            code,
            message: if message.is_empty() {
                "the video failed upstream; it was refunded".to_owned()
            } else {
                message
            },
        }
    });
    TaskReport {
        phase,
        word: word.to_owned(),
        progress: video.progress,
        video: (phase == TaskPhase::Succeeded).then_some(VideoAt::Channel),
        seconds: video.seconds_value(),
        tokens: None,
        failure,
        record: phase.kept(&video),
    }
}

/// The body sent for a generic request: `seconds` its whole duration, `size` its resolution
/// at its aspect ratio (both left to the vendor when the request has none).
pub fn create_body(request: &CreateVideoRequest) -> Result<CreateVideoBody, UpstreamError> {
    let size = match (&request.resolution, &request.aspect_ratio) {
        (Some(resolution), Some(ratio)) => Some(
            Size::from_resolution(resolution, ratio)
                .ok_or_else(|| {
                    UpstreamError::Config(format!(
                        "{resolution} at {ratio} is no size an openai-videos channel can be asked for"
                    ))
                })?
                .to_string(),
        ),
        _ => None,
    };
    Ok(CreateVideoBody {
        model: Some(request.model.clone()),
        prompt: Some(request.prompt.clone()),
        // Whole seconds already (`tollgate_generic_tasks::validate`).
        seconds: request
            .duration
            .map(|s| serde_json::Value::from(format!("{}", s.ceil()))),
        size,
        ..CreateVideoBody::default()
    })
}

/// `POST /v1/videos` (JSON). Returns the vendor's id.
async fn create(
    client: &HttpClient,
    endpoint: &Endpoint,
    request: &CreateVideoRequest,
) -> Result<Answer<String>, UpstreamError> {
    let body = serde_json::to_vec(&create_body(request)?)
        .map_err(|e| UpstreamError::Protocol(e.to_string()))?;
    let answer: Answer<Video> = call_json(
        client,
        endpoint,
        Method::POST,
        VIDEOS_PATH,
        Some(body),
        openai_error_message,
    )
    .await?;
    Ok(answer.map(|video| video.id))
}

/// `POST /v1/videos/{of}/remix`: a new video from the vendor's video `of`. Returns its id.
async fn remix(
    client: &HttpClient,
    endpoint: &Endpoint,
    of: &str,
    prompt: &str,
) -> Result<Answer<String>, UpstreamError> {
    let path = format!("{VIDEOS_PATH}/{}/remix", path_segment(of)?);
    let body = serde_json::to_vec(&serde_json::json!({ "prompt": prompt }))
        .map_err(|e| UpstreamError::Protocol(e.to_string()))?;
    let answer: Answer<Video> = call_json(
        client,
        endpoint,
        Method::POST,
        &path,
        Some(body),
        openai_error_message,
    )
    .await?;
    Ok(answer.map(|video| video.id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_videos_record_reads_as_a_report_with_its_file_on_the_channel() {
        let mut video = Video::queued("video_1", "sora-2", 1, "8", "1280x720");
        video.status = VideoStatus::Completed;
        let done = report(video.clone());
        assert_eq!(
            (done.phase, done.seconds, done.video),
            (TaskPhase::Succeeded, Some(8.0), Some(VideoAt::Channel))
        );
        video.status = VideoStatus::Failed;
        let failed = report(video);
        assert_eq!(failed.video, None);
        assert_eq!(failed.failure.unwrap().code, "generation_failed");
    }

    #[test]
    fn a_generic_request_is_sent_as_seconds_and_size() {
        let mut request = CreateVideoRequest::new("sora-2-pro", "a lighthouse");
        request.duration = Some(8.0);
        request.resolution = Some("1024p".into());
        request.aspect_ratio = Some("7:4".into());
        let body = serde_json::to_value(create_body(&request).unwrap()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"model": "sora-2-pro", "prompt": "a lighthouse", "seconds": "8", "size": "1792x1024"})
        );
        request.aspect_ratio = None;
        let body = serde_json::to_value(create_body(&request).unwrap()).unwrap();
        assert!(body.get("size").is_none());
    }

    #[test]
    fn files_are_fetched_with_the_channel_key_and_never_by_a_crafted_id() {
        let endpoint = Endpoint {
            base_url: "https://videos.example".into(),
            api_key: Some("sk-channel".into()),
            timeouts: crate::Timeouts {
                connect: std::time::Duration::from_secs(1),
                first_byte: std::time::Duration::from_secs(1),
                idle: std::time::Duration::from_secs(1),
            },
            traceparent: None,
        };
        let request = OpenAiVideos
            .file(&endpoint, "video_1", "", Variant::Spritesheet)
            .unwrap()
            .unwrap()
            .body(())
            .unwrap();
        assert_eq!(
            request.uri(),
            "https://videos.example/v1/videos/video_1/content?variant=spritesheet"
        );
        assert_eq!(request.headers()["authorization"], "Bearer sk-channel");
        assert!(
            OpenAiVideos
                .file(&endpoint, "../admin", "", Variant::Video)
                .is_err()
        );
    }
}
