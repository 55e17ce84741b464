//! Operational endpoints and the answers for routes that are not built yet.

use crate::auth;
use crate::body::{self, ResponseBody};
use crate::errors::{ApiError, ErrorKind, Family};
use crate::handlers::Context;
use http::{Request, Response, StatusCode, header};
use hyper::body::Incoming;
use serde_json::json;

/// `GET /healthz`: the process is alive.
pub fn healthz() -> Response<ResponseBody> {
    body::json_response(StatusCode::OK, &json!({"status": "ok"}))
}

/// `GET /readyz`: the store answers and shutdown has not begun.
pub async fn readyz(ctx: &Context) -> Response<ResponseBody> {
    if ctx.state.is_draining() {
        return body::json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({"status": "draining"}),
        );
    }
    match ctx.state.store.ping().await {
        Ok(()) => body::json_response(StatusCode::OK, &json!({"status": "ready"})),
        Err(e) => {
            tracing::warn!(error = %e, "readiness check failed");
            body::json_response(
                StatusCode::SERVICE_UNAVAILABLE,
                &json!({"status": "store unreachable"}),
            )
        }
    }
}

/// `GET /metrics`: Prometheus text.
pub fn metrics(ctx: &Context) -> Response<ResponseBody> {
    let mut text = ctx.state.metrics.render();
    ctx.state.ledger.render_metrics(&mut text);
    ctx.state.quotas.render_metrics(&mut text);
    crate::channels::render_metrics(&ctx.state.catalog.channels(), &mut text);
    let mut response = Response::new(body::full(text));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; version=0.0.4"),
    );
    response
}

/// `GET /v1/models`: the public models and their aliases, in OpenAI's list shape (what OpenAI
/// clients call to discover models; an alias is accepted everywhere a model is).
pub async fn list_models(
    ctx: Context,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let principal = auth::authenticate(&ctx, Family::OpenAi, request.headers(), None).await?;
    let catalog = &ctx.state.catalog;
    let data: Vec<_> = catalog
        .client_names()
        .into_iter()
        .filter(|name| {
            catalog
                .lookup(name)
                .is_some_and(|entry| auth::may_use_model(&principal, &entry.public))
        })
        .map(model_object)
        .collect();
    Ok(body::json_response(
        StatusCode::OK,
        &json!({"object": "list", "data": data}),
    ))
}

/// `GET /v1/models/{model}`: one configured model, OpenAI's shape.
pub async fn get_model(
    ctx: Context,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let principal = auth::authenticate(&ctx, Family::OpenAi, request.headers(), None).await?;
    let id = crate::routes::last_segment(request.uri().path());
    let entry = ctx.state.catalog.lookup(id).ok_or_else(|| {
        ApiError::new(
            ErrorKind::NotFound,
            format!("The model '{id}' does not exist"),
        )
        .code("model_not_found")
    })?;
    auth::admit_model(&principal, &entry.public)?;
    Ok(body::json_response(StatusCode::OK, &model_object(id)))
}

/// OpenAI's model object for a name a client may use.
fn model_object(id: &str) -> serde_json::Value {
    json!({"id": id, "object": "model", "created": 0, "owned_by": "tollgate"})
}

/// `/v1/audio/translations` (docs/api.md §4 rule 5): 404, not 501 — the OpenAI SDKs retry every 5xx
/// (three round trips and a back-off to learn the same thing) and none of them retries a 404.
pub fn translations_unsupported() -> ApiError {
    ApiError::new(
        ErrorKind::NotFound,
        "Speech translation (/v1/audio/translations) is not supported; use /v1/audio/transcriptions",
    )
    .code("unsupported_endpoint")
}
