//! Native text generation (docs/api.md §2.9, §4.10–4.11, §5; wire-formats §6):
//! `POST /v1beta/models/{model}:generateContent`, `:streamGenerateContent` (`alt=sse`: events
//! relayed as they arrive; without it the vendor's JSON-array form, all at once), `:countTokens`
//! (no charge), and the model list — also under `/v1/models/…`, where the vendor's SDK calls.
//!
//! The client's body is forwarded as it came (after it was decoded and validated), so fields the
//! gateway does not model — tools and their schemas, safety settings, thought signatures — reach
//! the upstream intact.

use crate::generation::NativeSse;
use crate::generation::{self, generate_whole, hold_prompt, limits_of, native_model};
use crate::translate::native as translate;
use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use serde_json::json;
use tollgate_exchange::body::{self, ResponseBody};
use tollgate_exchange::errors::ApiError;
use tollgate_exchange::response::UpstreamTime;
use tollgate_exchange::route_doc::{About, ok, query_as, r};
use tollgate_native_genai::{CountTokensRequest, GenerateContentRequest};
use tollgate_request::auth;
use tollgate_request::context::RequestCtx;
use tollgate_request::policy;
use tollgate_request::routes;
use tollgate_settings::config::ModelKind;
use tollgate_store::Principal;

/// How `generateContent`'s answer is delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// `:generateContent`: one JSON response.
    Whole,
    /// `:streamGenerateContent?alt=sse`: events as they arrive.
    Events,
    /// `:streamGenerateContent` without `alt=sse`: the vendor's JSON array, all at once (docs/api.md §4
    /// rule 3).
    Array,
}

/// `:generateContent`.
pub async fn generate(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    generate_as(ctx, principal, request, Delivery::Whole).await
}

/// `:streamGenerateContent`: events with `alt=sse`, the vendor's JSON array without (whose
/// errors the service wraps in an array too: the row's `error_shape`).
pub async fn stream(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let query = request.uri().query().unwrap_or_default();
    let delivery = match auth::query_param(query, "alt").as_deref() {
        Some("sse") => Delivery::Events,
        _ => Delivery::Array,
    };
    generate_as(ctx, principal, request, delivery).await
}

/// The request flow of DESIGN §2, top to bottom.
async fn generate_as(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
    delivery: Delivery,
) -> Result<Response<ResponseBody>, ApiError> {
    let (parts, body) = request.into_parts();
    let state = ctx.state.clone();
    let _query = parts.uri.query().unwrap_or_default();

    // 3. The body, kept as sent, and decoded to be checked.
    body::require_json(&parts.headers)?;
    let raw = body::read_limited(&parts.headers, body, ctx.body_bounds()).await?;
    let request: GenerateContentRequest = body::decode_json(&raw)?;

    // 4. The model from the path, and the request against its limits.
    let (model, _) = routes::native_model(parts.uri.path());
    let (entry, model_limits) = native_model(&ctx.settings.catalog, model)?;
    let valid = tollgate_native_genai::validate(&request, &model_limits)?;

    // 5. The hold: the prompt as measured and the most the request can produce.
    let (_, held, charge) = hold_prompt(
        &ctx,
        &principal,
        &entry,
        &model_limits,
        request,
        raw.len(),
        &valid,
    )
    .await?;

    // 6–8.
    match delivery {
        Delivery::Events => {
            generation::stream_events(&ctx, &entry, raw, held, charge, NativeSse).await
        }
        Delivery::Whole | Delivery::Array => {
            let (bytes, upstream_time) = generate_whole(&state, &entry, raw, held, charge).await?;
            let body = if delivery == Delivery::Array {
                // The array form of one response: what the vendor sends for a stream of one.
                let mut array = Vec::with_capacity(bytes.len() + 2);
                array.push(b'[');
                array.extend_from_slice(bytes.trim_ascii());
                array.push(b']');
                Bytes::from(array)
            } else {
                bytes
            };
            let mut response = Response::new(body::full(body));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json; charset=UTF-8"),
            );
            response
                .extensions_mut()
                .insert(UpstreamTime(upstream_time));
            Ok(response)
        }
    }
}

