//! `/v1/videos`: the OpenAI Videos API (docs/api.md §2.8.1) on every video model, in OpenAI's
//! shapes. A task made here is readable only here (its store `format` is `openai`); it is
//! priced, held, polled and settled as its model's family's tasks are.

use crate::tasks::{self, Submission};
use crate::translate::openai_video as translate;
use crate::translate::video;
use http::{HeaderValue, Request, Response, StatusCode};
use hyper::body::Incoming;
use serde_json::json;
use std::sync::Arc;
use tollgate_exchange::body::{self, ResponseBody};
use tollgate_exchange::errors::{ApiError, ErrorKind};
use tollgate_exchange::route_doc::{
    About, binary, described, json_body, ok, ok_json, query, query_as, r,
};
use tollgate_generic_tasks::spec;
use tollgate_openai_videos::{
    Checked, CreateVideoBody, RemixBody, Variant, VideoDeleted, VideoList,
};
use tollgate_request::context::RequestCtx;
use tollgate_settings::catalog::ModelEntry;
use tollgate_settings::config::ModelKind;
use tollgate_store::{Principal, Store, TaskFilter, TaskState};
use tollgate_upstream::registry;
use tollgate_upstream::seams::tasks::TaskRequest;

/// How long the OpenAI SDKs are told to wait between polls (`openai-poll-after-ms`): the
/// gateway's own limit (`tasks::MIN_CLIENT_POLL_INTERVAL`).
const POLL_AFTER_MS: &str = "1000";

/// `POST /v1/videos`: the request flow of DESIGN §2, top to bottom.
pub async fn create(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let (parts, body) = request.into_parts();

    // 3. The body — JSON, or the form the OpenAI SDKs send — under the endpoint's limit, its
    //    fields' form checked.
    let body = read_body(&ctx, &parts.headers, body).await?;
    let checked = body.check()?;
    let reference = input_reference(body.input_reference.as_ref())?;
    let record = serde_json::to_value(&body).unwrap_or_default();
    let origin = ctx.origin(&parts.headers);
    let source = reference.as_deref().map_or(Source::Prompt, Source::Image);
    generate(&ctx, &principal, &origin, &checked, source, record).await
}

/// The image a create starts from: `{"image_url": …}` (an `https` URL or a `data:` image), or
/// the form's file (made a `data:` URL by [`read_body`]). A `file_id` is refused: there is no
/// files API here.
fn input_reference(value: Option<&serde_json::Value>) -> Result<Option<String>, ApiError> {
    let Some(value) = value else {
        return Ok(None);
    };
    match value.get("image_url").and_then(serde_json::Value::as_str) {
        // An inline image is what its bytes are, whatever its label says.
        Some(url)
            if url
                .get(..5)
                .is_some_and(|s| s.eq_ignore_ascii_case("data:")) =>
        {
            let bytes = url
                .split_once(";base64,")
                .and_then(|(_, data)| {
                    use base64::Engine as _;
                    base64::engine::general_purpose::STANDARD.decode(data).ok()
                })
                .ok_or_else(not_an_image)?;
            Ok(Some(sniffed_data_url(&bytes)?))
        }
        Some(url) if !url.is_empty() => Ok(Some(url.to_owned())),
        _ if value.get("file_id").is_some() => Err(ApiError::invalid(
            "input_reference.file_id",
            "unsupported_value",
            "'input_reference.file_id' is not supported: there is no files API here; send 'image_url' (a URL or a data: URL) or the image as a form file",
        )),
        _ => Err(ApiError::invalid(
            "input_reference",
            "invalid_value",
            "'input_reference' is {\"image_url\": \"https://…\" or \"data:image/…;base64,…\"}, or a file in a multipart form",
        )),
    }
}

