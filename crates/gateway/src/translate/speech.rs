//! Speech: each inbound format ↔ the speech seam ([`Synthesis`],
//! [`AudioChunk`](tollgate_upstream::seams::speech::AudioChunk), [`Synthesized`]), whatever format the
//! channel speaks.
//!
//! From `/v1/audio/speech`:
//! * the model becomes the catalog's upstream id; the voice goes as the client named it, with the
//!   configured default voice for vendors without OpenAI's stock voices (docs/api.md §2.1);
//! * the served format (opus and aac are served as mp3) at the configured sample rate — `pcm`
//!   at `speech.pcm_sample_rate`, OpenAI's 24 kHz by default;
//! * `instructions` goes to vendors that take it.
//!
//! From `/v1/t2a_v2`: the client's own request rides along for a `t2a` channel to send as it is;
//! its text, voice, speed, format and rate fill the seam's fields for any other channel, and the
//! audio comes back as `t2a_v2` frames or one answer built here ([`t2a_answer`]).

use crate::speech_relay::AudioShape;
use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use tollgate_compat_audio::{
    AudioFormat, SpeechRequest, SpeechStreamEvent, SpeechUsage, StreamFormat,
};
use tollgate_exchange::body::{self, ResponseBody};
use tollgate_settings::catalog::ModelEntry;
use tollgate_settings::config::SpeechConfig;
use tollgate_upstream::seams::speech::{Synthesis, Synthesized};
use tollgate_vendor_audio::t2a::{ExtraInfo, T2aData};
use tollgate_vendor_audio::{T2aFormat, T2aRequest, T2aResponse};

/// The bitrate of MP3 the channel produces when none is asked (the vendor's default).
const DEFAULT_MP3_BITRATE: u32 = 128_000;

/// `/v1/audio/speech`'s side of the speech pipeline.
impl crate::speech_relay::Format for SpeechRequest {
    type Events = encoders::CompatEvents;

    fn model(&self) -> &str {
        &self.model
    }

    fn text(&self) -> &str {
        &self.input
    }

    /// wav comes whole (it is at most 2,000 characters); every other format streams.
    fn synthesis(&self, entry: &ModelEntry, settings: &SpeechConfig) -> (Synthesis, bool) {
        let streams = upstream_streams(self.served_format());
        (synthesis(self, entry, settings, streams), streams)
    }

    /// The audio, or for `stream_format=sse` the two events it makes.
    fn whole(
        &self,
        whole: Synthesized,
        _characters: u64,
        _synthesis: &Synthesis,
        settings: &SpeechConfig,
    ) -> Response<ResponseBody> {
        let sse = self.stream_format_or_default() == StreamFormat::Sse;
        let body = if sse {
            // The usage counts the text's characters, as the streamed `done` event does.
            let characters = tollgate_billing::speech_characters(&self.input);
            let mut events = sse_event(&SpeechStreamEvent::delta(&whole.audio)).to_vec();
            events.extend_from_slice(&sse_event(&SpeechStreamEvent::done(SpeechUsage::new(
                characters, 0,
            ))));
            Bytes::from(events)
        } else {
            whole.audio
        };
        respond(self, body::full(body), settings)
    }

    fn events(
        &self,
        _synthesis: &Synthesis,
        settings: &SpeechConfig,
    ) -> (Self::Events, AudioShape) {
        let format = self.served_format();
        let shape = AudioShape {
            format,
            sample_rate: sample_rate(format, settings),
            bitrate: DEFAULT_MP3_BITRATE,
            speed: self.speed_or_default(),
        };
        let events = if self.stream_format_or_default() == StreamFormat::Sse {
            encoders::CompatEvents::Sse(encoders::CompatSse)
        } else {
            encoders::CompatEvents::Raw(encoders::RawAudio)
        };
        (events, shape)
    }

