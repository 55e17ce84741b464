//! `GET /v1/media/{task_id}.mp4?expires=…&signature=…`: a finished task's video, streamed from
//! the upstream frame by frame (never buffered whole), with `Range` passed through so players
//! can seek (DESIGN §5). The link is the credential: no key is asked for, as with any
//! pre-signed download link.

use crate::tasks::record::TaskResult;
use http::{Request, Response};
use hyper::body::Incoming;
use serde_json::json;
use tollgate_exchange::body::ResponseBody;
use tollgate_exchange::errors::{ApiError, ErrorKind};
use tollgate_exchange::route_doc::{About, binary, query};
use tollgate_request::context::RequestCtx;
use tollgate_settings::media::LinkError;
use tollgate_store::TaskState;

/// Streams the video behind a signed link.
pub async fn get(
    ctx: RequestCtx,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let state = &ctx.state;
    let file = tollgate_request::routes::last_segment(request.uri().path()).to_owned();
    let id = file.strip_suffix(".mp4").unwrap_or(&file);
    let query = request.uri().query().unwrap_or_default();
    let expires =
        tollgate_request::auth::query_param(query, "expires").and_then(|v| v.parse::<i64>().ok());
    let signature = tollgate_request::auth::query_param(query, "signature");
    let (Some(expires), Some(signature)) = (expires, signature) else {
        return Err(forbidden(
            "This media link is incomplete: it needs expires and signature",
        ));
    };
    let now = tollgate_journal::clock::unix_now();
    match state.media.verify(id, expires, &signature, now) {
        Ok(()) => {}
        Err(LinkError::BadSignature) => {
            return Err(forbidden(
                "This media link is not valid: its signature does not match",
            ));
        }
        Err(LinkError::Expired) => {
            return Err(forbidden(
                "This media link has expired (links last 24 hours after the task finished)",
            ));
        }
    }
    // A deleted task's link is dead with it.
    let task = state
        .store
        .shown_task(id)
        .await
        .map_err(|e| ApiError::internal("reading the task", e))?
        .filter(|t| t.state == TaskState::Succeeded)
        .ok_or_else(|| ApiError::new(ErrorKind::NotFound, format!("No video for task {id}")))?;
    let result: TaskResult = task
        .result
        .clone()
        .and_then(|r| serde_json::from_value(r).ok())
        .ok_or_else(|| ApiError::new(ErrorKind::NotFound, format!("No video for task {id}")))?;

    crate::video_file::stream(
        &ctx,
        request.headers(),
        &task,
        &result.video_url,
        tollgate_openai_videos::Variant::Video,
    )
    .await
}

fn forbidden(message: &str) -> ApiError {
    ApiError::new(ErrorKind::Forbidden, message).code("invalid_media_link")
}

/// `GET /v1/media/{file}`, in the OpenAPI document.
pub fn about() -> About {
    About::new(
        "A finished video through a signed link",
        "video",
        json!({
            "200": {"description": "The video", "content": {"video/mp4": binary()}},
            "302": {"description": "Redirect to the upstream's file"},
        }),
    )
    .param("file", "TASK_ID.mp4")
    .parameter(query("expires", "Unix seconds"))
    .parameter(query("sig", "Signature"))
}
