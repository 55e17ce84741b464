//! Native text generation (docs/api.md §2.9, §4.10–4.11, §5; wire-formats §6):
//! `POST /v1beta/models/{model}:generateContent`, `:streamGenerateContent` (`alt=sse`: events
//! relayed as they arrive; without it the vendor's JSON-array form, all at once), `:countTokens`
//! (no charge), and the model list — also under `/v1/models/…`, where the vendor's SDK calls.
//!
//! The client's body is forwarded as it came (after it was decoded and validated), so fields the
//! gateway does not model — tools and their schemas, safety settings, thought signatures — reach
//! the upstream intact.

use crate::auth;
use crate::body::{self, ResponseBody};
use crate::charge::HeldCharge;
use crate::config::ModelKind;
use crate::errors::{ApiError, ErrorKind, Family};
use crate::handlers::{Context, UpstreamTime, sse_response};
use crate::limits;
use crate::native_relay::{self, NativeSse};
use crate::relay;
use crate::routes;
use crate::state::State;
use crate::stream_body;
use crate::translate::native as translate;
use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use std::sync::Arc;
use tollgate_billing::Usage;
use tollgate_native_genai::models::ModelLimits;
use tollgate_native_genai::{CountTokensRequest, GenerateContentRequest, GenerateContentResponse};
use tollgate_store::Principal;
use tollgate_upstream::genai::FrameStream;

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

/// `:generateContent` and `:streamGenerateContent`.
pub async fn generate(
    ctx: Context,
    principal: Principal,
    request: Request<Incoming>,
    streaming: bool,
) -> Result<Response<ResponseBody>, ApiError> {
    let delivery = delivery(&request, streaming);
    match generate_as(ctx, principal, request, delivery).await {
        Err(e) if delivery == Delivery::Array => Ok(array_error(&e)),
        other => other,
    }
}

/// How the answer to `request` is delivered.
fn delivery(request: &Request<Incoming>, streaming: bool) -> Delivery {
    let query = request.uri().query().unwrap_or_default();
    match (streaming, auth::query_param(query, "alt").as_deref()) {
        (false, _) => Delivery::Whole,
        (true, Some("sse")) => Delivery::Events,
        (true, _) => Delivery::Array,
    }
}

/// A refusal of `:streamGenerateContent` before its handler ran (authentication): in the array
/// form it is wrapped in an array, as every error of that form.
pub fn refused_stream(
    request: &Request<Incoming>,
    e: ApiError,
) -> Result<Response<ResponseBody>, ApiError> {
    match delivery(request, true) {
        Delivery::Array => Ok(array_error(&e)),
        _ => Err(e),
    }
}

/// In the array form the vendor wraps errors in an array too (wire-formats §6.3).
fn array_error(e: &ApiError) -> Response<ResponseBody> {
    let status = e.clone().into_response(Family::Google).status();
    let mut response = body::json_response(status, &[e.body(Family::Google)]);
    if let Some(seconds) = e.retry_after
        && let Ok(v) = HeaderValue::from_str(&seconds.to_string())
    {
        response.headers_mut().insert(header::RETRY_AFTER, v);
    }
    response
}