    fn streamed(&self, body: ResponseBody, settings: &SpeechConfig) -> Response<ResponseBody> {
        respond(self, body, settings)
    }
}

/// The answer to `request` over `body`: the audio's type, or an event stream, and what the
/// audio is (pcm has no header of its own).
fn respond(
    request: &SpeechRequest,
    body: ResponseBody,
    settings: &SpeechConfig,
) -> Response<ResponseBody> {
    let format = request.served_format();
    let sse = request.stream_format_or_default() == StreamFormat::Sse;
    let mut response = Response::new(body);
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
    headers.insert("x-audio-format", HeaderValue::from_static(format.as_str()));
    if let Ok(v) = HeaderValue::from_str(&sample_rate(format, settings).to_string()) {
        headers.insert("x-audio-sample-rate", v);
    }
    headers.insert("x-audio-channels", HeaderValue::from_static("1"));
    if format == AudioFormat::Pcm {
        headers.insert("x-audio-encoding", HeaderValue::from_static("s16le"));
    }
    response
}

fn sse_event(event: &SpeechStreamEvent) -> Bytes {
    tollgate_sse::Event::data(serde_json::to_string(event).unwrap_or_default()).encode()
}

/// `/v1/t2a_v2`'s side of the speech pipeline.
impl crate::speech_relay::Format for T2aRequest {
    type Events = encoders::T2aFrames;

    fn model(&self) -> &str {
        &self.model
    }

    fn text(&self) -> &str {
        &self.text
    }

    fn synthesis(&self, entry: &ModelEntry, settings: &SpeechConfig) -> (Synthesis, bool) {
        (from_t2a(self, entry, settings), self.is_stream())
    }

    /// One JSON answer: the vendor's own, or one built like it.
    fn whole(
        &self,
        whole: Synthesized,
        characters: u64,
        synthesis: &Synthesis,
        _settings: &SpeechConfig,
    ) -> Response<ResponseBody> {
        body::json_response(StatusCode::OK, &t2a_answer(whole, characters, synthesis))
    }

    fn events(
        &self,
        synthesis: &Synthesis,
        _settings: &SpeechConfig,
    ) -> (Self::Events, AudioShape) {
        let shape = AudioShape {
            format: synthesis.format,
            sample_rate: self.sample_rate(),
            bitrate: self
                .audio_setting
                .as_ref()
                .and_then(|a| a.bitrate)
                .unwrap_or(DEFAULT_MP3_BITRATE),
            speed: self
                .voice_setting
                .as_ref()
                .and_then(|v| v.speed)
                .unwrap_or(1.0),
        };
        (encoders::T2aFrames::new(synthesis.clone()), shape)
    }

    fn streamed(&self, body: ResponseBody, _settings: &SpeechConfig) -> Response<ResponseBody> {
        tollgate_exchange::response::sse_response(body, std::time::Duration::ZERO)
    }
}

/// Whether the answer can be streamed: `t2a` vendors produce wav only whole (wire-formats
/// §3.1), and its header wants the length, so wav is always made whole.
pub fn upstream_streams(format: AudioFormat) -> bool {
    format != AudioFormat::Wav
}

/// The sample rate an answer in `format` has.
pub fn sample_rate(format: AudioFormat, settings: &SpeechConfig) -> u32 {
    match format {
        AudioFormat::Pcm => settings.pcm_sample_rate,
        _ => settings.sample_rate,
    }
}

/// The seam's synthesis for an OpenAI-compatible request.
pub fn synthesis(
    request: &SpeechRequest,
    entry: &ModelEntry,
    settings: &SpeechConfig,
    stream: bool,
) -> Synthesis {
    let format = request.served_format();
    Synthesis {
        model: entry.upstream_model.clone(),
        text: request.input.clone(),
        voice: request.voice.id().to_owned(),
        default_voice: settings.default_voice.clone(),
        speed: request.speed,
        format,
        sample_rate: sample_rate(format, settings),
        instructions: request.instructions.clone(),
        stream,
        t2a: None,
    }
}