/// `POST /v1/videos/{id}/remix`: a new video from a completed one's model, seconds and size with
/// a new prompt, held and billed as a new generation. A video of a channel that remixes (a
/// Sora-style vendor) is remixed there, by the vendor's own remix on the same channel; the
/// other models cannot start from an earlier video, so theirs is a new generation from the new
/// prompt (docs/decisions.md, "OpenAI Videos").
pub async fn remix(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
    id: &str,
) -> Result<Response<ResponseBody>, ApiError> {
    let (parts, body) = request.into_parts();
    let (body, _): (RemixBody, _) =
        body::read_json(ctx.body_bounds(), &parts.headers, body).await?;
    let prompt = body.check()?;
    let original = owned(&ctx, &principal, id).await?;
    if original.state != TaskState::Succeeded {
        return Err(ApiError::new(
            ErrorKind::Conflict,
            format!(
                "Video {id} is {}; only a completed video can be remixed",
                video_status(original.state)
            ),
        )
        .param("video_id")
        .code("video_not_completed"));
    }
    let pricing = crate::tasks::record::Pricing::of(&original)
        .map_err(|e| ApiError::internal("reading the video's settings", e))?;
    let checked = Checked {
        model: original.model.clone(),
        prompt,
        seconds: Some(pricing.duration_seconds),
        size: tollgate_openai_videos::Size::from_resolution(
            &pricing.resolution,
            pricing.ratio.as_deref().unwrap_or("16:9"),
        ),
    };
    let record = serde_json::json!({
        "model": checked.model,
        "prompt": checked.prompt,
        "remix_of": id,
    });
    let origin = ctx.origin(&parts.headers);
    generate(
        &ctx,
        &principal,
        &origin,
        &checked,
        Source::Remix(&original),
        record,
    )
    .await
}

/// What a generation starts from besides its prompt.
#[derive(Clone, Copy)]
enum Source<'a> {
    /// The prompt alone.
    Prompt,
    /// An image: an `https` URL or a `data:` URL.
    Image(&'a str),
    /// A completed video of the caller's, remixed.
    Remix(&'a tollgate_store::Task),
}

impl<'a> Source<'a> {
    fn image(self) -> Option<&'a str> {
        match self {
            Source::Image(url) => Some(url),
            _ => None,
        }
    }
}

/// Where a remix of `original` is made: its own channel when that channel remixes (the vendor
/// knows the video there only), as a model of that one channel, with the vendor's id of the
/// video; `None` when it does not.
fn remixed_on(
    ctx: &RequestCtx,
    entry: &ModelEntry,
    original: &tollgate_store::Task,
) -> Option<(Arc<ModelEntry>, String)> {
    let channel = ctx.settings.catalog.channel(&original.channel)?;
    let of = original.upstream_id.clone()?;
    if !registry::video_tasks(channel.format).is_ok_and(|tasks| tasks.remixes()) {
        return None;
    }
    let pinned = ModelEntry::in_order(
        entry.public.clone(),
        entry.kind,
        entry.upstream_model.clone(),
        vec![channel.clone()],
        entry.tariff.clone(),
    );
    Some((Arc::new(pinned), of))
}

