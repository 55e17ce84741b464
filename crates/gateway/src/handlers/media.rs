//! `GET /v1/media/{task_id}.mp4?expires=…&signature=…`: a finished task's video, streamed from
//! the upstream frame by frame (never buffered whole), with `Range` passed through so players
//! can seek (DESIGN §5). The link is the credential: no key is asked for, as with any
//! pre-signed download link.

use crate::tasks::record::TaskResult;
use bytes::Bytes;
use futures_util::StreamExt;
use http::{Request, Response, header};
use hyper::body::Incoming;
use std::time::Duration;
use tollgate_gateway_core::body::ResponseBody;
use tollgate_gateway_core::context::RequestCtx;
use tollgate_gateway_core::errors::{ApiError, ErrorKind};
use tollgate_gateway_core::media::LinkError;
use tollgate_gateway_core::stream_body;
use tollgate_store::TaskState;
use tollgate_upstream::{Timeouts, body_stream, full_body};

/// Headers of the upstream's answer that the client gets too.
const PASSED_HEADERS: [header::HeaderName; 6] = [
    header::CONTENT_TYPE,
    header::CONTENT_LENGTH,
    header::CONTENT_RANGE,
    header::ACCEPT_RANGES,
    header::ETAG,
    header::LAST_MODIFIED,
];

/// Streams the video behind a signed link.
pub async fn get(
    ctx: RequestCtx,
    request: Request<Incoming>,
    file: &str,
) -> Result<Response<ResponseBody>, ApiError> {
    let state = &ctx.state;
    let id = file.strip_suffix(".mp4").unwrap_or(file);
    let query = request.uri().query().unwrap_or_default();
    let expires = tollgate_gateway_core::auth::query_param(query, "expires")
        .and_then(|v| v.parse::<i64>().ok());
    let signature = tollgate_gateway_core::auth::query_param(query, "signature");
    let (Some(expires), Some(signature)) = (expires, signature) else {
        return Err(forbidden(
            "This media link is incomplete: it needs expires and signature",
        ));
    };
    let now = tollgate_gateway_core::clock::unix_now();
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
    let task = state
        .store
        .task(id)
        .await
        .map_err(|e| ApiError::internal("reading the task", e))?
        .filter(|t| t.state == TaskState::Succeeded)
        .ok_or_else(|| ApiError::new(ErrorKind::NotFound, format!("No video for task {id}")))?;
    let result: TaskResult = task
        .result
        .and_then(|r| serde_json::from_value(r).ok())
        .ok_or_else(|| ApiError::new(ErrorKind::NotFound, format!("No video for task {id}")))?;

    // The upstream file, asked for the same range.
    let timeouts = ctx
        .settings
        .catalog
        .channel(&task.channel)
        .map_or_else(default_timeouts, |c| c.endpoint.timeouts);
    let mut upstream = Request::get(&result.video_url);
    if let Some(range) = request.headers().get(header::RANGE) {
        upstream = upstream.header(header::RANGE, range.clone());
    }
    let upstream = upstream
        .body(full_body(Bytes::new()))
        .map_err(|e| ApiError::internal("fetching the video", e))?;
    let answer = state
        .http
        .send(upstream, &timeouts)
        .await
        .map_err(|e| crate::relay::upstream_error(&e))?;
    let status = answer.status();
    if !(status.is_success() || status == http::StatusCode::RANGE_NOT_SATISFIABLE) {
        return Err(ApiError::new(
            ErrorKind::UpstreamFailed,
            format!("The video's upstream answered {status}"),
        ));
    }
    let mut response = Response::builder().status(status);
    for name in PASSED_HEADERS {
        if let Some(value) = answer.headers().get(&name) {
            response = response.header(name, value.clone());
        }
    }
    // A media link is not metered: its permit holds no slot, but it comes from admission like
    // every client stream's.
    let permit = crate::admission::open_stream(&ctx)?;
    let (sender, body) = stream_body::channel(permit);
    let mut frames = Box::pin(body_stream(answer.into_body(), timeouts.idle));
    crate::spawn_for_request(async move {
        while let Some(frame) = frames.next().await {
            match frame {
                Ok(bytes) => {
                    if sender.send(bytes).await.is_err() {
                        return; // The client left; dropping the upstream body closes it.
                    }
                }
                Err(e) => {
                    sender
                        .abort(format!("the upstream video stream failed: {e}"))
                        .await;
                    return;
                }
            }
        }
    });
    response
        .body(body)
        .map_err(|e| ApiError::internal("answering with the video", e))
}

fn forbidden(message: &str) -> ApiError {
    ApiError::new(ErrorKind::Forbidden, message).code("invalid_media_link")
}

fn default_timeouts() -> Timeouts {
    Timeouts {
        connect: Duration::from_secs(10),
        first_byte: Duration::from_secs(60),
        idle: Duration::from_secs(60),
    }
}
