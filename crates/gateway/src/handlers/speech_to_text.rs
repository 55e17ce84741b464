//! `POST /v1/speech_to_text` (docs/api.md §2.5, §4.4; wire-formats §4): the vendor format, relayed
//! faithfully by an `stt` channel and translated for any other recognition channel — json,
//! verbose_json, srt or vtt bodies, or its SSE frames.

use crate::charge::HeldCharge;
use crate::recognition;
use crate::relay;
use crate::translate::transcription::{self as translate, encoders};
use http::{HeaderValue, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use tollgate_billing::{Usage, audio_seconds};
use tollgate_gateway_core::body::{self, ResponseBody};
use tollgate_gateway_core::config::ModelKind;
use tollgate_gateway_core::context::RequestCtx;
use tollgate_gateway_core::errors::ApiError;
use tollgate_gateway_core::response::UpstreamTime;
use tollgate_metering::recognition::billed_seconds;
use tollgate_metering::{Basis, Measure};
use tollgate_store::Principal;
use tollgate_upstream::recognition::SttBody;
use tollgate_vendor_audio::stt::{LANGUAGE_HEADER, validate};
use tollgate_vendor_audio::{SttFormat, SttParams};

/// The request flow of DESIGN §2, top to bottom.
pub async fn create(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let (parts, body) = request.into_parts();
    let state = ctx.state.clone();

    // 3. The form, streamed; the language hint is a header (wire-formats §4).
    let mut form = recognition::read_form(&ctx, &principal, &parts.headers, body).await?;
    let language = parts
        .headers
        .get(LANGUAGE_HEADER)
        .and_then(|v| v.to_str().ok());
    let params = SttParams::from_fields(form.field_pairs(), language).map_err(ApiError::from)?;
    validate(&params).map_err(ApiError::from)?;
    let file = recognition::require_file(&mut form)?;

    // 4. The model.
    let entry = ctx
        .settings
        .catalog
        .require(&params.model, ModelKind::Transcription)?;

    // The audio's own duration: the hold, the fallback charge, the 500 s limit.
    let (container, duration) = recognition::probe(&file).await?;
    let probed_seconds = audio_seconds(duration);

    // 5. The hold.
    let held = HeldCharge::place(
        &ctx,
        &principal,
        &entry,
        &Usage::AudioSeconds(probed_seconds),
    )
    .await?
    // The gateway measured the file: the upstream's duration is charged up to it, with one
    // second for a different rounding of the same audio.
    .bounded_by(&Usage::AudioSeconds(probed_seconds.saturating_add(1)));

    // 6–8.
    let upstream = translate::from_stt(&params, &entry);
    let name = recognition::default_name(container);
    if params.stream {
        return recognition::stream_response(
            &ctx,
            &entry,
            &upstream,
            file,
            &name,
            container,
            held,
            encoders::VendorFrames::default(),
            probed_seconds,
        )
        .await;
    }
    // 6–8 run to completion even if the client goes away: the file is uploaded, the upstream
    // recognises it either way.
    relay::to_completion(async move {
        let part = recognition::file_part(&file, container, &name);
        let (answer, held) =
            recognition::transcribe_whole(&state, &entry, &upstream, part, held).await?;
        // The result's duration settles; srt and vtt carry none, so the probe does (no format
        // dodges the charge).
        let result = answer.body;
        let subtitles = matches!(result.stt, Some(SttBody::Subtitles(_)));
        let reported = result.duration.and_then(billed_seconds);
        let (seconds, mut basis) =
            Basis::reported_or_local(reported, probed_seconds, Measure::Probe);
        if subtitles {
            basis = Basis {
                estimated: false,
                note: Some("subtitles carry no duration; charged the probed duration".into()),
                measured: Measure::Probe,
            };
        }
        held.settle(&Usage::AudioSeconds(seconds), basis).await?;
        let covered = result.duration.unwrap_or(duration.as_secs_f64());
        let mut response = match translate::stt_body(result, covered, &params) {
            SttBody::Json(j) => body::json_response(StatusCode::OK, &j),
            SttBody::Verbose(v) => body::json_response(StatusCode::OK, &v),
            SttBody::Subtitles(text) => {
                let mut r = Response::new(body::full(text));
                let content_type = if params.response_format == SttFormat::Vtt {
                    "text/vtt; charset=utf-8"
                } else {
                    "text/plain; charset=utf-8"
                };
                r.headers_mut()
                    .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
                r
            }
        };
        response
            .extensions_mut()
            .insert(UpstreamTime(answer.upstream_time));
        Ok(response)
    })
    .await
}