/// Steps 4 to 8 of a create or a remix: the model and its row of the table, seconds and size
/// on it; the row and its hold (seconds × unit price); the upstream.
async fn generate(
    ctx: &RequestCtx,
    principal: &Principal,
    origin: &tollgate_settings::media::Origin,
    checked: &Checked,
    source: Source<'_>,
    record: serde_json::Value,
) -> Result<Response<ResponseBody>, ApiError> {
    let reference = source.image();
    let entry = ctx
        .settings
        .catalog
        .lookup(&checked.model)
        .filter(|m| matches!(m.kind, ModelKind::GenericVideo | ModelKind::ClipVideo))
        .cloned()
        .ok_or_else(|| ApiError::unknown_model(&checked.model))?;
    // The family's own checks, quote and upstream request.
    let (quote, upstream) = if entry.kind == ModelKind::ClipVideo {
        // The series is read from the model id, as on the clip API (`handlers::clip_tasks`).
        let model = if tollgate_clip_tasks::series(&entry.public).is_some() {
            &entry.public
        } else {
            &entry.upstream_model
        };
        let request = translate::clip_request(checked, model, reference)?;
        let valid =
            translate::validate_clip(checked, &request, ctx.state.outbound.trusted_hosts())?;
        crate::tasks::inputs::check_hosts_resolve_public(&ctx.state, &request)
            .await
            .map_err(translate::as_input_reference)?;
        (
            crate::translate::clip::quote(&valid)?,
            TaskRequest::Ark(request.for_upstream(&entry.upstream_model)),
        )
    } else {
        let model = spec(&entry.public)
            .or_else(|| spec(&entry.upstream_model))
            .ok_or_else(|| ApiError::unknown_model(&checked.model))?;
        if reference.is_some() {
            return Err(ApiError::invalid(
                "input_reference",
                "unsupported_parameter",
                format!(
                    "'input_reference' is not supported by {}: it makes video from text alone",
                    model.id
                ),
            ));
        }
        let valid = translate::validate(checked, model)?;
        let upstream = video::upstream(
            tollgate_generic_tasks::CreateVideoRequest::new("", &checked.prompt),
            &entry.upstream_model,
            &valid,
        );
        (video::quote(&valid), TaskRequest::Generic(upstream))
    };
    // A remix on a channel that remixes is made there; held as the new generation it is.
    let (entry, upstream) = match source {
        Source::Remix(original) => match remixed_on(ctx, &entry, original) {
            Some((pinned, of)) => (
                pinned,
                TaskRequest::Remix {
                    of,
                    prompt: checked.prompt.clone(),
                },
            ),
            None => (entry, upstream),
        },
        Source::Prompt | Source::Image(_) => (entry, upstream),
    };
    let submission = Submission {
        format: translate::FORMAT,
        id: Store::new_task_id("video"),
        quote,
        request: record,
    };
    let task = tasks::submit(ctx, principal, &entry, submission, upstream).await?;
    // The new row read as any read of it: seconds and size from its pricing, the prompt and
    // the remix's original from its request.
    let answer = translate::record(&task, &ctx.state.media, origin);
    Ok(body::json_response(StatusCode::OK, &answer))
}

/// A create's body: JSON, or `multipart/form-data` with text fields (a file part is refused,
/// naming it: no model takes a reference yet).
async fn read_body(
    ctx: &RequestCtx,
    headers: &http::HeaderMap,
    body: Incoming,
) -> Result<CreateVideoBody, ApiError> {
    let multipart = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().starts_with("multipart/form-data"));
    if !multipart {
        let (body, _) = body::read_json(ctx.body_bounds(), headers, body).await?;
        return Ok(body);
    }
    let bounds = ctx.body_bounds();
    let limits = crate::upload::UploadLimits {
        file_field: "input_reference",
        // A `data:` URL of it stays within the clip format's inline bound.
        file_bytes: (tollgate_media_url::MAX_INLINE_IMAGE_BYTES / 4 * 3) as u64,
        more_files: &[],
        max_more: 0,
        whole_bytes: None,
        field_bytes: 64 << 10,
        max_fields: 16,
        pace: bounds.pace,
    };
    let form = crate::upload::read(headers, body, limits).await?;
    let mut body = CreateVideoBody::from_fields(form.field_pairs());
    if let Some(file) = form.file {
        body.input_reference = Some(serde_json::json!({"image_url": data_url(&file)?}));
    }
    Ok(body)
}

/// A form's image file as a `data:` URL (the clip format takes images inline).
fn data_url(file: &crate::upload::UploadedFile) -> Result<String, ApiError> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    file.data
        .reader()
        .and_then(|mut r| r.read_to_end(&mut bytes))
        .map_err(|e| ApiError::internal("reading the uploaded image", e))?;
    sniffed_data_url(&bytes)
}

