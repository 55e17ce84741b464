//! `/api/v3/contents/generations/tasks` (docs/api.md §2.7, §3.1, §4.6–4.7; wire-formats §5): create,
//! get, list and delete clip tasks, in the vendor's own format and error shape.

use crate::tasks::record::unix_seconds;
use crate::tasks::{self, Submission, inputs};
use crate::translate::clip as translate;
use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use serde_json::json;
use tollgate_clip_tasks::{
    CreateTaskRequest, CreateTaskResponse, DeleteEffect, ListQuery, ListResponse, TaskStatus,
    delete_effect, lift_inline_flags, series, validate_reference_seconds, validate_trusting,
};
use tollgate_exchange::body::{self, ResponseBody};
use tollgate_exchange::errors::{ApiError, ErrorKind};
use tollgate_exchange::route_doc::{About, ok, query, query_as, r};
use tollgate_request::context::RequestCtx;
use tollgate_settings::config::ModelKind;
use tollgate_store::Principal;
use tollgate_store::Store;
use tollgate_upstream::registry;
use tollgate_upstream::seams::tasks::{TaskPhase, TaskReport, TaskRequest};

/// `POST`: the request flow of DESIGN §2, top to bottom.
pub async fn create(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let (parts, body) = request.into_parts();
    let state = ctx.state.clone();

    // 3. The body, under the endpoint's limit, decoded; what the SDK sends (explicit nulls,
    // fields we do not model) is accepted.
    let (mut request, _): (CreateTaskRequest, _) =
        body::read_json(ctx.body_bounds(), &parts.headers, body).await?;

    // 4. The model, then every content rule and limit, before any money or upstream call.
    let entry = ctx
        .settings
        .catalog
        .require(&request.model, ModelKind::ClipVideo)?;
    // The series is read from the model id: the public one, or the upstream's when an operator
    // named the public model freely.
    request.model = if series(&entry.public).is_some() {
        entry.public.clone()
    } else {
        entry.upstream_model.clone()
    };
    // Inline prompt flags (`--dur 7`) become the fields they stand for, and leave the prompt.
    lift_inline_flags(&mut request)?;
    let valid = validate_trusting(&request, state.outbound.trusted_hosts())?;
    inputs::check_hosts_resolve_public(&state, &request).await?;
    // A reference video too long by its own header is refused; the hold never trusts one.
    if let Some(seconds) = inputs::reference_video_seconds(&state, &request).await {
        validate_reference_seconds(valid.series, &seconds)?;
    }

    // 5–8. The row and its hold, then the upstream (translate: the body it understands).
    let submission = Submission {
        format: translate::FORMAT,
        id: Store::new_task_id("cgt"),
        quote: translate::quote(&valid)?,
        request: serde_json::to_value(&request).unwrap_or_default(),
    };
    let upstream_request = request.for_upstream(&entry.upstream_model);
    let task = tasks::submit(
        &ctx,
        &principal,
        &entry,
        submission,
        TaskRequest::Ark(upstream_request),
    )
    .await?;

    let answer = CreateTaskResponse::queued(&task.id, &task.model, unix_seconds(task.created_at));
    Ok(body::json_response(StatusCode::OK, &answer))
}

/// `GET /{id}`: the owner's task from the store, at most once a second.
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

/// `GET ?page_num&page_size&filter.*`: the caller's own tasks, newest first.
pub async fn list(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let state = &ctx.state;
    let query = ListQuery::parse(request.uri().query().unwrap_or_default())?;
    let model = query.model.as_ref().map(|m| {
        ctx.settings
            .catalog
            .resolve(m, ModelKind::ClipVideo)
            .map_or_else(|| m.clone(), |e| e.public.clone())
    });
    let filter = translate::list_filter(&query, model);
    let (total, rows) = state
        .store
        .list_tasks(
            &principal.account_id,
            &filter,
            i64::try_from(query.offset()).unwrap_or(i64::MAX),
            i64::from(query.page_size),
        )
        .await
        .map_err(|e| ApiError::internal("listing tasks", e))?;
    let page = ListResponse {
        total: u64::try_from(total).unwrap_or(0),
        items: rows
            .iter()
            .map(|task| translate::record(task, &state.media, &ctx.origin(request.headers())))
            .collect(),
    };
    Ok(body::json_response(StatusCode::OK, &page))
}

