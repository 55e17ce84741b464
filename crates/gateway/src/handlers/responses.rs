//! `POST /v1/responses` for native models (the OpenAI Responses API; `docs/decisions.md`, "The
//! Responses bridge"): the request is translated to a native one, sent through the native
//! channel, and the answer translated back — whole, or as the Responses stream's events. Billing
//! is the native endpoint's, as for the chat bridge. `POST /v1/responses/input_tokens` counts
//! what such a request would send, translated the same way, by the model's channel.

use crate::generation::{self, Bridge};
use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use serde_json::json;
use tollgate_exchange::body::{self, ResponseBody};
use tollgate_exchange::errors::ApiError;
use tollgate_exchange::route_doc::{About, ok, r};
use tollgate_native_genai::responses::{InputTokens, ResponsesRequest};
use tollgate_native_genai::{CountTokensRequest, validate};
use tollgate_request::context::RequestCtx;
use tollgate_store::Principal;

/// The request flow of DESIGN §2, top to bottom.
pub async fn create(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let (parts, body) = request.into_parts();

    // 3. The body.
    let (request, size): (ResponsesRequest, _) =
        body::read_json(ctx.body_bounds(), &parts.headers, body).await?;

    // 4–8: the bridge onto native generation, in the Responses format (`translate::responses`).
    generation::bridge(ctx, principal, request, size).await
}

/// `POST /v1/responses/input_tokens`: the input tokens of a Responses request — translated and
/// checked as [`create`] would, counted by the model's channel (the native `countTokens`). Not
/// billed, as the native count is not; the model rule applies.
pub async fn input_tokens(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let (parts, body) = request.into_parts();

    // 3. The body.
    let (request, _): (ResponsesRequest, _) =
        body::read_json(ctx.body_bounds(), &parts.headers, body).await?;

    // 4. The model, and the access policies' model rule.
    let (entry, limits) = generation::bridged_model(&ctx.settings.catalog, request.model())?;
    crate::admission::admit_model(&principal, &entry.public)?;

    // 5. The native request, under the native rules; no hold: a count is free.
    let native = request.to_native(&limits)?;
    validate(&native, &limits)?;
    let count = CountTokensRequest::whole(native, &entry.upstream_model);
    let raw =
        serde_json::to_vec(&count).map_err(|e| ApiError::internal("translating the request", e))?;

    // 6. The count, from the model's channels in turn.
    let (counted, took) = generation::count_tokens(&ctx, &entry, raw.into()).await?;

    // 7. The answer, in the Responses format: only the count crosses from the vendor.
    let mut response = body::json_response(StatusCode::OK, &InputTokens::new(counted.total_tokens));
    response.extensions_mut().insert(took);
    Ok(response)
}

/// `POST /v1/responses/input_tokens`, in the OpenAPI document.
pub fn about_input_tokens() -> About {
    About::new(
        "A Responses request's input tokens, counted by the model's channel (not billed)",
        "native",
        ok(r("ResponsesInputTokens")),
    )
    .posting("ResponsesRequest")
}

/// `POST /v1/responses`, in the OpenAPI document.
pub fn about() -> About {
    About::new(
        "The Responses API with a native model",
        "native",
        json!({"200": {"description": "A response, or SSE events with stream", "content": {
            "application/json": {"schema": r("ResponsesResponse")},
        }}}),
    )
    .posting("ResponsesRequest")
}