/// The request flow of DESIGN §2, top to bottom.
async fn generate_as(
    ctx: Context,
    principal: Principal,
    request: Request<Incoming>,
    delivery: Delivery,
) -> Result<Response<ResponseBody>, ApiError> {
    let (parts, body) = request.into_parts();
    let state = ctx.state.clone();
    let _query = parts.uri.query().unwrap_or_default();

    // 3. The body, kept as sent, and decoded to be checked.
    body::require_json(&parts.headers)?;
    let raw = body::read_limited(
        &parts.headers,
        body,
        state.body_bounds(limits::Endpoint::Native),
    )
    .await?;
    let request: GenerateContentRequest = body::decode_json(&raw)?;

    // 4. The model from the path, and the request against its limits.
    let (model, _) = routes::native_model(parts.uri.path());
    let (entry, model_limits) = native_model(&state, model)?;
    let valid = tollgate_native_genai::validate(&request, &model_limits)?;
    let max_output = valid.max_total_output_tokens();

    // 5. The hold: the prompt as measured and the most the request can produce.
    let (_, held, local_input) =
        hold_prompt(&ctx, &principal, &entry, &model_limits, request, max_output).await?;

    // 6–8.
    match delivery {
        Delivery::Events => {
            crate::quotas::open_stream(&state)?;
            let (frames, first_frame) = match open_stream(&state, &entry, raw).await {
                Ok(opened) => opened,
                Err(e) => {
                    held.release(&format!("upstream failed: {e}"));
                    return Err(relay::upstream_error(&e));
                }
            };
            let (sender, body) = stream_body::channel();
            crate::spawn_for_request(native_relay::relay(
                frames,
                sender,
                NativeSse,
                held,
                local_input,
            ));
            Ok(sse_response(body, first_frame))
        }
        Delivery::Whole | Delivery::Array => {
            let (bytes, upstream_time) =
                generate_whole(&state, &entry, raw, held, local_input).await?;
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

/// Step 5 of a native request (and of the chat and Responses bridges): the prompt measured
/// (`translate::estimate_prompt`, on the blocking pool when it carries much inline media),
/// refused when its media alone pass the model's input limit, and held with the most the
/// request can produce (`max_output`, thinking included) — the model's whole input limit
/// when a part cannot be measured (`docs/decisions.md`, "Bounded settlement"). Hands the
/// request back, with the hold and the prompt's local count.
pub async fn hold_prompt(
    ctx: &Context,
    principal: &Principal,
    entry: &Arc<crate::catalog::ModelEntry>,
    limits: &ModelLimits,
    request: GenerateContentRequest,
    max_output: u64,
) -> Result<(GenerateContentRequest, HeldCharge, u64), ApiError> {
    let (request, prompt) =
        if translate::inline_bytes(&request) > translate::MEASURE_ON_BLOCKING_POOL {
            tokio::task::spawn_blocking(move || {
                let prompt = translate::estimate_prompt(&request);
                (request, prompt)
            })
            .await
            .map_err(|e| ApiError::internal("measuring the request's media", e))?
        } else {
            let prompt = translate::estimate_prompt(&request);
            (request, prompt)
        };
    let input_limit = u64::from(limits.input_token_limit);
    if prompt.media > input_limit {
        return Err(ApiError::invalid(
            "contents",
            "too_long",
            format!(
                "The request's media measure {} tokens, more than the {input_limit} the model takes as input",
                prompt.media
            ),
        ));
    }
    if let Some(field) = &prompt.unmeasured {
        tracing::debug!(
            field,
            input_limit,
            "a prompt part cannot be measured: held up to the model's input limit"
        );
    }
    let estimate = Usage::TextTokens {
        input: prompt.hold_tokens(input_limit),
        output: max_output,
    };
    let held = HeldCharge::place(&ctx.state, principal, entry, &estimate, &ctx.request_id).await?;
    Ok((request, held, prompt.local()))
}

/// Opens the upstream's event stream through the model's channels: the events, and the time the
/// response head took.
pub async fn open_stream(
    state: &Arc<State>,
    entry: &Arc<crate::catalog::ModelEntry>,
    raw: Bytes,
) -> Result<(FrameStream, std::time::Duration), tollgate_upstream::UpstreamError> {
    let opened = relay::with_failover(entry, |channel, endpoint| {
        let (state, raw, model) = (state.clone(), raw.clone(), entry.upstream_model.clone());
        async move {
            let started = std::time::Instant::now();
            channel
                .text_generator()?
                .stream(&state.http, &endpoint, &model, raw)
                .await
                .map(|frames| (frames, started.elapsed()))
        }
    })
    .await?;
    Ok(opened.0)
}

/// Steps 6–8 of a whole answer, run to completion even if the client goes away (the upstream
/// bills the work once it has the request): the upstream's bytes and time, after settling.
pub async fn generate_whole(
    state: &Arc<State>,
    entry: &Arc<crate::catalog::ModelEntry>,
    raw: Bytes,
    held: HeldCharge,
    local_input: u64,
) -> Result<(Bytes, std::time::Duration), ApiError> {
    let (state, entry) = (state.clone(), entry.clone());
    crate::spawn_for_request(async move {
        let called = relay::with_failover(&entry, |channel, endpoint| {
            let (state, raw, model) = (state.clone(), raw.clone(), entry.upstream_model.clone());
            async move {
                channel
                    .text_generator()?
                    .generate(&state.http, &endpoint, &model, raw)
                    .await
            }
        })
        .await;
        let answer = match called {
            Ok((answer, _)) => answer,
            Err(e) => {
                tracing::warn!(error = %e, "native upstream failed");
                held.release(&format!("upstream failed: {e}"));
                return Err(relay::upstream_error(&e));
            }
        };
        let response: GenerateContentResponse = match serde_json::from_slice(&answer.body) {
            Ok(r) => r,
            Err(e) => {
                // The client gets nothing usable, so it pays nothing.
                tracing::error!(error = %e, "the upstream's answer is not a generateContent response");
                held.release("upstream answer unreadable");
                return Err(ApiError::new(
                    ErrorKind::UpstreamFailed,
                    "The upstream's answer could not be read; the request was not charged",
                ));
            }
        };
        let (usage, basis) = translate::settled_usage(
            response.usage_metadata.as_ref(),
            local_input,
            &translate::delivered_text(&response),
        );
        held.settle(&usage, basis).await?;
        Ok((answer.body, answer.upstream_time))
    })
    .await
    .map_err(|e| ApiError::internal("relaying the request", e))?
}

/// `:countTokens`: the upstream's count, without a charge.
pub async fn count_tokens(
    ctx: Context,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let (parts, body) = request.into_parts();
    let state = ctx.state.clone();
    let _query = parts.uri.query().unwrap_or_default();
    body::require_json(&parts.headers)?;
    let raw = body::read_limited(
        &parts.headers,
        body,
        state.body_bounds(limits::Endpoint::Native),
    )
    .await?;
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
    let (entry, _) = native_model(&state, model)?;
    auth::admit_model(&principal, &entry.public)?;
    let (answer, _) = relay::with_failover(&entry, |channel, endpoint| {
        let (state, raw, model) = (state.clone(), raw.clone(), entry.upstream_model.clone());
        async move {
            channel
                .text_generator()?
                .count_tokens(&state.http, &endpoint, &model, raw)
                .await
        }
    })
    .await
    .map_err(|e| relay::upstream_error(&e))?;
    let mut response = Response::new(body::full(answer.body));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=UTF-8"),
    );
    response
        .extensions_mut()
        .insert(UpstreamTime(answer.upstream_time));
    Ok(response)
}

/// `GET /v1beta/models` (and `GET /v1/models` with a native client's key header): the native
/// models, in the vendor's shape.
pub async fn list_models(
    ctx: Context,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let _query = request.uri().query().unwrap_or_default();
    let models: Vec<_> = ctx
        .state
        .catalog
        .models()
        .into_iter()
        .filter(|m| m.kind == ModelKind::NativeText && auth::may_use_model(&principal, &m.public))
        .map(|m| translate::model_object(m, limits_of(m).as_ref()))
        .collect();
    Ok(body::json_response(
        StatusCode::OK,
        &serde_json::json!({ "models": models }),
    ))
}

/// `GET …/models/{model}`: one native model.
pub async fn get_model(
    ctx: Context,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let _query = request.uri().query().unwrap_or_default();
    let (model, _) = routes::native_model(request.uri().path());
    let (entry, model_limits) = native_model(&ctx.state, model)?;
    auth::admit_model(&principal, &entry.public)?;
    Ok(body::json_response(
        StatusCode::OK,
        &translate::model_object(&entry, Some(&model_limits)),
    ))
}

/// Whether a request carries a native client's credential (`x-goog-api-key`,
/// `x-vendor-api-key` or `?key=`), which decides the shape of `GET /v1/models[/…]`.
pub fn is_native_client(request: &Request<Incoming>) -> bool {
    let headers = request.headers();
    headers.contains_key("x-goog-api-key")
        || headers.contains_key("x-vendor-api-key")
        || request
            .uri()
            .query()
            .is_some_and(|q| auth::query_param(q, "key").is_some())
}

/// A configured native model and its limits; an unknown one is the vendor's 404.
pub fn native_model(
    state: &State,
    model: &str,
) -> Result<(Arc<crate::catalog::ModelEntry>, ModelLimits), ApiError> {
    let model = model.strip_prefix("models/").unwrap_or(model);
    let entry = state
        .catalog
        .resolve(model, ModelKind::NativeText)
        .cloned()
        .ok_or_else(|| {
            ApiError::new(
                ErrorKind::NotFound,
                format!(
                    "models/{model} is not found, or is not a text-generation model served here"
                ),
            )
        })?;
    let mut model_limits = limits_of(&entry).unwrap_or_default();
    if let Some(max) = entry.max_input_tokens {
        model_limits.input_token_limit = u32::try_from(max).unwrap_or(u32::MAX);
    }
    Ok((entry, model_limits))
}

/// The limits of a model's row in the table (by its upstream id, then its public one).
fn limits_of(entry: &crate::catalog::ModelEntry) -> Option<ModelLimits> {
    tollgate_native_genai::models::limits(&entry.upstream_model)
        .or_else(|| tollgate_native_genai::models::limits(&entry.public))
}