/// `DELETE /{id}` (wire-formats §5.3): a queued task is cancelled upstream and refunded; a
/// finished one leaves the caller's view; a running or cancelled one is refused.
pub async fn delete(
    ctx: RequestCtx,
    principal: Principal,
    _request: Request<Incoming>,
    id: &str,
) -> Result<Response<ResponseBody>, ApiError> {
    let state = &ctx.state;
    let filter = tollgate_store::TaskFilter {
        ids: vec![id.to_owned()],
        format: Some(translate::FORMAT.to_owned()),
        ..Default::default()
    };
    let (_, mut visible) = state
        .store
        .list_tasks(&principal.account_id, &filter, 0, 1)
        .await
        .map_err(|e| ApiError::internal("reading the task", e))?;
    let Some(task) = visible.pop() else {
        return Err(tasks::task_not_found(id));
    };
    let status = translate::public_status(&task);
    match delete_effect(&status) {
        DeleteEffect::Remove => {
            state
                .store
                .hide_task(&task.id, &principal.account_id)
                .await
                .map_err(|e| ApiError::internal("removing the task", e))?;
        }
        DeleteEffect::Cancel => return cancel(state, &ctx.settings.catalog, &task, id).await,
        DeleteEffect::Refuse => return Err(not_queued(id, &status)),
    }
    Ok(body::json_response(StatusCode::OK, &serde_json::json!({})))
}

/// A queued task cancelled (`docs/decisions.md`, "Video tasks"). The row was read queued, but
/// the task may have moved on since — started running, or finished — and a cancel sent to a
/// finished task would remove it upstream (the vendor's DELETE of a finished task) and refund
/// work that was done. So: the upstream's record is read first, and only a task still queued
/// there is cancelled; then the row is ended by a compare-and-swap from `queued`, so that only
/// the winner refunds. What the client hears is what happened: cancelled and refunded, refused
/// like any running task, or that it lost the race to completion.
async fn cancel(
    state: &tollgate_request::state::State,
    catalog: &tollgate_settings::catalog::Catalog,
    task: &tollgate_store::Task,
    id: &str,
) -> Result<Response<ResponseBody>, ApiError> {
    let (Some(upstream_id), Some(channel)) =
        (task.upstream_id.as_deref(), catalog.channel(&task.channel))
    else {
        // Still being submitted: its upstream id is not known yet.
        return Err(ApiError::new(
            ErrorKind::RateLimited,
            format!("Task {id} is still being submitted; try again in a second"),
        )
        .retry_after(1));
    };
    let upstream =
        registry::video_tasks(channel.format).map_err(|e| crate::relay::upstream_error(&e))?;
    let report = upstream
        .get(&state.http, &channel.endpoint, upstream_id)
        .await
        .map_err(|e| crate::relay::upstream_error(&e))?
        .body;
    if report.phase != TaskPhase::Queued {
        // It moved on upstream: the poller will record it; the client hears where it is.
        return Err(not_queued(id, &in_ark_terms(&report)));
    }
    upstream
        .cancel(&state.http, &channel.endpoint, upstream_id)
        .await
        .map_err(|e| crate::relay::upstream_error(&e))?;
    let error = serde_json::json!({"code": "cancelled", "message": "the task was cancelled by its owner and refunded"});
    let won = state
        .store
        .cancel_queued_task(&task.id, error)
        .await
        .map_err(|e| ApiError::internal("cancelling the task", e))?;
    if won {
        state.metrics.task_event("cancelled");
        state.metrics.hold_closed("released");
        return Ok(body::json_response(StatusCode::OK, &serde_json::json!({})));
    }
    // Someone else moved the row first (a poller, the sweeper): say where it ended up.
    let now = state
        .store
        .task(&task.id)
        .await
        .map_err(|e| ApiError::internal("reading the task", e))?
        .map(|t| translate::public_status(&t));
    match now {
        // Cancelled all the same (the poller saw the upstream's cancellation), or still on its
        // way to it: the upstream took the cancel, and the refund follows with the row.
        Some(TaskStatus::Cancelled | TaskStatus::Queued | TaskStatus::Running) | None => {
            Ok(body::json_response(StatusCode::OK, &serde_json::json!({})))
        }
        Some(other) => Err(not_queued(id, &other)),
    }
}

