//! `POST /v1/t2a_v2` (docs/api.md §2.4, §4.3; wire-formats §3): the vendor format relayed faithfully
//! to a `t2a` channel — one JSON with hex audio, or SSE frames whose last has `data.status = 2`
//! and the usage. Errors are `base_resp` bodies with the vendor's codes and an honest status.

use crate::auth;
use crate::body::{self, ResponseBody};
use crate::charge::HeldCharge;
use crate::config::ModelKind;
use crate::errors::{ApiError, Family};
use crate::handlers::{Context, UpstreamTime};
use crate::limits;
use crate::relay;
use crate::speech_relay::{self, AudioShape};
use crate::stream_body;
use crate::translate::speech::{self as translate, encoders};
use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use std::time::Instant;
use tollgate_billing::{Usage, speech_characters};
use tollgate_compat_audio::AudioFormat;
use tollgate_vendor_audio::t2a::validate;
use tollgate_vendor_audio::{T2aFormat, T2aRequest};

/// The request flow of DESIGN §2, top to bottom.
pub async fn create(
    ctx: Context,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let (parts, body) = request.into_parts();
    let state = ctx.state.clone();

    // 2. Who is calling.
    let principal = auth::authenticate(&ctx, Family::T2a, &parts.headers, None).await?;

    // 3. The body, under the endpoint's limit, decoded and checked.
    let (request, _): (T2aRequest, _) =
        body::read_json(&state, limits::Endpoint::T2a, &parts.headers, body).await?;
    validate(&request).map_err(ApiError::from)?;

    // 4. The model.
    let entry = state.catalog.require(&request.model, ModelKind::Speech)?;

    // 5. The hold.
    let characters = speech_characters(&request.text);
    let held = HeldCharge::place(
        &state,
        &principal,
        &entry,
        &Usage::Characters(characters),
        &ctx.request_id,
    )
    .await?
    // The text is here: no upstream can justify more characters than it has.
    .bounded_by_estimate();

    // 6–8.
    let upstream = translate::t2a_upstream(&request, &entry);
    if !request.is_stream() {
        let (_, answer, upstream_time) =
            speech_relay::synthesize_whole(state.clone(), entry, held, upstream, characters)
                .await?;
        let mut response = body::json_response(StatusCode::OK, &answer);
        response
            .extensions_mut()
            .insert(UpstreamTime(upstream_time));
        return Ok(response);
    }

    crate::quotas::open_stream(&state)?;
    let started = Instant::now();
    let (first, frames) = match speech_relay::open(&state, &entry, &upstream).await {
        Ok(opened) => opened,
        Err(e) => {
            held.release(&format!("upstream failed before the first byte: {e}"));
            return Err(relay::upstream_error(&e));
        }
    };
    let first_frame_time = started.elapsed();
    let (sender, body) = stream_body::channel();
    let shape = AudioShape {
        format: match request.format() {
            T2aFormat::Mp3 => AudioFormat::Mp3,
            T2aFormat::Pcm => AudioFormat::Pcm,
            T2aFormat::Flac => AudioFormat::Flac,
            T2aFormat::Wav => AudioFormat::Wav,
        },
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
        // The client's own request goes upstream as it is: its final frame repeats the whole
        // audio unless it asked otherwise.
        final_repeats_audio: !upstream.excludes_aggregated_audio(),
    };
    crate::spawn_for_request(speech_relay::relay(
        held,
        first,
        frames,
        sender,
        encoders::T2aFrames,
        characters,
        shape,
    ));
    Ok(crate::handlers::sse_response(body, first_frame_time))
}