/// The seam's synthesis for a `t2a_v2` request (a `url` output was refused by validation).
pub fn from_t2a(request: &T2aRequest, entry: &ModelEntry, settings: &SpeechConfig) -> Synthesis {
    Synthesis {
        model: entry.upstream_model.clone(),
        text: request.text.clone(),
        voice: request
            .voice_id()
            .map_or_else(|| settings.default_voice.clone(), str::to_owned),
        default_voice: settings.default_voice.clone(),
        speed: request.voice_setting.as_ref().and_then(|v| v.speed),
        format: audio_format(request.format()),
        sample_rate: request.sample_rate(),
        instructions: None,
        stream: request.is_stream(),
        t2a: Some(request.clone()),
    }
}

/// The compat audio format of a `t2a_v2` format.
pub fn audio_format(format: T2aFormat) -> AudioFormat {
    match format {
        T2aFormat::Mp3 => AudioFormat::Mp3,
        T2aFormat::Pcm => AudioFormat::Pcm,
        T2aFormat::Flac => AudioFormat::Flac,
        T2aFormat::Wav => AudioFormat::Wav,
    }
}

/// The `t2a_v2` answer for a whole synthesis: the vendor's own when the channel speaks `t2a`,
/// else one built like it — hex audio, `status: 2`, and `extra_info` with the characters charged.
pub fn t2a_answer(whole: Synthesized, characters: u64, synthesis: &Synthesis) -> T2aResponse {
    if let Some(own) = whole.t2a {
        return own;
    }
    let mut answer = T2aResponse::success(T2aData::finished(&whole.audio));
    answer.extra_info = Some(extra_info(characters, synthesis, whole.audio.len()));
    answer
}

/// `extra_info` for audio made by a channel that is not `t2a`.
fn extra_info(characters: u64, synthesis: &Synthesis, audio_size: usize) -> ExtraInfo {
    ExtraInfo {
        audio_length: None,
        audio_sample_rate: Some(synthesis.sample_rate),
        audio_size: Some(audio_size as u64),
        bitrate: None,
        word_count: Some(synthesis.text.split_whitespace().count() as u64),
        invisible_character_ratio: None,
        usage_characters: Some(characters),
        audio_format: Some(synthesis.format.as_str().to_owned()),
        audio_channel: Some(1),
    }
}

/// The client's side of a relayed synthesis stream, per output format.
pub mod encoders {
    use crate::speech_relay::Encoder;
    use bytes::Bytes;
    use tollgate_compat_audio::{SpeechStreamEvent, SpeechUsage};
    use tollgate_exchange::errors::{ApiError, ErrorKind};
    use tollgate_sse::Event;
    use tollgate_upstream::seams::speech::{AudioChunk, Synthesis};
    use tollgate_vendor_audio::T2aResponse;
    use tollgate_vendor_audio::t2a::{T2aData, T2aFrame};

    /// `/v1/audio/speech`'s stream: events or the audio itself, as `stream_format` asks.
    #[derive(Debug)]
    pub enum CompatEvents {
        /// `stream_format=sse`.
        Sse(CompatSse),
        /// `stream_format=audio`.
        Raw(RawAudio),
    }

    impl Encoder for CompatEvents {
        fn frame(&mut self, frame: &AudioChunk) -> Vec<Bytes> {
            match self {
                CompatEvents::Sse(e) => e.frame(frame),
                CompatEvents::Raw(e) => e.frame(frame),
            }
        }
        fn done(
            &mut self,
            characters: u64,
            charged: Option<tollgate_billing::Amount>,
        ) -> Option<Bytes> {
            match self {
                CompatEvents::Sse(e) => e.done(characters, charged),
                CompatEvents::Raw(e) => e.done(characters, charged),
            }
        }
        fn failed(&mut self, error: &ApiError) -> Option<Bytes> {
            match self {
                CompatEvents::Sse(e) => e.failed(error),
                CompatEvents::Raw(e) => e.failed(error),
            }
        }
    }