/// `bytes` as a `data:` URL of the image type they show (`tollgate_probe::media::image_type`):
/// a label says nothing (issue 42: any bytes passed as `image/png` went on to the vendor).
fn sniffed_data_url(bytes: &[u8]) -> Result<String, ApiError> {
    use base64::Engine as _;
    let content_type = tollgate_probe::media::image_type(bytes).ok_or_else(not_an_image)?;
    Ok(format!(
        "data:{content_type};base64,{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    ))
}

fn not_an_image() -> ApiError {
    ApiError::invalid(
        "input_reference",
        "invalid_value",
        "'input_reference' must be an image (PNG, JPEG, WebP, GIF, BMP or HEIC), read from its bytes",
    )
}

/// `GET /v1/videos/{id}`: the owner's video from the store, at most once a second; the SDKs are
/// told to wait that long.
pub async fn get(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
    id: &str,
) -> Result<Response<ResponseBody>, ApiError> {
    let state = &ctx.state;
    let task = tasks::client_poll(state, &principal, id, translate::FORMAT).await?;
    let video = translate::record(&task, &state.media, &ctx.origin(request.headers()));
    let mut response = body::json_response(StatusCode::OK, &video);
    response.headers_mut().insert(
        "openai-poll-after-ms",
        HeaderValue::from_static(POLL_AFTER_MS),
    );
    Ok(response)
}

/// `GET /v1/videos?after=&limit=&order=`: the account's videos made here, newest first unless
/// `order=asc`, by cursor.
pub async fn list(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let query = request.uri().query().unwrap_or_default();
    let q = |name: &str| tollgate_request::auth::query_param(query, name);
    let limit = match q("limit") {
        None => 20,
        Some(text) => text
            .parse::<i64>()
            .ok()
            .filter(|n| (1..=100).contains(n))
            .ok_or_else(|| {
                ApiError::invalid(
                    "limit",
                    "invalid_value",
                    format!("Invalid 'limit': {text:?}. Expected a whole number from 1 to 100."),
                )
            })?,
    };
    let oldest_first = match q("order").as_deref() {
        None | Some("desc") => false,
        Some("asc") => true,
        Some(other) => {
            return Err(ApiError::invalid(
                "order",
                "invalid_value",
                format!("Invalid 'order': {other:?}. Expected 'asc' or 'desc'."),
            ));
        }
    };
    let filter = TaskFilter {
        format: Some(translate::FORMAT.to_owned()),
        after: q("after"),
        oldest_first,
        ..TaskFilter::default()
    };
    let (_, mut tasks) = ctx
        .state
        .store
        .list_tasks(&principal.account_id, &filter, 0, limit + 1)
        .await
        .map_err(|e| ApiError::internal("listing the videos", e))?;
    let has_more = tasks.len() > usize::try_from(limit).unwrap_or(usize::MAX);
    tasks.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    let origin = ctx.origin(request.headers());
    let data = tasks
        .iter()
        .map(|t| translate::record(t, &ctx.state.media, &origin))
        .collect();
    Ok(body::json_response(
        StatusCode::OK,
        &VideoList::new(data, has_more),
    ))
}

/// `DELETE /v1/videos/{id}`: a finished video removed from its owner's list and content; one
/// still generating is refused (it is charged or refunded when it ends).
pub async fn delete(
    ctx: RequestCtx,
    principal: Principal,
    _request: Request<Incoming>,
    id: &str,
) -> Result<Response<ResponseBody>, ApiError> {
    let task = owned(&ctx, &principal, id).await?;
    if !task.state.is_terminal() {
        return Err(ApiError::new(
            ErrorKind::Conflict,
            format!(
                "Video {id} is still {}; delete it once it has finished",
                video_status(task.state)
            ),
        )
        .param("video_id")
        .code("video_not_finished"));
    }
    ctx.state
        .store
        .hide_task(&task.id, &principal.account_id)
        .await
        .map_err(|e| ApiError::internal("deleting the video", e))?;
    Ok(body::json_response(StatusCode::OK, &VideoDeleted::new(id)))
}

/// `GET /v1/videos/{id}/content?variant=video|thumbnail|spritesheet`: a completed video (or
/// its thumbnail or spritesheet, where its channel makes them), streamed from the upstream with
/// `Range` passed on, never buffered; until its links expire.
pub async fn content(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
    id: &str,
) -> Result<Response<ResponseBody>, ApiError> {
    let query = request.uri().query().unwrap_or_default();
    let asked = tollgate_request::auth::query_param(query, "variant");
    let variant = Variant::parse(asked.as_deref()).ok_or_else(|| {
        ApiError::invalid(
            "variant",
            "invalid_value",
            format!(
                "Invalid 'variant': {:?}. Expected 'video', 'thumbnail' or 'spritesheet'.",
                asked.as_deref().unwrap_or_default()
            ),
        )
    })?;
    let task = owned(&ctx, &principal, id).await?;
    let result = match (task.state, translate::result(&task)) {
        (TaskState::Succeeded, Some(result)) => result,
        _ => {
            return Err(ApiError::new(
                ErrorKind::NotFound,
                format!(
                    "Video {id} has no content: it is {}",
                    video_status(task.state)
                ),
            )
            .param("video_id")
            .code("video_not_ready"));
        }
    };
    let origin = ctx.origin(request.headers());
    let (_, expires) =
        ctx.state
            .media
            .link(&origin, &task.id, result.finished_at, &result.video_url);
    if expires.is_some_and(|at| at < tollgate_journal::clock::unix_now()) {
        return Err(ApiError::new(
            ErrorKind::NotFound,
            format!("Video {id}'s content has expired"),
        )
        .param("video_id")
        .code("video_expired"));
    }
    crate::video_file::stream(&ctx, request.headers(), &task, &result.video_url, variant).await
}

/// `POST /v1/videos/edits`, `/extensions`, `/characters` (and reading a character): the SDKs'
/// newer calls, which none of the video models served here can do — refused with a 400 in
/// OpenAI's shape, which the SDKs do not retry. The body is read (and dropped, up to the
/// route's limit) first: a refusal sent while the client is still writing would reach it as a
/// broken connection instead.
pub async fn unsupported(
    ctx: RequestCtx,
    _principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let path = request.uri().path().to_owned();
    let limit = ctx.body_bounds().limit;
    let mut body = request.into_body();
    let mut seen = 0usize;
    let _ = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        while let Some(Ok(frame)) = http_body_util::BodyExt::frame(&mut body).await {
            seen += frame.data_ref().map_or(0, bytes::Bytes::len);
            if seen > limit {
                break;
            }
        }
    })
    .await;
    let what = if path.contains("/characters") {
        "Video characters are"
    } else if path.ends_with("/extensions") {
        "Extending a video is"
    } else {
        "Editing a video is"
    };
    Err(ApiError::invalid(
        "model",
        "unsupported_operation",
        format!(
            "{what} not supported by the video models this gateway serves; create or remix a video instead"
        ),
    ))
}

