//! `POST /v1/audio/speech` (docs/api.md §2.1, §4.1; wire-formats §1.1): OpenAI-compatible speech,
//! synthesized by any speech channel (`t2a`, `openai-speech`) through the speech seam.

use crate::speech_relay;
use http::{Request, Response};
use hyper::body::Incoming;
use serde_json::json;
use tollgate_compat_audio::SpeechRequest;
use tollgate_compat_audio::speech::validate;
use tollgate_exchange::body::{self, ResponseBody};
use tollgate_exchange::errors::ApiError;
use tollgate_exchange::route_doc::{About, binary};
use tollgate_request::context::RequestCtx;
use tollgate_store::Principal;

/// The request flow of DESIGN §2, top to bottom.
pub async fn create(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let (parts, body) = request.into_parts();

    // 3. The body, under the endpoint's limit, decoded and checked.
    let (request, _): (SpeechRequest, _) =
        body::read_json(ctx.body_bounds(), &parts.headers, body).await?;
    validate(&request).map_err(ApiError::from)?;

    // 4–8: the speech pipeline, in the compat format (`translate::speech`).
    speech_relay::serve(ctx, principal, request).await
}

/// `POST /v1/audio/speech`, in the OpenAPI document.
pub fn about() -> About {
    About::new(
        "Speech synthesis (OpenAI format)",
        "speech",
        json!({"200": {
            "description": "The audio (or SSE with `stream_format: sse`)",
            "content": {
                "audio/mpeg": binary(),
                "audio/wav": binary(),
                "audio/flac": binary(),
                "audio/pcm": binary(),
            },
        }}),
    )
    .posting("SpeechRequest")
}