    /// `/v1/audio/speech` with `stream_format=audio`: the decoded audio bytes themselves. A cut
    /// stream is aborted, so the client sees an incomplete body rather than a short file.
    #[derive(Debug, Default)]
    pub struct RawAudio;

    impl Encoder for RawAudio {
        fn frame(&mut self, frame: &AudioChunk) -> Vec<Bytes> {
            if frame.audio.is_empty() {
                return Vec::new();
            }
            vec![frame.audio.to_bytes()]
        }
        fn done(
            &mut self,
            _characters: u64,
            _charged: Option<tollgate_billing::Amount>,
        ) -> Option<Bytes> {
            None
        }
        fn failed(&mut self, _error: &ApiError) -> Option<Bytes> {
            None
        }
    }

    /// `/v1/audio/speech` with `stream_format=sse`: `speech.audio.delta` events with base64
    /// audio, then `speech.audio.done` whose usage counts the billed characters as input tokens.
    #[derive(Debug, Default)]
    pub struct CompatSse;

    impl Encoder for CompatSse {
        fn frame(&mut self, frame: &AudioChunk) -> Vec<Bytes> {
            if frame.audio.is_empty() {
                return Vec::new();
            }
            // The event is written around the audio, encoded into it in place: the frame's one
            // copy (docs/benchmarks.md, "Lean streams").
            let (head, tail) = SpeechStreamEvent::DELTA_JSON;
            let base64 = frame.audio.len().div_ceil(3) * 4;
            let mut event =
                String::with_capacity(DATA.len() + head.len() + base64 + tail.len() + 2);
            event.push_str(DATA);
            event.push_str(head);
            frame.audio.push_base64(&mut event);
            event.push_str(tail);
            event.push_str(END);
            vec![Bytes::from(event)]
        }
        fn done(
            &mut self,
            characters: u64,
            charged: Option<tollgate_billing::Amount>,
        ) -> Option<Bytes> {
            let event = SpeechStreamEvent::done(SpeechUsage::new(characters, 0));
            let json = serde_json::to_string(&event).unwrap_or_default();
            Some(Event::data(crate::hold::with_charge(&json, charged)).encode())
        }
        fn failed(&mut self, error: &ApiError) -> Option<Bytes> {
            let event = serde_json::json!({
                "type": "error",
                "error": {"message": error.message, "type": "server_error", "code": "upstream_error"},
            });
            Some(Event::data(event.to_string()).encode())
        }
    }

    /// `/v1/t2a_v2` with `stream: true`: a `t2a` channel's frames as they came — their audio
    /// the vendor's own bytes, the rest written again from what was read; another channel's
    /// audio as frames built like them — hex audio with `status: 1`, then a `status: 2` frame
    /// with `extra_info` once the charge is known; on a cut one more frame whose `base_resp`
    /// carries the error.
    #[derive(Debug)]
    pub struct T2aFrames {
        /// What was asked, for the last frame's `extra_info`.
        synthesis: Synthesis,
        /// Bytes of audio sent in built frames.
        sent: usize,
        /// Frames are being built (the channel is not `t2a`).
        built: bool,
    }

    impl T2aFrames {
        /// The encoder for a stream of `synthesis`.
        pub fn new(synthesis: Synthesis) -> Self {
            T2aFrames {
                synthesis,
                sent: 0,
                built: false,
            }
        }
    }

