//! Simulated OpenAI audio (wire-formats §1.1, §1.2), the `openai-speech` and
//! `openai-transcription` channel formats.
//!
//! `POST /v1/audio/speech`: a JSON request checked with the compat rules, real audio from
//! [`crate::audio`] at OpenAI's 24 kHz (opus and aac as mp3), the body streamed in pieces paced
//! by the knobs — or, with `stream_format: "sse"`, `speech.audio.delta` events and a
//! `speech.audio.done` whose usage counts the input characters.
//!
//! `POST /v1/audio/transcriptions`: a multipart form checked with the compat rules, the file
//! probed and recognised as [`crate::stt`] does (the text a simulated synthesis embedded, or a
//! placeholder); `verbose_json` (segments, and words when asked), `json` (`text` alone, as
//! whisper-1 answers — no duration), `text`, `srt`, `vtt`; a stream as `transcript.text.delta`
//! events per sentence and a `transcript.text.done` with `usage {type: duration, seconds}`.
//! Errors are OpenAI's `{error: {message, type, param, code}}` with a real HTTP status.

use crate::audio::{self, AudioFormat, Synthesis};
use bytes::Bytes;
use serde_json::json;
use tollgate_compat_audio::speech::validate as validate_speech;
use tollgate_compat_audio::transcription::validate as validate_transcription;
use tollgate_compat_audio::{
    SpeechRequest, SpeechStreamEvent, SpeechUsage, StreamFormat, TranscriptionFormat,
    TranscriptionParams,
};
use tollgate_vendor_audio::SttError;

/// OpenAI's speech comes at 24 kHz.
const SAMPLE_RATE: u32 = 24_000;

/// What the handler does with a request.
pub(crate) enum Answer {
    /// A body with its `Content-Type`, HTTP 200.
    Whole {
        content_type: &'static str,
        body: Bytes,
    },
    /// Pieces of a body of this `Content-Type`, paced and faulted by the knobs.
    Stream {
        content_type: &'static str,
        pieces: Vec<Bytes>,
    },
    /// An OpenAI-style error body with this HTTP status.
    Refused(u16, serde_json::Value),
}

fn refused(status: u16, param: Option<&str>, message: impl Into<String>) -> Answer {
    let kind = if status >= 500 {
        "server_error"
    } else {
        "invalid_request_error"
    };
    Answer::Refused(
        status,
        json!({"error": {"message": message.into(), "type": kind, "param": param, "code": null}}),
    )
}

fn refused_by(error: (u16, SttError)) -> Answer {
    Answer::Refused(error.0, serde_json::to_value(&error.1).unwrap_or_default())
}

/// `POST /v1/audio/speech`.
pub(crate) async fn speech(body: &[u8]) -> Answer {
    let request: SpeechRequest = match serde_json::from_slice(body) {
        Ok(r) => r,
        Err(e) => return refused(400, None, format!("invalid JSON body: {e}")),
    };
    if let Err(e) = validate_speech(&request) {
        return refused(400, Some(e.field.as_str()), e.message);
    }
    let synthesis = Synthesis {
        format: match request.served_format() {
            tollgate_compat_audio::AudioFormat::Mp3 => AudioFormat::Mp3,
            tollgate_compat_audio::AudioFormat::Wav => AudioFormat::Wav,
            tollgate_compat_audio::AudioFormat::Flac => AudioFormat::Flac,
            tollgate_compat_audio::AudioFormat::Pcm => AudioFormat::Pcm,
        },
        sample_rate: SAMPLE_RATE,
        channels: 1,
        bitrate: audio::effective_mp3_bitrate(SAMPLE_RATE, audio::DEFAULT_MP3_BITRATE),
        speed: request.speed_or_default(),
    };
    let text = request.input.clone();
    let made = tokio::task::spawn_blocking(move || audio::synthesize(&text, &synthesis)).await;
    let file = match made {
        Ok(Ok(file)) => file,
        Ok(Err(e)) => return refused(400, Some("input"), e.to_string()),
        Err(e) => return refused(500, None, e.to_string()),
    };
    // About four pieces a second of audio, at least 4 and at most 64.
    let seconds = audio::duration_for(&request.input, request.speed_or_default()).as_secs_f64();
    let count = ((seconds * 4.0).ceil() as usize).clamp(4, 64);
    let size = file.len().div_ceil(count).max(1);
    let pieces = file.chunks(size);
    if request.stream_format_or_default() == StreamFormat::Sse {
        let characters = request.input.chars().count() as u64;
        let mut events: Vec<Bytes> = pieces
            .map(|piece| event(&SpeechStreamEvent::delta(piece)))
            .collect();
        events.push(event(&SpeechStreamEvent::done(SpeechUsage::new(
            characters, 0,
        ))));
        return Answer::Stream {
            content_type: "text/event-stream",
            pieces: events,
        };
    }
    Answer::Stream {
        content_type: request.served_format().content_type(),
        pieces: pieces.map(Bytes::copy_from_slice).collect(),
    }
}