/// The caller's video `id` made here, or 404 (another account's, another API's, deleted).
async fn owned(
    ctx: &RequestCtx,
    principal: &Principal,
    id: &str,
) -> Result<tollgate_store::Task, ApiError> {
    let filter = TaskFilter {
        ids: vec![id.to_owned()],
        format: Some(translate::FORMAT.to_owned()),
        ..TaskFilter::default()
    };
    let (_, mut found) = ctx
        .state
        .store
        .list_tasks(&principal.account_id, &filter, 0, 1)
        .await
        .map_err(|e| ApiError::internal("reading the video", e))?;
    found.pop().ok_or_else(|| {
        ApiError::new(
            ErrorKind::NotFound,
            format!("No video found with id '{id}'."),
        )
        .param("video_id")
        .code("video_not_found")
    })
}

/// A state as the `Video` object says it.
fn video_status(state: TaskState) -> &'static str {
    match state {
        TaskState::Submitting | TaskState::Queued => "queued",
        TaskState::Running => "in_progress",
        TaskState::Succeeded => "completed",
        TaskState::Failed => "failed",
    }
}

/// `POST /v1/videos`, in the OpenAPI document.
pub fn about_create() -> About {
    About::new("Create a video (OpenAI Videos API)", "video", ok(r("Video"))).body(json!({
        "required": true,
        "content": {
            "application/json": {"schema": r("CreateVideoBody")},
            "multipart/form-data": {"schema": {
                "type": "object",
                "required": ["prompt"],
                "properties": {
                    "model": {"type": "string"},
                    "prompt": {"type": "string"},
                    "seconds": {"type": "string"},
                    "size": {"type": "string"},
                    "input_reference": {"type": "string", "format": "binary", "description": "An image: a clip model's first frame"},
                },
            }},
        },
    }))
}

