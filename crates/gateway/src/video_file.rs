//! A finished task's video file (or, where its channel makes them, its thumbnail or
//! spritesheet), streamed from its upstream to the client frame by frame (never buffered
//! whole), with `Range` passed through so players can seek (DESIGN §5): what a signed media
//! link (`handlers::media`) and `GET /v1/videos/{id}/content` (`handlers::videos`) answer.

use crate::stream_body;
use bytes::Bytes;
use futures_util::StreamExt;
use http::{Request, Response, header};
use std::time::Duration;
use tollgate_exchange::body::ResponseBody;
use tollgate_exchange::errors::{ApiError, ErrorKind};
use tollgate_openai_videos::Variant;
use tollgate_request::context::RequestCtx;
use tollgate_settings::outbound::same_origin;
use tollgate_store::Task;
use tollgate_upstream::registry;
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

/// File `variant` of finished `task` (fetched from the task's channel by its upstream id, or at
/// its record's link `video_url`), streamed to the client as it arrives, with the client's
/// `Range` passed on: the signed link's answer, and `GET /v1/videos/{id}/content`'s. The
/// channel's format says how the file is fetched (`VideoTasks::file`: a pre-signed link as it
/// is, or the vendor's download path with the channel's key); a variant it does not make is a
/// 400 naming `variant`.
pub async fn stream(
    ctx: &RequestCtx,
    headers: &http::HeaderMap,
    task: &Task,
    video_url: &str,
    variant: Variant,
) -> Result<Response<ResponseBody>, ApiError> {
    let state = &ctx.state;
    let channel = ctx.settings.catalog.channel(&task.channel);
    let timeouts = channel.map_or_else(default_timeouts, |c| c.endpoint.timeouts);
    let request = match channel.map(|c| registry::video_tasks(c.format).map(|tasks| (c, tasks))) {
        Some(Ok((channel, tasks))) => tasks
            .file(
                &channel.endpoint,
                task.upstream_id.as_deref().unwrap_or_default(),
                video_url,
                variant,
            )
            .map_err(|e| crate::relay::upstream_error(&e))?,
        // The channel left the configuration since: its public link still works.
        _ => (variant == Variant::Video && !video_url.is_empty()).then(|| Request::get(video_url)),
    };
    let Some(mut upstream) = request else {
        return Err(ApiError::invalid(
            "variant",
            "unsupported_value",
            format!(
                "Invalid 'variant': {}'s model makes no {}; ask for the video.",
                task.id,
                variant.as_str()
            ),
        ));
    };
    if let Some(range) = headers.get(header::RANGE) {
        upstream = upstream.header(header::RANGE, range.clone());
    }
    let upstream = upstream
        .body(full_body(Bytes::new()))
        .map_err(|e| ApiError::internal("fetching the video", e))?;
    // The vendor's record names where its file is: the vendor's own origin is the operator's to
    // configure; any other URL — a CDN, or a compromised vendor's pointer into the gateway's
    // network — passes the one address rule (`tollgate_settings::outbound`).
    let own_origin = channel.is_some_and(|c| same_origin(upstream.uri(), &c.endpoint.base_url));
    let answer = if own_origin {
        state.http.send(upstream, &timeouts).await
    } else {
        state.outbound.send(upstream, &timeouts).await
    }
    .map_err(|e| {
        tracing::warn!(task = %task.id, error = %e, "a finished video's file could not be fetched");
        crate::relay::upstream_error(&e)
    })?;
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
    let permit = crate::admission::open_stream(ctx)?;
    let (sender, body) = stream_body::channel(permit);
    let mut frames = Box::pin(body_stream(answer.into_body(), timeouts.idle));
    crate::trace::spawn_for_request(async move {
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

fn default_timeouts() -> Timeouts {
    Timeouts {
        connect: Duration::from_secs(10),
        first_byte: Duration::from_secs(60),
        idle: Duration::from_secs(60),
    }
}