    impl Encoder for T2aFrames {
        fn frame(&mut self, frame: &AudioChunk) -> Vec<Bytes> {
            if let Some(own) = &frame.t2a {
                return event(own);
            }
            self.built = true;
            if frame.audio.is_empty() {
                return Vec::new();
            }
            self.sent += frame.audio.len();
            let chunk = T2aResponse::success(T2aData::chunk(&[]));
            event(&T2aFrame::new(chunk, frame.audio.to_hex()))
        }
        fn done(
            &mut self,
            characters: u64,
            charged: Option<tollgate_billing::Amount>,
        ) -> Option<Bytes> {
            if !self.built {
                return None;
            }
            let mut last = T2aResponse::success(T2aData::finished(&[]));
            last.extra_info = Some(super::extra_info(characters, &self.synthesis, self.sent));
            serde_json::to_string(&last)
                .ok()
                .map(|json| Event::data(crate::hold::with_charge(&json, charged)).encode())
        }
        fn failed(&mut self, error: &ApiError) -> Option<Bytes> {
            let code = match error.kind {
                ErrorKind::UpstreamTimeout => 1001,
                ErrorKind::RateLimited => 1002,
                _ => 1000,
            };
            serde_json::to_string(&T2aResponse::error(code, error.message.clone()))
                .ok()
                .map(|json| Event::data(json).encode())
        }
    }

    /// What opens an event's one `data:` line, and what ends the line and the event: compact
    /// JSON has no line end, so an event of it is `data: `, the JSON, a blank line — as
    /// [`Event::encode`] writes it.
    const DATA: &str = "data: ";
    const END: &str = "\n\n";

