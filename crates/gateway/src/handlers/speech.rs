//! `POST /v1/audio/speech` (docs/api.md §2.1, §4.1; wire-formats §1.1): OpenAI-compatible speech,
//! synthesized by any speech channel (`t2a`, `openai-speech`) through the speech seam.

use crate::charge::HeldCharge;
use crate::relay;
use crate::speech_relay::{self, AudioShape};
use crate::translate::speech::{self as translate, encoders};
use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use std::time::{Duration, Instant};
use tollgate_billing::{Usage, speech_characters};
use tollgate_compat_audio::speech::validate;
use tollgate_compat_audio::{
    AudioFormat, SpeechRequest, SpeechStreamEvent, SpeechUsage, StreamFormat,
};
use tollgate_gateway_core::body::{self, ResponseBody};
use tollgate_gateway_core::config::ModelKind;
use tollgate_gateway_core::context::RequestCtx;
use tollgate_gateway_core::errors::ApiError;
use tollgate_gateway_core::response::UpstreamTime;
use tollgate_gateway_core::stream_body;
use tollgate_store::Principal;

/// The bitrate of MP3 the channel produces when none is asked (the vendor's default).
const DEFAULT_MP3_BITRATE: u32 = 128_000;

/// The request flow of DESIGN §2, top to bottom.
pub async fn create(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let (parts, body) = request.into_parts();
    let state = ctx.state.clone();

    // 3. The body, under the endpoint's limit, decoded and checked.
    let (request, _): (SpeechRequest, _) =
        body::read_json(ctx.body_bounds(), &parts.headers, body).await?;
    validate(&request).map_err(ApiError::from)?;

    // 4. The model (aliases such as tts-1 resolve here).
    let entry = ctx
        .settings
        .catalog
        .require(&request.model, ModelKind::Speech)?;

    // 5. The hold: the local character count, CJK counting 2 (docs/api.md §8 rule 1).
    let characters = speech_characters(&request.input);
    let held = HeldCharge::place(&ctx, &principal, &entry, &Usage::Characters(characters))
        .await?
        // The text is here: no upstream can justify more characters than it has.
        .bounded_by_estimate();

    // 6–8. Synthesize, relay, settle.
    let format = request.served_format();
    let sse = request.stream_format_or_default() == StreamFormat::Sse;
    let sample_rate = translate::sample_rate(format, &ctx.settings.speech);

    if !translate::upstream_streams(format) {
        // wav comes whole; it is at most 2,000 characters.
        let synthesis = translate::synthesis(&request, &entry, &ctx.settings.speech, false);
        let (whole, _, upstream_time) =
            speech_relay::synthesize_whole(state.clone(), entry, held, synthesis, characters)
                .await?;
        let audio = whole.audio;
        let body = if sse {
            let mut events = sse_event(&SpeechStreamEvent::delta(&audio)).to_vec();
            events.extend_from_slice(&sse_event(&SpeechStreamEvent::done(SpeechUsage::new(
                characters, 0,
            ))));
            Bytes::from(events)
        } else {
            audio
        };
        return Ok(respond(
            body::full(body),
            sse,
            format,
            sample_rate,
            upstream_time,
        ));
    }

    let synthesis = translate::synthesis(&request, &entry, &ctx.settings.speech, true);
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
        format,
        sample_rate,
        bitrate: DEFAULT_MP3_BITRATE,
        speed: request.speed_or_default(),
    };
    if sse {
        crate::trace::spawn_for_request(speech_relay::relay(
            held,
            first,
            frames,
            sender,
            encoders::CompatSse,
            characters,
            shape,
        ));
    } else {
        crate::trace::spawn_for_request(speech_relay::relay(
            held,
            first,
            frames,
            sender,
            encoders::RawAudio,
            characters,
            shape,
        ));
    }
    Ok(respond(body, sse, format, sample_rate, first_frame_time))
}

fn respond(
    body: ResponseBody,
    sse: bool,
    format: AudioFormat,
    sample_rate: u32,
    upstream_time: Duration,
) -> Response<ResponseBody> {
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    let content_type = if sse {
        "text/event-stream"
    } else {
        format.content_type()
    };
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if sse {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    }
    // pcm has no header of its own: say what it is.
    headers.insert("x-audio-format", HeaderValue::from_static(format.as_str()));
    if let Ok(v) = HeaderValue::from_str(&sample_rate.to_string()) {
        headers.insert("x-audio-sample-rate", v);
    }
    headers.insert("x-audio-channels", HeaderValue::from_static("1"));
    if format == AudioFormat::Pcm {
        headers.insert("x-audio-encoding", HeaderValue::from_static("s16le"));
    }
    response
        .extensions_mut()
        .insert(UpstreamTime(upstream_time));
    response
}

fn sse_event(event: &SpeechStreamEvent) -> Bytes {
    tollgate_sse::Event::data(serde_json::to_string(event).unwrap_or_default()).encode()
}
