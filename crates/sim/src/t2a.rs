//! Simulated `t2a_v2` (wire-formats §3): real audio from [`crate::audio`] in the asked format,
//! sample rate, channels and speed, hex-encoded; `usage_characters` counts CJK characters twice
//! (the vendor's billing rule). A stream splits the audio into several frames sent over time
//! (the `frame_interval_ms` knob), separated by CRLF blank lines as some vendor deployments do,
//! ending with a `status: 2` frame that carries `extra_info` — and the whole audio again unless
//! `stream_options.exclude_aggregated_audio` is set, as the vendor does. Errors are HTTP 200 with
//! a non-zero `base_resp`, as the vendor's are.

use crate::audio::{self, AudioFormat, Synthesis};
use bytes::Bytes;
use tollgate_vendor_audio::base_resp::codes;
use tollgate_vendor_audio::t2a::{ExtraInfo, T2aData, validate};
use tollgate_vendor_audio::{T2aFormat, T2aRequest, T2aResponse};

/// What the handler does with a request.
pub(crate) enum Answer {
    /// One JSON body.
    Whole(Box<T2aResponse>),
    /// SSE frames, each already encoded, with the knobs' pacing and faults.
    Stream(Vec<Bytes>),
}

/// Decodes, validates and synthesizes.
pub(crate) async fn respond(body: &[u8]) -> Answer {
    let request: T2aRequest = match serde_json::from_slice(body) {
        Ok(r) => r,
        Err(e) => {
            return refuse(codes::INVALID_PARAMETERS, format!("invalid params: {e}"));
        }
    };
    if let Err(e) = validate(&request) {
        return refuse(codes::INVALID_PARAMETERS, e.message);
    }
    let format = match request.format() {
        T2aFormat::Mp3 => AudioFormat::Mp3,
        T2aFormat::Wav => AudioFormat::Wav,
        T2aFormat::Flac => AudioFormat::Flac,
        T2aFormat::Pcm => AudioFormat::Pcm,
    };
    let setting = request.audio_setting.clone().unwrap_or_default();
    let synthesis = Synthesis {
        format,
        sample_rate: request.sample_rate(),
        channels: u16::from(setting.channel.unwrap_or(1)),
        bitrate: audio::effective_mp3_bitrate(
            request.sample_rate(),
            setting.bitrate.unwrap_or(audio::DEFAULT_MP3_BITRATE),
        ),
        speed: request
            .voice_setting
            .as_ref()
            .and_then(|v| v.speed)
            .unwrap_or(1.0),
    };
    let text = request.text.clone();
    let made = {
        let synthesis = synthesis.clone();
        tokio::task::spawn_blocking(move || audio::synthesize(&text, &synthesis)).await
    };
    let file = match made {
        Ok(Ok(file)) => file,
        Ok(Err(e)) => {
            return refuse(codes::INVALID_PARAMETERS, e.to_string());
        }
        Err(e) => return refuse(codes::UNKNOWN, e.to_string()),
    };
    let extra = ExtraInfo {
        audio_length: Some(audio::duration_for(&request.text, synthesis.speed).as_millis() as u64),
        audio_sample_rate: Some(synthesis.sample_rate),
        audio_size: Some(file.len() as u64),
        bitrate: Some(synthesis.bitrate),
        word_count: Some(request.text.split_whitespace().count() as u64),
        invisible_character_ratio: Some(0.0),
        usage_characters: Some(tollgate_billing::speech_characters(&request.text)),
        audio_format: Some(request.format().as_str().to_owned()),
        audio_channel: Some(setting.channel.unwrap_or(1)),
    };
    let trace_id = Some(trace_id(&request.text));
    if !request.is_stream() {
        let mut whole = T2aResponse::success(T2aData::finished(&file));
        whole.extra_info = Some(extra);
        whole.trace_id = trace_id;
        return Answer::Whole(Box::new(whole));
    }
    // About four frames a second of audio, at least 4 and at most 64.
    let seconds = audio::duration_for(&request.text, synthesis.speed).as_secs_f64();
    let pieces = ((seconds * 4.0).ceil() as usize).clamp(4, 64);
    let size = file.len().div_ceil(pieces).max(1);
    let mut frames: Vec<Bytes> = file
        .chunks(size)
        .map(|chunk| {
            let mut frame = T2aResponse::success(T2aData::chunk(chunk));
            frame.trace_id = trace_id.clone();
            encode_frame(&frame)
        })
        .collect();
    let aggregated: &[u8] = if request.excludes_aggregated_audio() {
        &[]
    } else {
        &file
    };
    let mut last = T2aResponse::success(T2aData::finished(aggregated));
    last.extra_info = Some(extra);
    last.trace_id = trace_id;
    frames.push(encode_frame(&last));
    Answer::Stream(frames)
}