    /// `frame` as one event, in pieces: its JSON before the audio, the audio as it came, the
    /// JSON after it.
    fn event(frame: &T2aFrame) -> Vec<Bytes> {
        let (head, audio, tail) = frame.json_pieces();
        let mut pieces = Vec::with_capacity(3);
        pieces.push(Bytes::from(format!("{DATA}{head}")));
        if !audio.is_empty() {
            pieces.push(audio);
        }
        pieces.push(Bytes::from(tail + END));
        pieces
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::speech_relay::Encoder;
    use bytes::Bytes;
    use tollgate_billing::{Decimal, Tariff};
    use tollgate_compat_audio::Voice;
    use tollgate_settings::config::ModelKind;
    use tollgate_upstream::seams::speech::{Audio, AudioChunk};
    use tollgate_vendor_audio::t2a::T2aFrame;

    fn entry() -> ModelEntry {
        ModelEntry::in_order(
            "speech-2.8-turbo",
            ModelKind::Speech,
            "speech-2.8-turbo-upstream",
            Vec::new(),
            Tariff::Characters {
                per_million_characters: Decimal::ONE,
            },
        )
    }

    fn request(voice: Voice, format: &str) -> SpeechRequest {
        let mut r = SpeechRequest::new("tts-1", "hello", voice);
        r.response_format = serde_json::from_value(serde_json::json!(format)).unwrap();
        r.speed = Some(1.5);
        r
    }

    #[test]
    fn compat_requests_fill_the_seam() {
        let settings = SpeechConfig::default();
        let s = synthesis(&request("alloy".into(), "opus"), &entry(), &settings, true);
        assert_eq!(s.model, "speech-2.8-turbo-upstream");
        assert_eq!(s.voice, "alloy");
        assert_eq!(s.default_voice, settings.default_voice);
        assert_eq!(s.format, AudioFormat::Mp3, "opus is served as mp3");
        assert_eq!(s.sample_rate, 32_000);
        assert_eq!(s.speed, Some(1.5));
        assert!(s.t2a.is_none());
        let custom = Voice::Custom {
            id: "voice_123".into(),
        };
        let s = synthesis(&request(custom, "pcm"), &entry(), &settings, false);
        assert_eq!(s.voice, "voice_123");
        assert_eq!(s.sample_rate, 24_000);
        assert!(!upstream_streams(AudioFormat::Wav));
        assert!(upstream_streams(AudioFormat::Flac));
    }

    /// A `t2a` channel's frame goes to a `t2a_v2` client as one event whose bytes are what
    /// writing the whole frame again gives, its audio the vendor's own bytes, not a copy; a
    /// compat client gets the same audio decoded, or as base64 written straight into its event.
    #[test]
    fn a_t2a_channels_frame_is_relayed_around_its_own_audio() {
        let json = Bytes::from_static(
            br#"{"base_resp":{"status_code":0,"status_msg":"ok"},"data":{"status":1,"audio":"fffb90","ced":""},"trace_id":"t"}"#,
        );
        let frame = T2aFrame::read(json.clone()).unwrap();
        let chunk = AudioChunk {
            audio: Audio::Hex(frame.audio_hex.clone()),
            characters: None,
            last: false,
            t2a: Some(frame),
        };
        let s = from_t2a(
            &serde_json::from_value(serde_json::json!({"model": "m", "text": "hi"})).unwrap(),
            &entry(),
            &SpeechConfig::default(),
        );
        let pieces = encoders::T2aFrames::new(s).frame(&chunk);
        let whole: T2aResponse = serde_json::from_slice(&json).unwrap();
        let expected = tollgate_sse::Event::data(serde_json::to_string(&whole).unwrap()).encode();
        assert_eq!(pieces.concat(), expected.to_vec());
        assert!(
            json.as_ptr_range().contains(&pieces[1].as_ptr()),
            "the vendor's bytes"
        );

        let raw = encoders::RawAudio.frame(&chunk);
        assert_eq!(raw.concat(), [0xff, 0xfb, 0x90]);
        let compat = encoders::CompatSse.frame(&chunk).concat();
        let delta = tollgate_compat_audio::SpeechStreamEvent::delta(&[0xff, 0xfb, 0x90]);
        let expected = tollgate_sse::Event::data(serde_json::to_string(&delta).unwrap()).encode();
        assert_eq!(compat, expected.to_vec());
    }

    #[test]
    fn t2a_requests_ride_along_and_answers_are_built_for_other_channels() {
        let request: T2aRequest = serde_json::from_value(serde_json::json!({
            "model": "speech-2.8-hd", "text": "hi there", "stream": true,
            "voice_setting": {"voice_id": "Wise_Woman", "speed": 1.2},
            "audio_setting": {"format": "pcm", "sample_rate": 16000}
        }))
        .unwrap();
        let s = from_t2a(&request, &entry(), &SpeechConfig::default());
        assert_eq!(s.voice, "Wise_Woman");
        assert_eq!(s.format, AudioFormat::Pcm);
        assert_eq!(s.sample_rate, 16_000);
        assert_eq!(s.speed, Some(1.2));
        assert!(s.stream);
        assert_eq!(s.t2a.as_ref().unwrap().text, "hi there");

        let whole = Synthesized {
            audio: Bytes::from_static(&[1, 2, 3]),
            characters: None,
            t2a: None,
        };
        let answer = serde_json::to_value(t2a_answer(whole, 8, &s)).unwrap();
        assert_eq!(answer["data"]["audio"], "010203");
        assert_eq!(answer["data"]["status"], 2);
        assert_eq!(answer["extra_info"]["usage_characters"], 8);
        assert_eq!(answer["base_resp"]["status_code"], 0);

        let mut frames = encoders::T2aFrames::new(s);
        let chunk = |audio: &'static [u8], last| AudioChunk {
            audio: Audio::Bytes(Bytes::from_static(audio)),
            characters: None,
            last,
            t2a: None,
        };
        let first = frames.frame(&chunk(&[0xff], false)).concat();
        assert!(String::from_utf8_lossy(&first).contains(r#""audio":"ff","status":1"#));
        assert!(frames.frame(&chunk(&[], true)).is_empty());
        let last = frames.done(8, None).unwrap();
        let last = String::from_utf8_lossy(&last);
        assert!(last.contains(r#""status":2"#), "{last}");
        assert!(last.contains(r#""usage_characters":8"#), "{last}");
    }
}
