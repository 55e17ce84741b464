//! `POST /v1/audio/transcriptions` (docs/api.md §2.2, §2.3, §4.2; wire-formats §1.2): OpenAI-compatible
//! recognition, performed by any recognition channel (`stt`, `openai-transcription`) through the
//! recognition seam.

use crate::recognition;
use http::{Request, Response};
use hyper::body::Incoming;
use serde_json::json;
use tollgate_compat_audio::TranscriptionParams;
use tollgate_compat_audio::transcription::validate;
use tollgate_exchange::body::ResponseBody;
use tollgate_exchange::errors::ApiError;
use tollgate_exchange::route_doc::{About, multipart, r, text};
use tollgate_request::context::RequestCtx;
use tollgate_store::Principal;

/// The request flow of DESIGN §2, top to bottom.
pub async fn create(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let (parts, body) = request.into_parts();

    // 3. The form, streamed: the file spooled under its limit, the fields checked.
    let form = recognition::read_form(&ctx, &principal, &parts.headers, body).await?;
    let params = TranscriptionParams::from_fields(form.field_pairs()).map_err(ApiError::from)?;
    validate(&params).map_err(ApiError::from)?;

    // 4–8: the recognition pipeline, in the compat format (`translate::transcription`).
    recognition::serve(ctx, principal, form, params).await
}

/// `POST /v1/audio/transcriptions`, in the OpenAPI document.
pub fn about() -> About {
    About::new(
        "Speech recognition (OpenAI format, multipart)",
        "recognition",
        json!({"200": {"description": "By response_format", "content": {
            "application/json": {"schema": {"anyOf": [r("TranscriptionJson"), r("TranscriptionVerbose")]}},
            "text/plain": text(),
        }}}),
    )
    .body(multipart(json!({
        "model": {"type": "string", "examples": ["whisper-1", "asr-1.0"]},
        "file": {"type": "string", "format": "binary"},
        "response_format": {"type": "string", "enum": ["json", "verbose_json", "srt", "vtt", "text"]},
        "language": {"type": "string"},
        "timestamp_granularities[]": {"type": "string"},
        "stream": {"type": "boolean"},
    })))
}