/// A vendor-style refusal: HTTP 200 with a non-zero `base_resp`.
fn refuse(code: i64, message: impl Into<String>) -> Answer {
    Answer::Whole(Box::new(T2aResponse::error(code, message)))
}

/// The frame sent when the `error_after_frames` knob strikes.
pub(crate) fn error_frame() -> Bytes {
    encode_frame(&T2aResponse::error(
        codes::UNKNOWN,
        "simulated failure mid-stream",
    ))
}

/// A vendor-style refusal for the `fail_status` knob.
pub(crate) fn failure(status: u16) -> T2aResponse {
    let code = match status {
        429 => codes::RATE_LIMIT,
        401 | 403 => codes::AUTH,
        400 => codes::INVALID_PARAMETERS,
        _ => codes::UNKNOWN,
    };
    T2aResponse::error(code, format!("simulated upstream failure ({status})"))
}

fn encode_frame(frame: &T2aResponse) -> Bytes {
    // CRLF framing on purpose: clients must accept it (wire-formats §3.3).
    let json = serde_json::to_string(frame).unwrap_or_default();
    Bytes::from(format!("data: {json}\r\n\r\n"))
}

fn trace_id(text: &str) -> String {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("sim-{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn whole_answers_carry_hex_audio_and_cjk_aware_usage() {
        let body = br#"{"model":"speech-2.8-hd","text":"\u4f60\u597d, world","voice_setting":{"voice_id":"v"},"audio_setting":{"format":"wav","sample_rate":16000}}"#;
        let Answer::Whole(r) = respond(body).await else {
            panic!("expected a whole answer")
        };
        assert!(r.base_resp.is_success(), "{:?}", r.base_resp);
        assert_eq!(r.usage_characters(), Some(11));
        let audio = r.data.unwrap().audio_bytes().unwrap();
        assert_eq!(&audio[..4], b"RIFF");
        assert_eq!(audio::embedded_text(&audio).as_deref(), Some("你好, world"));
    }

    #[tokio::test]
    async fn streams_split_the_audio_and_end_with_usage() {
        let body = br#"{"model":"m","text":"hello there, a short sentence","stream":true,"stream_options":{"exclude_aggregated_audio":true},"voice_setting":{"voice_id":"v"}}"#;
        let Answer::Stream(frames) = respond(body).await else {
            panic!("expected a stream")
        };
        assert!(frames.len() >= 5);
        let last = String::from_utf8(frames.last().unwrap().to_vec()).unwrap();
        assert!(last.starts_with("data: ") && last.ends_with("\r\n\r\n"));
        let last: T2aResponse =
            serde_json::from_str(last.trim_start_matches("data: ").trim()).unwrap();
        assert!(last.is_final());
        assert_eq!(last.data.as_ref().unwrap().audio, "");
        assert_eq!(last.usage_characters(), Some(29));
    }

    #[tokio::test]
    async fn invalid_requests_are_2013_at_http_200() {
        let Answer::Whole(r) = respond(br#"{"model":"m","text":""}"#).await else {
            panic!()
        };
        assert_eq!(r.base_resp.status_code, 2013);
    }
}
