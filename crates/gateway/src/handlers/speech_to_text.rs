//! `POST /v1/speech_to_text` (docs/api.md §2.5, §4.4; wire-formats §4): the vendor format, relayed
//! faithfully by an `stt` channel and translated for any other recognition channel — json,
//! verbose_json, srt or vtt bodies, or its SSE frames.

use crate::recognition;
use http::{Request, Response};
use hyper::body::Incoming;
use serde_json::json;
use tollgate_exchange::body::ResponseBody;
use tollgate_exchange::errors::ApiError;
use tollgate_exchange::route_doc::{About, multipart, text};
use tollgate_request::context::RequestCtx;
use tollgate_store::Principal;
use tollgate_vendor_audio::SttParams;
use tollgate_vendor_audio::stt::{LANGUAGE_HEADER, validate};

/// The request flow of DESIGN §2, top to bottom.
pub async fn create(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let (parts, body) = request.into_parts();

    // 3. The form, streamed; the language hint is a header (wire-formats §4).
    let form = recognition::read_form(&ctx, &principal, &parts.headers, body).await?;
    let language = parts
        .headers
        .get(LANGUAGE_HEADER)
        .and_then(|v| v.to_str().ok());
    let params = SttParams::from_fields(form.field_pairs(), language).map_err(ApiError::from)?;
    validate(&params).map_err(ApiError::from)?;

    // 4–8: the recognition pipeline, in the vendor's format (`translate::transcription`).
    recognition::serve(ctx, principal, form, params).await
}

/// `POST /v1/speech_to_text`, in the OpenAPI document.
pub fn about() -> About {
    About::new(
        "Speech recognition (vendor format, multipart)",
        "recognition",
        json!({"200": {"description": "By response_format", "content": {
            "application/json": {"schema": {"type": "object"}},
            "text/plain": text(),
            "text/vtt": text(),
        }}}),
    )
    .body(multipart(json!({
        "model": {"type": "string"},
        "file": {"type": "string", "format": "binary"},
        "response_format": {"type": "string", "enum": ["json", "verbose_json", "srt", "vtt"]},
        "timestamp_level": {"type": "string", "enum": ["sentence", "word"]},
        "stream": {"type": "boolean"},
    })))
    .parameter(json!({"name": "language", "in": "header", "required": false, "schema": {"type": "string"}}))
}