/// Where a report says the task is, as an Ark status: the vendor's own word where Ark has it
/// (an `ark` channel's always), otherwise its phase — a running one under the vendor's word.
fn in_ark_terms(report: &TaskReport) -> TaskStatus {
    match TaskStatus::parse(&report.word) {
        TaskStatus::Unknown(word) => match report.phase {
            TaskPhase::Queued => TaskStatus::Queued,
            TaskPhase::Running => TaskStatus::Unknown(word),
            TaskPhase::Succeeded => TaskStatus::Succeeded,
            TaskPhase::Failed => TaskStatus::Failed,
        },
        known => known,
    }
}

/// The refusal of a cancel that found the task no longer queued, in Ark's shape: running like
/// any running task; finished, saying so (and that the work is charged or was refunded).
fn not_queued(id: &str, status: &TaskStatus) -> ApiError {
    let why = match status {
        TaskStatus::Running => "it is running; only a queued task can be cancelled".to_owned(),
        TaskStatus::Succeeded => {
            "it succeeded before it could be cancelled, and is charged; delete it again to remove it from your list".to_owned()
        }
        TaskStatus::Failed | TaskStatus::Expired => {
            format!("it ended {status} before it could be cancelled, and was refunded")
        }
        TaskStatus::Cancelled => "it is already cancelled".to_owned(),
        other => format!("it is {other} upstream; only a queued task can be cancelled"),
    };
    ApiError::invalid(
        "task_id",
        "invalid_state",
        format!("Task {id} cannot be deleted: {why}"),
    )
}

/// `POST /api/v3/contents/generations/tasks`, in the OpenAPI document.
pub fn about_create() -> About {
    About::new(
        "Create a clip-format video task",
        "video",
        ok(r("ClipTaskCreated")),
    )
    .posting("ClipTaskRequest")
}

/// `GET /api/v3/contents/generations/tasks`, in the OpenAPI document.
pub fn about_list() -> About {
    About::new(
        "List the key's account's clip tasks",
        "video",
        ok(r("ClipTaskList")),
    )
    .parameter(query_as(
        "page_num",
        "From 1",
        json!({"type": "integer", "minimum": 1}),
    ))
    .parameter(query_as(
        "page_size",
        "1 to 100",
        json!({"type": "integer", "minimum": 1, "maximum": 100}),
    ))
    .parameter(query("filter.status", "A status"))
    .parameter(query("filter.task_ids", "Task ids"))
    .parameter(query("filter.model", "A model"))
}

/// `GET /api/v3/contents/generations/tasks/{task_id}`, in the OpenAPI document.
pub fn about_get() -> About {
    About::new("A clip task", "video", ok(r("ClipTask"))).of_task()
}

/// `DELETE /api/v3/contents/generations/tasks/{task_id}`, in the OpenAPI document.
pub fn about_delete() -> About {
    About::new(
        "Cancel a queued task (refunded) or remove a finished one from the list",
        "video",
        ok(json!({"type": "object"})),
    )
    .of_task()
}