/// `POST /v1/audio/transcriptions`; `content_type` is the request's header.
pub(crate) async fn transcription(content_type: Option<&str>, body: Bytes) -> Answer {
    let form = match crate::stt::read_form(content_type, body).await {
        Ok(form) => form,
        Err(e) => return refused_by(e),
    };
    let fields = form.fields.iter().map(|(n, v)| (n.as_str(), v.as_str()));
    let params = match TranscriptionParams::from_fields(fields) {
        Ok(p) => p,
        Err(e) => return refused(400, Some(e.field.as_str()), e.message),
    };
    if let Err(e) = validate_transcription(&params) {
        return refused(400, Some(e.field.as_str()), e.message);
    }
    let Some(file) = form.file else {
        return refused(400, Some("file"), "'file' is required");
    };
    let (text, seconds) = match crate::stt::examine(file).await {
        Ok(found) => found,
        Err(e) => return refused_by(e),
    };
    let duration = crate::stt::round_ms(seconds);
    let billed = seconds.ceil() as u64;
    let pieces = crate::stt::sentences(&text);
    if params.stream {
        let mut events: Vec<Bytes> = pieces
            .iter()
            .map(|p| event(&json!({"type": "transcript.text.delta", "delta": p})))
            .collect();
        events.push(event(&json!({
            "type": "transcript.text.done", "text": text,
            "usage": {"type": "duration", "seconds": billed}
        })));
        return Answer::Stream {
            content_type: "text/event-stream",
            pieces: events,
        };
    }
    let words = params.wants_words();
    let segments = crate::stt::segments(&text, &pieces, seconds, words);
    let transcript = crate::stt::transcript(&text, duration, &segments);
    let whole = |content_type, body: String| Answer::Whole {
        content_type,
        body: Bytes::from(body),
    };
    match params.response_format {
        TranscriptionFormat::Json => whole("application/json", json!({"text": text}).to_string()),
        TranscriptionFormat::Text => whole("text/plain; charset=utf-8", format!("{text}\n")),
        TranscriptionFormat::Srt => whole("text/plain; charset=utf-8", transcript.to_srt()),
        TranscriptionFormat::Vtt => whole("text/vtt; charset=utf-8", transcript.to_vtt()),
        TranscriptionFormat::VerboseJson => {
            let segments: Vec<serde_json::Value> = segments
                .iter()
                .map(|s| {
                    json!({"id": s.id, "seek": 0, "start": s.start, "end": s.end,
                        // Whisper's segments start with a space.
                        "text": format!(" {}", s.text), "tokens": [], "temperature": 0.0,
                        "avg_logprob": -0.2, "compression_ratio": 1.2, "no_speech_prob": 0.01})
                })
                .collect();
            let mut body = json!({
                "task": "transcribe",
                "language": params.language.as_deref().unwrap_or("english"),
                "duration": duration, "text": text, "segments": segments,
            });
            if words {
                body["words"] = transcript
                    .words
                    .iter()
                    .map(|w| json!({"word": w.word, "start": w.start, "end": w.end}))
                    .collect();
            }
            whole("application/json", body.to_string())
        }
    }
}

fn event<T: serde::Serialize>(value: &T) -> Bytes {
    let json = serde_json::to_string(value).unwrap_or_default();
    Bytes::from(format!("data: {json}\n\n"))
}
