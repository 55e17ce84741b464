//! Speech: the OpenAI-compatible request → the `t2a_v2` request the channel speaks.
//!
//! * the model becomes the catalog's upstream id;
//! * an OpenAI stock voice name (alloy, echo, …) becomes the configured default voice; any other
//!   name, or a custom `{id}`, is passed on as the vendor voice id (docs/api.md §2.1);
//! * the served format (opus and aac are served as mp3) becomes `audio_setting.format`, mono, at
//!   the configured sample rate — `pcm` at `speech.pcm_sample_rate`, OpenAI's 24 kHz by default;
//! * output is always hex, and a streamed request sets `exclude_aggregated_audio` so that the
//!   last frame does not repeat the whole audio (wire-formats §3.3);
//! * `instructions` has no `t2a_v2` counterpart: it is accepted and not sent.

use crate::catalog::ModelEntry;
use crate::config::SpeechConfig;
use tollgate_compat_audio::speech::is_stock_voice;
use tollgate_compat_audio::{AudioFormat, SpeechRequest, Voice};
use tollgate_vendor_audio::t2a::{AudioSetting, OUTPUT_FORMAT_HEX, StreamOptions, VoiceSetting};
use tollgate_vendor_audio::{T2aFormat, T2aRequest};

/// Whether the channel can stream this format: the vendor streams mp3, pcm and flac, but
/// produces wav only whole (wire-formats §3.1).
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

/// The `t2a_v2` request for `request`.
pub fn to_t2a(
    request: &SpeechRequest,
    entry: &ModelEntry,
    settings: &SpeechConfig,
    stream: bool,
) -> T2aRequest {
    let format = request.served_format();
    let voice_id = match &request.voice {
        Voice::Name(name) if is_stock_voice(name) => settings.default_voice.clone(),
        other => other.id().to_owned(),
    };
    let mut voice = VoiceSetting::new(voice_id);
    voice.speed = request.speed;
    let audio = AudioSetting {
        sample_rate: Some(sample_rate(format, settings)),
        format: Some(t2a_format(format).as_str().to_owned()),
        channel: Some(1),
        ..AudioSetting::default()
    };
    let mut t2a = T2aRequest::new(entry.upstream_model.clone(), request.input.clone());
    t2a.stream = Some(stream);
    t2a.stream_options = stream.then_some(StreamOptions {
        exclude_aggregated_audio: Some(true),
    });
    t2a.voice_setting = Some(voice);
    t2a.audio_setting = Some(audio);
    t2a.output_format = Some(OUTPUT_FORMAT_HEX.to_owned());
    t2a
}

fn t2a_format(format: AudioFormat) -> T2aFormat {
    match format {
        AudioFormat::Mp3 => T2aFormat::Mp3,
        AudioFormat::Wav => T2aFormat::Wav,
        AudioFormat::Flac => T2aFormat::Flac,
        AudioFormat::Pcm => T2aFormat::Pcm,
    }
}

/// The client's own `t2a_v2` request as sent upstream: the upstream model id, and hex output
/// whatever was asked (a `url` request was refused by validation already).
pub fn t2a_upstream(request: &T2aRequest, entry: &ModelEntry) -> T2aRequest {
    let mut upstream = request.clone();
    upstream.model = entry.upstream_model.clone();
    upstream.output_format = Some(OUTPUT_FORMAT_HEX.to_owned());
    upstream
}

/// The client's side of a relayed synthesis stream, per output format.
pub mod encoders {
    use crate::errors::{ApiError, ErrorKind};
    use crate::speech_relay::Encoder;
    use bytes::Bytes;
    use tollgate_compat_audio::{SpeechStreamEvent, SpeechUsage};
    use tollgate_sse::Event;
    use tollgate_upstream::t2a::Frame;
    use tollgate_vendor_audio::T2aResponse;

    /// `/v1/audio/speech` with `stream_format=audio`: the decoded audio bytes themselves. A cut
    /// stream is aborted, so the client sees an incomplete body rather than a short file.
    #[derive(Debug, Default)]
    pub struct RawAudio;

    impl Encoder for RawAudio {
        fn frame(&mut self, frame: &Frame) -> Option<Bytes> {
            (!frame.audio.is_empty()).then(|| frame.audio.clone())
        }
        fn done(&mut self, _characters: u64) -> Option<Bytes> {
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
        fn frame(&mut self, frame: &Frame) -> Option<Bytes> {
            (!frame.audio.is_empty()).then(|| sse(&SpeechStreamEvent::delta(&frame.audio)))
        }
        fn done(&mut self, characters: u64) -> Option<Bytes> {
            Some(sse(&SpeechStreamEvent::done(SpeechUsage::new(
                characters, 0,
            ))))
        }
        fn failed(&mut self, error: &ApiError) -> Option<Bytes> {
            let event = serde_json::json!({
                "type": "error",
                "error": {"message": error.message, "type": "server_error", "code": "upstream_error"},
            });
            Some(Event::data(event.to_string()).encode())
        }
    }