/// `GET /v1/videos`, in the OpenAPI document.
pub fn about_list() -> About {
    About::new("The key's account's videos", "video", ok(r("VideoList")))
        .parameter(query("after", "The id of the previous page's last video"))
        .parameter(query_as(
            "limit",
            "1 to 100 (default 20)",
            json!({"type": "integer", "minimum": 1, "maximum": 100}),
        ))
        .parameter(query_as(
            "order",
            "asc or desc (default)",
            json!({"type": "string", "enum": ["asc", "desc"]}),
        ))
}

/// `GET /v1/videos/{video_id}`, in the OpenAPI document.
pub fn about_get() -> About {
    About::new("A video (OpenAI Videos API)", "video", ok(r("Video"))).of_video()
}

/// `DELETE /v1/videos/{video_id}`, in the OpenAPI document.
pub fn about_delete() -> About {
    About::new(
        "Delete a finished video",
        "video",
        json!({
            "200": ok_json(r("VideoDeleted")),
            "409": described(r("OpenAiError"), "The video is still generating"),
        }),
    )
    .of_video()
}

/// `POST /v1/videos/{video_id}/remix`, in the OpenAPI document.
pub fn about_remix() -> About {
    About::new(
        "A new video from a completed one's model, seconds and size, with a new prompt (billed as a new generation)",
        "video",
        json!({
            "200": ok_json(r("Video")),
            "409": described(r("OpenAiError"), "The video is not completed"),
        }),
    )
    .of_video()
    .body(json_body(json!({
        "type": "object",
        "required": ["prompt"],
        "properties": {"prompt": {"type": "string", "minLength": 1, "maxLength": 4000}},
    })))
}

/// `POST /v1/videos/{edits,extensions,characters}`, in the OpenAPI document.
pub fn about_unsupported() -> About {
    About::new(
        "Refused: edits, extensions and characters, which no video model served here can do (400 unsupported_operation)",
        "video",
        json!({}),
    )
}

/// `GET /v1/videos/characters/{character_id}`, in the OpenAPI document.
pub fn about_character() -> About {
    About::new(
        "Refused: no video model served here makes characters (400 unsupported_operation)",
        "video",
        json!({}),
    )
    .param("character_id", "A character's id")
}

/// `GET /v1/videos/{video_id}/content`, in the OpenAPI document.
pub fn about_content() -> About {
    About::new(
        "A finished video's content, streamed (Range supported)",
        "video",
        json!({"200": {"description": "The MP4 (variant=video), the thumbnail (WebP) or the spritesheet (JPEG)",
                       "content": {"video/mp4": binary(), "image/webp": binary(), "image/jpeg": binary()}},
               "206": {"description": "The range asked",
                       "content": {"video/mp4": binary(), "image/webp": binary(), "image/jpeg": binary()}}}),
    )
    .param("video_id", "The video's id")
    .parameter(query_as(
        "variant",
        "video (default); thumbnail and spritesheet where the model makes them",
        json!({"type": "string", "enum": ["video", "thumbnail", "spritesheet"]}),
    ))
}
