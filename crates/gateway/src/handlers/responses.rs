//! `POST /v1/responses` for native models (the OpenAI Responses API; `docs/decisions.md`, "The
//! Responses bridge"): the request is translated to a native one, sent through the native
//! channel, and the answer translated back — whole, or as the Responses stream's events. Billing
//! is the native endpoint's, as for the chat bridge.

use crate::generation;
use http::{Request, Response};
use hyper::body::Incoming;
use serde_json::json;
use tollgate_gateway_core::body::{self, ResponseBody};
use tollgate_gateway_core::context::RequestCtx;
use tollgate_gateway_core::errors::ApiError;
use tollgate_gateway_core::route_doc::{About, r};
use tollgate_native_genai::responses::ResponsesRequest;
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
