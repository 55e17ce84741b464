//! `/v1/video/generations` (docs/api.md §2.8, §3.2, §4.8–4.9): create and get generic video tasks, in
//! the OpenAI-style error shape.

use crate::tasks::record::unix_seconds;
use crate::tasks::{self, Submission};
use crate::translate::video as translate;
use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use tollgate_exchange::body::{self, ResponseBody};
use tollgate_exchange::errors::ApiError;
use tollgate_exchange::route_doc::{About, ok, r};
use tollgate_generic_tasks::{CreateVideoRequest, CreateVideoResponse, spec, validate};
use tollgate_request::context::RequestCtx;
use tollgate_settings::config::ModelKind;
use tollgate_store::Principal;
use tollgate_store::Store;
use tollgate_upstream::seams::tasks::TaskRequest;

/// `POST`: the request flow of DESIGN §2, top to bottom.
pub async fn create(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let (parts, body) = request.into_parts();

    // 3. The body, under the endpoint's limit, decoded (`seconds` is `duration`'s alias).
    let (request, _): (CreateVideoRequest, _) =
        body::read_json(ctx.body_bounds(), &parts.headers, body).await?;

    // 4. The model and its row of the parameter table: a parameter it does not take is refused.
    let entry = ctx
        .settings
        .catalog
        .require(&request.model, ModelKind::GenericVideo)?;
    let model = spec(&entry.public)
        .or_else(|| spec(&entry.upstream_model))
        .ok_or_else(|| ApiError::unknown_model(&request.model))?;
    let valid = validate(&request, model)?;

    // 5–8. The row and its hold (seconds × unit price), then the upstream.
    let submission = Submission {
        format: translate::FORMAT,
        id: Store::new_task_id("video"),
        quote: translate::quote(&valid),
        request: serde_json::to_value(&request).unwrap_or_default(),
    };
    let upstream_request = translate::upstream(request, &entry.upstream_model, &valid);
    let task = tasks::submit(
        &ctx,
        &principal,
        &entry,
        submission,
        TaskRequest::Generic(upstream_request),
    )
    .await?;

    let answer = CreateVideoResponse::new(&task.id, &task.model, unix_seconds(task.created_at));
    Ok(body::json_response(StatusCode::OK, &answer))
}

/// `GET /{task_id}`: the owner's task from the store, at most once a second.
pub async fn get(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
    id: &str,
) -> Result<Response<ResponseBody>, ApiError> {
    let state = &ctx.state;
    let task = tasks::client_poll(state, &principal, id, translate::FORMAT).await?;
    let record = translate::record(&task, &state.media, &ctx.origin(request.headers()));
    Ok(body::json_response(StatusCode::OK, &record))
}

/// `POST /v1/video/generations`, in the OpenAPI document.
pub fn about_create() -> About {
    About::new(
        "Create a generic-format video task",
        "video",
        ok(r("VideoTask")),
    )
    .posting("VideoRequest")
}

/// `GET /v1/video/generations/{task_id}`, in the OpenAPI document.
pub fn about_get() -> About {
    About::new("A generic video task", "video", ok(r("VideoTask"))).of_task()
}
