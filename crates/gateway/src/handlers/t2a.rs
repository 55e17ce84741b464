//! `POST /v1/t2a_v2` (docs/api.md §2.4, §4.3; wire-formats §3): the vendor format, relayed
//! faithfully by a `t2a` channel and translated for any other speech channel — one JSON with hex
//! audio, or SSE frames whose last has `data.status = 2` and the usage. Errors are `base_resp`
//! bodies with the vendor's codes and an honest status.

use crate::charge::HeldCharge;
use crate::relay;
use crate::speech_relay::{self, AudioShape};
use crate::translate::speech::{self as translate, encoders};
use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use std::time::Instant;
use tollgate_billing::{Usage, speech_characters};
use tollgate_gateway_core::body::{self, ResponseBody};
use tollgate_gateway_core::config::ModelKind;
use tollgate_gateway_core::context::RequestCtx;
use tollgate_gateway_core::errors::ApiError;
use tollgate_gateway_core::response::UpstreamTime;
use tollgate_gateway_core::stream_body;
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
    let state = ctx.state.clone();

    // 3. The body, under the endpoint's limit, decoded and checked.
    let (request, _): (T2aRequest, _) =
        body::read_json(ctx.body_bounds(), &parts.headers, body).await?;
    validate(&request).map_err(ApiError::from)?;

    // 4. The model.
    let entry = ctx
        .settings
        .catalog
        .require(&request.model, ModelKind::Speech)?;

    // 5. The hold.
    let characters = speech_characters(&request.text);
    let held = HeldCharge::place(&ctx, &principal, &entry, &Usage::Characters(characters))
        .await?
        // The text is here: no upstream can justify more characters than it has.
        .bounded_by_estimate();

    // 6–8.
    let synthesis = translate::from_t2a(&request, &entry, &ctx.settings.speech);
    if !request.is_stream() {
        let (whole, charged, upstream_time) = speech_relay::synthesize_whole(
            state.clone(),
            entry,
            held,
            synthesis.clone(),
            characters,
        )
        .await?;
        let answer = translate::t2a_answer(whole, charged, &synthesis);
        let mut response = body::json_response(StatusCode::OK, &answer);
        response
            .extensions_mut()
            .insert(UpstreamTime(upstream_time));
        return Ok(response);
    }

    let permit = crate::admission::open_stream(&ctx)?;
    let started = Instant::now();
    let (first, frames) = match speech_relay::open(&state, &entry, held.usage(), &synthesis).await {
        Ok(opened) => opened,
        Err(e) => {
            held.release(&format!("upstream failed before the first byte: {e}"));
            return Err(relay::upstream_error(&e));
        }
    };
    let first_frame_time = started.elapsed();
    let (sender, body) = stream_body::channel(permit);
    let shape = AudioShape {
        format: synthesis.format,
        sample_rate: request.sample_rate(),
        bitrate: request
            .audio_setting
            .as_ref()
            .and_then(|a| a.bitrate)
            .unwrap_or(128_000),
        speed: request
            .voice_setting
            .as_ref()
            .and_then(|v| v.speed)
            .unwrap_or(1.0),
    };
    crate::trace::spawn_for_request(speech_relay::relay(
        held,
        first,
        frames,
        sender,
        encoders::T2aFrames::new(synthesis),
        characters,
        shape,
    ));
    Ok(tollgate_gateway_core::response::sse_response(
        body,
        first_frame_time,
    ))
}
