//! `POST /v1/t2a_v2` (docs/api.md §2.4, §4.3; wire-formats §3): the vendor format, relayed
//! faithfully by a `t2a` channel and translated for any other speech channel — one JSON with hex
//! audio, or SSE frames whose last has `data.status = 2` and the usage. Errors are `base_resp`
//! bodies with the vendor's codes and an honest status.

use crate::speech_relay;
use http::{Request, Response};
use hyper::body::Incoming;
use serde_json::json;
use tollgate_exchange::body::{self, ResponseBody};
use tollgate_exchange::errors::ApiError;
use tollgate_exchange::route_doc::{About, r};
use tollgate_request::context::RequestCtx;
use tollgate_store::Principal;
use tollgate_vendor_audio::T2aRequest;
use tollgate_vendor_audio::t2a::validate;

/// The request flow of DESIGN §2, top to bottom.
pub async fn create(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let (parts, body) = request.into_parts();

    // 3. The body, under the endpoint's limit, decoded and checked.
    let (request, _): (T2aRequest, _) =
        body::read_json(ctx.body_bounds(), &parts.headers, body).await?;
    validate(&request).map_err(ApiError::from)?;

    // 4–8: the speech pipeline, in the vendor's format (`translate::speech`).
    speech_relay::serve(ctx, principal, request).await
}

/// `POST /v1/t2a_v2`, in the OpenAPI document.
pub fn about() -> About {
    About::new(
        "Speech synthesis (vendor t2a_v2 format: hex audio, SSE)",
        "speech",
        json!({"200": {
            "description": "JSON with hex audio, or SSE chunks; errors also answer 200 with `base_resp`",
            "content": {"application/json": {"schema": r("T2aResponse")}},
        }}),
    )
    .posting("T2aRequest")
}
