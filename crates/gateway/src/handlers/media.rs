//! `GET /v1/media/{task_id}.mp4?expires=…&signature=…`: a finished task's video, streamed from
//! the upstream frame by frame (never buffered whole), with `Range` passed through so players
//! can seek (DESIGN §5); and `GET /v1/media/images/{id}.{ext}?expires=…&signature=…`: a drawn
//! image the gateway kept for its `url` answer, streamed from the store a chunk at a time
//! (docs/decisions.md, "Images by the picture"). The link is the credential: no key is asked
//! for, as with any pre-signed download link.

use crate::tasks::record::TaskResult;
use http::{Request, Response};
use hyper::body::Incoming;
use serde_json::json;
use tollgate_exchange::body::ResponseBody;
use tollgate_exchange::errors::{ApiError, ErrorKind};
use tollgate_exchange::route_doc::{About, binary, query};
use tollgate_request::context::RequestCtx;
use tollgate_settings::media::LinkError;
use tollgate_store::{MediaDigest, TaskState};

/// Streams the video behind a signed link.
pub async fn get(
    ctx: RequestCtx,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let state = &ctx.state;
    let file = tollgate_request::routes::last_segment(request.uri().path()).to_owned();
    let id = file.strip_suffix(".mp4").unwrap_or(&file);
    let (expires, signature) = link_parts(request.uri())?;
    let now = tollgate_journal::clock::unix_now();
    refused(
        state.media.verify(id, expires, &signature, now),
        "links last 24 hours after the task finished",
    )?;
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

/// Streams a drawn image behind its signed link, a chunk at a time from the store.
pub async fn image(
    ctx: RequestCtx,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let state = ctx.state.clone();
    let file = tollgate_request::routes::last_segment(request.uri().path());
    let id = file.split_once('.').map_or(file, |(id, _)| id).to_owned();
    let (expires, signature) = link_parts(request.uri())?;
    let digest =
        tollgate_request::auth::query_param(request.uri().query().unwrap_or_default(), "digest")
            .unwrap_or_default();
    let now = tollgate_journal::clock::unix_now();
    refused(
        state
            .media
            .verify_image((&id, &digest), expires, &signature, now),
        "an image's link lasts as long as [media] image_ttl_seconds says",
    )?;
    let gone = || ApiError::new(ErrorKind::NotFound, format!("No image {id}"));
    let kept = state
        .store
        .media_file(&id)
        .await
        .map_err(|e| ApiError::internal("reading the image", e))?
        .filter(|kept| kept.expires_at >= now)
        .ok_or_else(gone)?;
    let head = Response::builder()
        .header(http::header::CONTENT_TYPE, kept.content_type.as_str())
        .header(http::header::CONTENT_LENGTH, kept.bytes)
        // Cached no longer than the link lives.
        .header(
            http::header::CACHE_CONTROL,
            format!(
                "private, max-age={}",
                kept.expires_at.saturating_sub(now).max(0)
            ),
        );
    let permit = crate::admission::open_stream(&ctx)?;
    let (sender, body) = crate::stream_body::channel(permit);
    crate::trace::spawn_for_request(async move {
        // The digest the link signed, checked over what was streamed: bytes rewritten in the
        // database (an insider) never reach the client whole — the last chunk is held back
        // and the stream cut.
        let mut streamed = MediaDigest::new();
        for seq in 0..kept.chunks {
            match state.store.media_chunk(&kept.id, seq).await {
                Ok(Some(chunk)) => {
                    streamed.update(&chunk);
                    if seq + 1 == kept.chunks && std::mem::take(&mut streamed).hex() != digest {
                        tracing::error!(
                            image = %kept.id,
                            "a kept image's bytes do not match its link's digest: altered in the database"
                        );
                        sender
                            .abort(format!("image {} does not match its link", kept.id))
                            .await;
                        return;
                    }
                    if sender.send(bytes::Bytes::from(chunk)).await.is_err() {
                        return; // The client left.
                    }
                }
                Ok(None) => {
                    sender.abort(format!("image {} was pruned", kept.id)).await;
                    return;
                }
                Err(e) => {
                    sender
                        .abort(format!("reading image {}: {e}", kept.id))
                        .await;
                    return;
                }
            }
        }
    });
    head.body(body)
        .map_err(|e| ApiError::internal("answering with the image", e))
}

/// A signed link's `expires` and `signature`, or a 403 saying it is incomplete.
fn link_parts(uri: &http::Uri) -> Result<(i64, String), ApiError> {
    let query = uri.query().unwrap_or_default();
    let expires =
        tollgate_request::auth::query_param(query, "expires").and_then(|v| v.parse::<i64>().ok());
    let signature = tollgate_request::auth::query_param(query, "signature");
    match (expires, signature) {
        (Some(expires), Some(signature)) => Ok((expires, signature)),
        _ => Err(forbidden(
            "This media link is incomplete: it needs expires and signature",
        )),
    }
}

/// A link's check as the client reads it: a 403 saying why (`lasts`: how long links last).
fn refused(checked: Result<(), LinkError>, lasts: &str) -> Result<(), ApiError> {
    match checked {
        Ok(()) => Ok(()),
        Err(LinkError::BadSignature) => Err(forbidden(
            "This media link is not valid: its signature does not match",
        )),
        Err(LinkError::Expired) => {
            Err(forbidden(&format!("This media link has expired ({lasts})")))
        }
    }
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
    .parameter(query("signature", "Signature"))
}

/// `GET /v1/media/images/{file}`, in the OpenAPI document.
pub fn about_image() -> About {
    About::new(
        "A drawn image through a signed link (an images call's `url` answer)",
        "images",
        json!({
            "200": {"description": "The image", "content": {
                "image/png": binary(), "image/jpeg": binary(), "image/webp": binary(),
            }},
        }),
    )
    .param("file", "ID.png")
    .parameter(query("expires", "Unix seconds"))
    .parameter(query("digest", "The image's digest"))
    .parameter(query("signature", "Signature"))
}