    /// `/v1/t2a_v2` with `stream: true`: the vendor's frames as they came (re-serialized), and on
    /// a cut one more frame whose `base_resp` carries the error.
    #[derive(Debug, Default)]
    pub struct T2aFrames;

    impl Encoder for T2aFrames {
        fn frame(&mut self, frame: &Frame) -> Option<Bytes> {
            serde_json::to_string(&frame.raw)
                .ok()
                .map(|json| Event::data(json).encode())
        }
        fn done(&mut self, _characters: u64) -> Option<Bytes> {
            None
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

    fn sse(event: &SpeechStreamEvent) -> Bytes {
        Event::data(serde_json::to_string(event).unwrap_or_default()).encode()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ModelKind;
    use tollgate_billing::{Decimal, Tariff};

    fn entry() -> ModelEntry {
        ModelEntry {
            public: "speech-2.8-turbo".into(),
            kind: ModelKind::Speech,
            upstream_model: "speech-2.8-turbo-upstream".into(),
            channels: Vec::new(),
            tariff: Tariff::Characters {
                per_million_characters: Decimal::ONE,
            },
        }
    }

    fn request(voice: Voice, format: &str) -> SpeechRequest {
        let mut r = SpeechRequest::new("tts-1", "hello", voice);
        r.response_format = serde_json::from_value(serde_json::json!(format)).unwrap();
        r.speed = Some(1.5);
        r
    }

    #[test]
    fn stock_voices_become_the_default_voice_and_others_pass_through() {
        let settings = SpeechConfig::default();
        let t = to_t2a(&request("Alloy".into(), "mp3"), &entry(), &settings, true);
        assert_eq!(t.voice_id(), Some("English_Graceful_Lady"));
        assert_eq!(t.model, "speech-2.8-turbo-upstream");
        assert_eq!(t.voice_setting.as_ref().unwrap().speed, Some(1.5));
        assert!(t.excludes_aggregated_audio());
        assert_eq!(t.output_format.as_deref(), Some("hex"));
        let t = to_t2a(
            &request("Wise_Woman".into(), "mp3"),
            &entry(),
            &settings,
            true,
        );
        assert_eq!(t.voice_id(), Some("Wise_Woman"));
        let custom = Voice::Custom {
            id: "voice_123".into(),
        };
        let t = to_t2a(&request(custom, "mp3"), &entry(), &settings, false);
        assert_eq!(t.voice_id(), Some("voice_123"));
        assert_eq!(t.stream, Some(false));
        assert!(t.stream_options.is_none());
    }

    #[test]
    fn formats_and_rates() {
        let settings = SpeechConfig::default();
        let t = to_t2a(&request("alloy".into(), "opus"), &entry(), &settings, true);
        assert_eq!(t.format(), T2aFormat::Mp3);
        assert_eq!(t.sample_rate(), 32_000);
        let t = to_t2a(&request("alloy".into(), "pcm"), &entry(), &settings, true);
        assert_eq!(t.format(), T2aFormat::Pcm);
        assert_eq!(t.sample_rate(), 24_000);
        assert!(!upstream_streams(AudioFormat::Wav));
        assert!(upstream_streams(AudioFormat::Flac));
    }
}

#[cfg(test)]
mod passthrough {
    use super::*;
    use crate::config::ModelKind;
    use tollgate_billing::{Decimal, Tariff};

    #[test]
    fn t2a_requests_keep_every_field_but_model_and_output_format() {
        let entry = ModelEntry {
            public: "speech-2.8-hd".into(),
            kind: ModelKind::Speech,
            upstream_model: "speech-2.8-hd-upstream".into(),
            channels: Vec::new(),
            tariff: Tariff::Characters {
                per_million_characters: Decimal::ONE,
            },
        };
        let request: T2aRequest = serde_json::from_value(serde_json::json!({
            "model": "speech-2.8-hd", "text": "hi",
            "voice_setting": {"voice_id": "v", "emotion": "happy"},
            "pronunciation_dict": {"tone": ["SQL/sequel"]},
            "language_boost": "English",
            "voice_modify": {"pitch": 3, "sound_effects": "robotic"},
            "timbre_weights": [{"voice_id": "a", "weight": 50}],
            "some_new_vendor_field": {"x": 1}
        }))
        .unwrap();
        let upstream = serde_json::to_value(t2a_upstream(&request, &entry)).unwrap();
        assert_eq!(upstream["model"], "speech-2.8-hd-upstream");
        assert_eq!(upstream["output_format"], "hex");
        assert_eq!(upstream["pronunciation_dict"]["tone"][0], "SQL/sequel");
        assert_eq!(upstream["language_boost"], "English");
        assert_eq!(upstream["voice_modify"]["sound_effects"], "robotic");
        assert_eq!(upstream["voice_setting"]["emotion"], "happy");
        assert_eq!(upstream["some_new_vendor_field"]["x"], 1);
    }
}