/// `:countTokens`: the upstream's count, without a charge.
pub async fn count_tokens(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let (parts, body) = request.into_parts();
    let _query = parts.uri.query().unwrap_or_default();
    body::require_json(&parts.headers)?;
    let raw = body::read_limited(&parts.headers, body, ctx.body_bounds()).await?;
    let request: CountTokensRequest = body::decode_json(&raw)?;
    if request.contents.as_ref().is_none_or(Vec::is_empty)
        && request.generate_content_request.is_none()
    {
        return Err(ApiError::invalid(
            "contents",
            "required",
            "'contents' (or 'generateContentRequest') is required",
        ));
    }
    let (model, _) = routes::native_model(parts.uri.path());
    let (entry, _) = native_model(&ctx.settings.catalog, model)?;
    crate::admission::admit_model(&principal, &entry.public)?;
    let (counted, took) = generation::count_tokens(&ctx, &entry, raw).await?;
    let mut response = body::json_response(StatusCode::OK, &counted);
    response.extensions_mut().insert(took);
    Ok(response)
}

/// `GET /v1beta/models` (and `GET /v1/models` with a native client's key header): the native
/// models, in the vendor's shape.
pub async fn list_models(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let _query = request.uri().query().unwrap_or_default();
    let models: Vec<_> = ctx
        .settings
        .catalog
        .models()
        .into_iter()
        .filter(|m| {
            matches!(m.kind, ModelKind::NativeText | ModelKind::NativeImages)
                && policy::may_use_model(&principal, &m.public)
        })
        .map(|m| translate::model_object(m, limits_of(m).as_ref()))
        .collect();
    Ok(body::json_response(
        StatusCode::OK,
        &serde_json::json!({ "models": models }),
    ))
}

/// `GET …/models/{model}`: one native model.
pub async fn get_model(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let _query = request.uri().query().unwrap_or_default();
    let (model, _) = routes::native_model(request.uri().path());
    let bare = model.strip_prefix("models/").unwrap_or(model);
    if let Some(imagen) = ctx.settings.catalog.resolve(bare, ModelKind::NativeImages) {
        crate::admission::admit_model(&principal, &imagen.public)?;
        return Ok(body::json_response(
            StatusCode::OK,
            &translate::model_object(imagen, None),
        ));
    }
    let (entry, model_limits) = native_model(&ctx.settings.catalog, model)?;
    crate::admission::admit_model(&principal, &entry.public)?;
    Ok(body::json_response(
        StatusCode::OK,
        &translate::model_object(&entry, Some(&model_limits)),
    ))
}

/// `GET /v1beta/models/{model}` (and `/v1/models/{model}`), in the OpenAPI document.
pub fn about_model() -> About {
    About::new("One native model", "native", ok(r("NativeModel"))).param("model", "A model")
}

/// `GET /v1beta/models`, in the OpenAPI document.
pub fn about_list_models() -> About {
    About::new("Native models", "native", ok(r("NativeModelList")))
}

/// `POST /v1beta/models/{model}:generateContent`, in the OpenAPI document.
pub fn about_generate() -> About {
    About::native_model(
        "Native text generation",
        ok(r("GenerateContentResponse")),
        r("GenerateContentRequest"),
    )
}

/// `POST /v1beta/models/{model}:streamGenerateContent`, in the OpenAPI document.
pub fn about_stream() -> About {
    About::native_model(
        "Native text generation, streamed (SSE with alt=sse)",
        json!({"200": {"description": "SSE frames with alt=sse, else a JSON array", "content": {
            "application/json": {"schema": {"type": "array", "items": r("GenerateContentResponse")}},
        }}}),
        r("GenerateContentRequest"),
    )
    .parameter(query_as(
        "alt",
        "sse for a stream",
        json!({"type": "string", "enum": ["sse"]}),
    ))
}

/// `POST /v1beta/models/{model}:countTokens`, in the OpenAPI document.
pub fn about_count_tokens() -> About {
    About::native_model(
        "Count tokens (not billed)",
        ok(r("CountTokensResponse")),
        json!({"type": "object"}),
    )
}
