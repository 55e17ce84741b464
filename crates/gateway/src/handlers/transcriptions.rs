//! `POST /v1/audio/transcriptions` (docs/api.md §2.2, §2.3, §4.2; wire-formats §1.2): OpenAI-compatible
//! recognition, performed by any recognition channel (`stt`, `openai-transcription`) through the
//! recognition seam.

use crate::charge::HeldCharge;
use crate::recognition;
use crate::relay;
use crate::translate::transcription::{self as translate, encoders};
use http::{HeaderValue, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use tollgate_billing::{Usage, audio_seconds};
use tollgate_compat_audio::TranscriptionParams;
use tollgate_compat_audio::transcription::validate;
use tollgate_gateway_core::body::{self, ResponseBody};
use tollgate_gateway_core::config::ModelKind;
use tollgate_gateway_core::context::RequestCtx;
use tollgate_gateway_core::errors::ApiError;
use tollgate_gateway_core::response::UpstreamTime;
use tollgate_metering::recognition::billed_seconds;
use tollgate_metering::{Basis, Measure};
use tollgate_store::Principal;

/// The request flow of DESIGN §2, top to bottom.
pub async fn create(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let (parts, body) = request.into_parts();
    let state = ctx.state.clone();

    // 3. The form, streamed: the file spooled under its limit, the fields checked.
    let mut form = recognition::read_form(&ctx, &principal, &parts.headers, body).await?;
    let params = TranscriptionParams::from_fields(form.field_pairs()).map_err(ApiError::from)?;
    validate(&params).map_err(ApiError::from)?;
    let file = recognition::require_file(&mut form)?;

    // 4. The model (whisper-1 and the other OpenAI names are aliases).
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
    let upstream = translate::recognition(&params, &entry);
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
            encoders::CompatEvents,
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
        let result = answer.body;
        // docs/api.md §8 rule 2: seconds from the duration in the result, rounded up; the
        // probe is the fallback (and the duration shown) when the upstream reports none.
        let reported = result.duration.and_then(billed_seconds);
        let (seconds, basis) = Basis::reported_or_local(reported, probed_seconds, Measure::Probe);
        let covered = result.duration.unwrap_or(duration.as_secs_f64());
        let transcript = translate::transcript(
            result,
            covered,
            params.language.clone(),
            params.wants_words(),
        );
        held.settle(&Usage::AudioSeconds(seconds), basis).await?;
        let rendered = transcript.render(params.response_format, seconds);
        let mut response = Response::new(body::full(rendered.body));
        *response.status_mut() = StatusCode::OK;
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(rendered.content_type),
        );
        response
            .extensions_mut()
            .insert(UpstreamTime(answer.upstream_time));
        Ok(response)
    })
    .await
}
