//! `POST /v1/audio/speech`: decoding, the served format, every validation rule with its field,
//! and the SSE events.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use proptest::prelude::*;
use serde_json::json;
use tollgate_compat_audio::speech::{
    AudioFormat, DEFAULT_ALIASES, MAX_INPUT_CHARS, MAX_INPUT_CHARS_UNCOMPRESSED,
    MAX_INSTRUCTIONS_CHARS, ResponseFormat, STOCK_VOICES, SpeechRequest, SpeechStreamEvent,
    SpeechUsage, StreamFormat, Voice, default_alias, is_stock_voice, validate,
};
use tollgate_compat_audio::{FieldError, Rule};

fn decode(value: serde_json::Value) -> SpeechRequest {
    serde_json::from_value(value).unwrap()
}

fn request(input: &str, format: Option<ResponseFormat>) -> SpeechRequest {
    let mut req = SpeechRequest::new("speech-2.8-hd", input, "alloy");
    req.response_format = format;
    req
}

#[track_caller]
fn assert_error(result: Result<(), FieldError>, field: &str, rule: Rule, message: &str) {
    let err = result.expect_err("expected a validation error");
    assert_eq!(err.field, field, "{err:?}");
    assert_eq!(err.rule, rule, "{err:?}");
    assert_eq!(err.message, message, "{err:?}");
    assert_eq!(err.to_string(), message);
}

// ---------------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------------

#[test]
fn decodes_a_full_request() {
    let req = decode(json!({
        "model": "gpt-4o-mini-tts",
        "input": "Hello there",
        "voice": "coral",
        "instructions": "Speak cheerfully.",
        "response_format": "flac",
        "speed": 1.5,
        "stream_format": "audio"
    }));
    assert_eq!(req.model, "gpt-4o-mini-tts");
    assert_eq!(req.input, "Hello there");
    assert_eq!(req.voice, Voice::Name("coral".into()));
    assert_eq!(req.instructions.as_deref(), Some("Speak cheerfully."));
    assert_eq!(req.response_format, Some(ResponseFormat::Flac));
    assert_eq!(req.speed, Some(1.5));
    assert_eq!(req.stream_format, Some(StreamFormat::Audio));
    assert_eq!(validate(&req), Ok(()));
}

#[test]
fn decodes_a_string_voice() {
    let req = decode(json!({"model": "tts-1", "input": "hi", "voice": "English_Graceful_Lady"}));
    assert_eq!(req.voice, Voice::Name("English_Graceful_Lady".into()));
    assert_eq!(req.voice.id(), "English_Graceful_Lady");
    assert!(!req.voice.is_stock());
}

#[test]
fn decodes_a_custom_voice_object() {
    let req = decode(json!({
        "model": "tts-1",
        "input": "hi",
        "voice": {"id": "voice_1234", "extra": true}
    }));
    assert_eq!(
        req.voice,
        Voice::Custom {
            id: "voice_1234".into()
        }
    );
    assert_eq!(req.voice.id(), "voice_1234");
    assert!(!req.voice.is_stock());
}

#[test]
fn a_voice_of_another_shape_is_a_decode_error() {
    for voice in [
        json!(7),
        json!(["alloy"]),
        json!({"name": "alloy"}),
        json!({"id": 5}),
    ] {
        let body = json!({"model": "tts-1", "input": "hi", "voice": voice});
        assert!(
            serde_json::from_value::<SpeechRequest>(body).is_err(),
            "{voice} decoded"
        );
    }
    let err = serde_json::from_str::<Voice>("7").unwrap_err();
    assert!(
        err.to_string().contains("a voice name or an object"),
        "{err}"
    );
    let err = serde_json::from_str::<Voice>(r#"{"id":"a","id":"b"}"#).unwrap_err();
    assert!(err.to_string().contains("duplicate field `id`"), "{err}");
}

#[test]
fn voices_serialize_in_their_own_shape() {
    assert_eq!(
        serde_json::to_value(Voice::from("nova")).unwrap(),
        json!("nova")
    );
    assert_eq!(
        serde_json::to_value(Voice::Custom {
            id: "voice_9".into()
        })
        .unwrap(),
        json!({"id": "voice_9"})
    );
}

#[test]
fn decodes_every_response_format() {
    let cases = [
        ("mp3", ResponseFormat::Mp3),
        ("opus", ResponseFormat::Opus),
        ("aac", ResponseFormat::Aac),
        ("flac", ResponseFormat::Flac),
        ("wav", ResponseFormat::Wav),
        ("pcm", ResponseFormat::Pcm),
    ];
    assert_eq!(cases.len(), ResponseFormat::ALL.len());
    for (wire, format) in cases {
        let req = decode(
            json!({"model": "tts-1", "input": "hi", "voice": "ash", "response_format": wire}),
        );
        assert_eq!(req.response_format, Some(format));
        assert_eq!(format.as_str(), wire);
        assert_eq!(format.to_string(), wire);
        assert_eq!(serde_json::to_value(format).unwrap(), json!(wire));
    }
}

#[test]
fn an_unknown_response_format_is_a_decode_error() {
    for wire in ["ogg", "MP3", "", "mp4"] {
        let body =
            json!({"model": "tts-1", "input": "hi", "voice": "ash", "response_format": wire});
        let err = serde_json::from_value::<SpeechRequest>(body).unwrap_err();
        assert!(err.to_string().contains("unknown variant"), "{wire}: {err}");
    }
}

#[test]
fn decodes_both_stream_formats() {
    for (wire, format) in [("audio", StreamFormat::Audio), ("sse", StreamFormat::Sse)] {
        let req =
            decode(json!({"model": "tts-1", "input": "hi", "voice": "ash", "stream_format": wire}));
        assert_eq!(req.stream_format, Some(format));
        assert_eq!(req.stream_format_or_default(), format);
        assert_eq!(format.as_str(), wire);
    }
    let body = json!({"model": "tts-1", "input": "hi", "voice": "ash", "stream_format": "chunks"});
    assert!(serde_json::from_value::<SpeechRequest>(body).is_err());
}

#[test]
fn defaults_apply_when_optional_fields_are_absent() {
    let req = decode(json!({"model": "tts-1", "input": "hi", "voice": "ash"}));
    assert_eq!(req.response_format, None);
    assert_eq!(req.response_format_or_default(), ResponseFormat::Mp3);
    assert_eq!(req.served_format(), AudioFormat::Mp3);
    assert_eq!(req.stream_format_or_default(), StreamFormat::Audio);
    assert_eq!(req.speed_or_default(), 1.0);
    assert_eq!(req.instructions, None);
}

#[test]
fn unknown_fields_are_ignored() {
    let req = decode(json!({
        "model": "tts-1", "input": "hi", "voice": "ash", "user": "u-1", "temperature": 0.3
    }));
    assert_eq!(req, SpeechRequest::new("tts-1", "hi", "ash"));
}

#[test]
fn a_request_survives_a_round_trip() {
    let mut req = SpeechRequest::new(
        "speech-2.6-hd",
        "Grüße 👋",
        Voice::Custom { id: "v".into() },
    );
    req.instructions = Some("slowly".into());
    req.response_format = Some(ResponseFormat::Pcm);
    req.speed = Some(0.75);
    req.stream_format = Some(StreamFormat::Sse);
    let text = serde_json::to_string(&req).unwrap();
    assert_eq!(serde_json::from_str::<SpeechRequest>(&text).unwrap(), req);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&text).unwrap(),
        json!({
            "model": "speech-2.6-hd", "input": "Grüße 👋", "voice": {"id": "v"},
            "instructions": "slowly", "response_format": "pcm", "speed": 0.75,
            "stream_format": "sse"
        })
    );
}

#[test]
fn wrong_types_are_decode_errors() {
    for body in [
        json!({"model": "tts-1", "input": 5, "voice": "ash"}),
        json!({"model": "tts-1", "input": "hi", "voice": "ash", "speed": "fast"}),
        json!({"model": 1, "input": "hi", "voice": "ash"}),
    ] {
        assert!(
            serde_json::from_value::<SpeechRequest>(body.clone()).is_err(),
            "{body}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Served format
// ---------------------------------------------------------------------------------------------

#[test]
fn opus_and_aac_are_served_as_mp3() {
    let served: Vec<(ResponseFormat, AudioFormat)> = ResponseFormat::ALL
        .iter()
        .map(|f| (*f, f.served()))
        .collect();
    assert_eq!(
        served,
        vec![
            (ResponseFormat::Mp3, AudioFormat::Mp3),
            (ResponseFormat::Opus, AudioFormat::Mp3),
            (ResponseFormat::Aac, AudioFormat::Mp3),
            (ResponseFormat::Flac, AudioFormat::Flac),
            (ResponseFormat::Wav, AudioFormat::Wav),
            (ResponseFormat::Pcm, AudioFormat::Pcm),
        ]
    );
}

#[test]
fn audio_formats_name_their_content_type_and_limit() {
    let table: Vec<(&str, &str, bool)> = AudioFormat::ALL
        .iter()
        .map(|f| (f.as_str(), f.content_type(), f.has_short_limit()))
        .collect();
    assert_eq!(
        table,
        vec![
            ("mp3", "audio/mpeg", false),
            ("wav", "audio/wav", true),
            ("flac", "audio/flac", true),
            ("pcm", "audio/pcm", true),
        ]
    );
    for format in AudioFormat::ALL {
        let wire = serde_json::to_value(format).unwrap();
        assert_eq!(wire, json!(format.as_str()));
        assert_eq!(serde_json::from_value::<AudioFormat>(wire).unwrap(), format);
    }
}

// ---------------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------------

#[test]
fn model_is_required() {
    let mut req = request("hi", None);
    req.model = String::new();
    assert_error(
        validate(&req),
        "model",
        Rule::Required,
        "'model' is required and must not be empty",
    );
    let missing = decode(json!({"input": "hi", "voice": "ash"}));
    assert_eq!(validate(&missing).unwrap_err().field, "model");
}

#[test]
fn input_is_required() {
    assert_error(
        validate(&request("", None)),
        "input",
        Rule::Required,
        "'input' is required and must not be empty",
    );
    for body in [
        json!({"model": "tts-1", "voice": "ash"}),
        json!({"model": "tts-1", "input": null, "voice": "ash"}),
    ] {
        let err = validate(&decode(body)).unwrap_err();
        assert_eq!((err.field.as_str(), err.rule), ("input", Rule::Required));
    }
}

#[test]
fn input_of_10000_characters_is_accepted_and_10001_refused() {
    assert_eq!(MAX_INPUT_CHARS, 10_000);
    assert_eq!(validate(&request(&"a".repeat(10_000), None)), Ok(()));
    assert_error(
        validate(&request(&"a".repeat(10_001), None)),
        "input",
        Rule::TooLong,
        "'input' has 10001 characters; at most 10000 are allowed",
    );
    for format in [
        ResponseFormat::Mp3,
        ResponseFormat::Opus,
        ResponseFormat::Aac,
    ] {
        assert_eq!(
            validate(&request(&"a".repeat(10_001), Some(format)))
                .unwrap_err()
                .rule,
            Rule::TooLong
        );
    }
}

#[test]
fn input_is_counted_in_characters_not_bytes() {
    // 10,000 three-byte characters are 30,000 bytes but 10,000 characters.
    assert_eq!(validate(&request(&"語".repeat(10_000), None)), Ok(()));
    assert_eq!(
        validate(&request(&"🎧".repeat(2_000), Some(ResponseFormat::Wav))),
        Ok(())
    );
    let err = validate(&request(&"é".repeat(10_001), None)).unwrap_err();
    assert_eq!(
        err.message,
        "'input' has 10001 characters; at most 10000 are allowed"
    );
}

#[test]
fn input_of_2000_characters_is_accepted_and_2001_refused_for_wav_flac_and_pcm() {
    assert_eq!(MAX_INPUT_CHARS_UNCOMPRESSED, 2_000);
    for (format, name) in [
        (ResponseFormat::Wav, "wav"),
        (ResponseFormat::Flac, "flac"),
        (ResponseFormat::Pcm, "pcm"),
    ] {
        assert_eq!(validate(&request(&"a".repeat(2_000), Some(format))), Ok(()));
        assert_error(
            validate(&request(&"a".repeat(2_001), Some(format))),
            "input",
            Rule::TooLongForFormat,
            &format!(
                "'input' has 2001 characters; at most 2000 are allowed when response_format is {name}"
            ),
        );
        // The tighter limit is the one reported for input over both limits.
        assert_eq!(
            validate(&request(&"a".repeat(10_001), Some(format)))
                .unwrap_err()
                .rule,
            Rule::TooLongForFormat
        );
    }
}

#[test]
fn input_of_2001_characters_is_fine_for_mp3_and_for_formats_served_as_mp3() {
    for format in [
        None,
        Some(ResponseFormat::Mp3),
        Some(ResponseFormat::Opus),
        Some(ResponseFormat::Aac),
    ] {
        assert_eq!(
            validate(&request(&"a".repeat(2_001), format)),
            Ok(()),
            "{format:?}"
        );
    }
}

#[test]
fn a_missing_voice_is_a_validation_error_naming_voice() {
    for body in [
        json!({"model": "tts-1", "input": "hi"}),
        json!({"model": "tts-1", "input": "hi", "voice": null}),
        json!({"model": "tts-1", "input": "hi", "voice": ""}),
    ] {
        assert_error(
            validate(&decode(body)),
            "voice",
            Rule::Required,
            "'voice' is required",
        );
    }
}

#[test]
fn a_custom_voice_needs_an_id() {
    let req = decode(json!({"model": "tts-1", "input": "hi", "voice": {"id": ""}}));
    assert_error(
        validate(&req),
        "voice.id",
        Rule::Required,
        "'voice.id' must not be empty",
    );
    let missing_id = json!({"model": "tts-1", "input": "hi", "voice": {}});
    let err = serde_json::from_value::<SpeechRequest>(missing_id).unwrap_err();
    assert!(err.to_string().contains("missing field `id`"), "{err}");
}

#[test]
fn speed_bounds_are_inclusive() {
    for speed in [0.5, 1.0, 2.0] {
        let mut req = request("hi", None);
        req.speed = Some(speed);
        assert_eq!(validate(&req), Ok(()), "{speed}");
    }
    for speed in [
        0.4,
        0.49999,
        2.1,
        2.0001,
        -1.0,
        0.0,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ] {
        let mut req = request("hi", None);
        req.speed = Some(speed);
        assert_error(
            validate(&req),
            "speed",
            Rule::OutOfRange,
            "'speed' must be between 0.5 and 2.0",
        );
    }
}

#[test]
fn instructions_are_at_most_4096_characters() {
    assert_eq!(MAX_INSTRUCTIONS_CHARS, 4_096);
    let mut req = request("hi", None);
    req.instructions = Some("ü".repeat(4_096));
    assert_eq!(validate(&req), Ok(()));
    req.instructions = Some("ü".repeat(4_097));
    assert_error(
        validate(&req),
        "instructions",
        Rule::TooLong,
        "'instructions' has 4097 characters; at most 4096 are allowed",
    );
}

#[test]
fn the_first_broken_rule_is_reported_in_field_order() {
    let mut req = SpeechRequest::new("", "", "");
    req.speed = Some(9.0);
    assert_eq!(validate(&req).unwrap_err().field, "model");
    req.model = "tts-1".into();
    assert_eq!(validate(&req).unwrap_err().field, "input");
    req.input = "hi".into();
    assert_eq!(validate(&req).unwrap_err().field, "voice");
    req.voice = "alloy".into();
    assert_eq!(validate(&req).unwrap_err().field, "speed");
    req.speed = None;
    assert_eq!(validate(&req), Ok(()));
}

// ---------------------------------------------------------------------------------------------
// Voices and aliases
// ---------------------------------------------------------------------------------------------

#[test]
fn stock_voices_are_recognised_ignoring_case() {
    assert_eq!(STOCK_VOICES.len(), 13);
    for name in STOCK_VOICES {
        assert!(is_stock_voice(name), "{name}");
        assert!(is_stock_voice(&name.to_uppercase()), "{name}");
    }
    assert!(is_stock_voice("Alloy"));
    assert!(is_stock_voice("sHiMmEr"));
    assert!(Voice::from("CEDAR").is_stock());
    for name in [
        "",
        "alloy ",
        "English_Graceful_Lady",
        "male-qn-qingse",
        "allo",
    ] {
        assert!(!is_stock_voice(name), "{name:?}");
    }
    assert!(!Voice::Custom { id: "alloy".into() }.is_stock());
}

#[test]
fn default_aliases_map_openai_models() {
    assert_eq!(
        DEFAULT_ALIASES,
        &[
            ("tts-1", "speech-2.8-turbo"),
            ("gpt-4o-mini-tts", "speech-2.8-turbo"),
            ("tts-1-hd", "speech-2.8-hd"),
        ]
    );
    assert_eq!(default_alias("tts-1"), Some("speech-2.8-turbo"));
    assert_eq!(default_alias("gpt-4o-mini-tts"), Some("speech-2.8-turbo"));
    assert_eq!(default_alias("tts-1-hd"), Some("speech-2.8-hd"));
    assert_eq!(default_alias("TTS-1"), None);
    assert_eq!(default_alias("speech-2.8-hd"), None);
}

// ---------------------------------------------------------------------------------------------
// SSE events
// ---------------------------------------------------------------------------------------------

#[test]
fn the_delta_event_is_exactly_the_openai_shape() {
    let bytes = b"ID3\x04\x00\x00\x00\x00\x00";
    let event = SpeechStreamEvent::delta(bytes);
    assert_eq!(
        serde_json::to_string(&event).unwrap(),
        r#"{"type":"speech.audio.delta","audio":"SUQzBAAAAAAA"}"#
    );
    assert_eq!(event.event_type(), "speech.audio.delta");
    // Standard alphabet with padding.
    assert_eq!(
        SpeechStreamEvent::delta(&[0xfb, 0xff, 0xfe, 0x01]),
        SpeechStreamEvent::Delta {
            audio: "+//+AQ==".into()
        }
    );
    assert_eq!(
        SpeechStreamEvent::delta(&[]),
        SpeechStreamEvent::Delta {
            audio: String::new()
        }
    );
}

#[test]
fn the_done_event_carries_the_usage() {
    let event = SpeechStreamEvent::done(SpeechUsage::new(12, 88));
    assert_eq!(
        serde_json::to_string(&event).unwrap(),
        r#"{"type":"speech.audio.done","usage":{"input_tokens":12,"output_tokens":88,"total_tokens":100}}"#
    );
    assert_eq!(event.event_type(), "speech.audio.done");
    assert_eq!(SpeechUsage::new(u64::MAX, 1).total_tokens, u64::MAX);
}

#[test]
fn the_reference_stream_decodes() {
    let frames = [
        r#"{"type":"speech.audio.delta","audio":"SUQzBAAAAAAA"}"#,
        r#"{"type":"speech.audio.delta","audio":"//uQxAAAAAAA"}"#,
        r#"{"type":"speech.audio.done","usage":{"input_tokens":12,"output_tokens":88,"total_tokens":100}}"#,
    ];
    let events: Vec<SpeechStreamEvent> = frames
        .iter()
        .map(|f| serde_json::from_str(f).unwrap())
        .collect();
    assert_eq!(
        events[1],
        SpeechStreamEvent::Delta {
            audio: "//uQxAAAAAAA".into()
        }
    );
    assert_eq!(
        events[2],
        SpeechStreamEvent::Done {
            usage: SpeechUsage {
                input_tokens: 12,
                output_tokens: 88,
                total_tokens: 100
            }
        }
    );
    assert!(serde_json::from_str::<SpeechStreamEvent>(r#"{"type":"speech.audio.other"}"#).is_err());
    assert!(
        serde_json::from_str::<SpeechStreamEvent>(
            r#"{"type":"speech.audio.done","usage":{"input_tokens":1}}"#
        )
        .is_err()
    );
}

proptest! {
    #[test]
    fn delta_audio_decodes_back_to_the_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let SpeechStreamEvent::Delta { audio } = SpeechStreamEvent::delta(&bytes) else {
            panic!("delta() made another event");
        };
        prop_assert_eq!(STANDARD.decode(audio).unwrap(), bytes);
    }

    #[test]
    fn validation_never_panics_and_counts_characters(
        input in "\\PC{0,40}",
        speed in proptest::option::of(any::<f64>()),
        format in proptest::option::of(proptest::sample::select(ResponseFormat::ALL.to_vec())),
    ) {
        let mut req = SpeechRequest::new("tts-1", input.clone(), "alloy");
        req.speed = speed;
        req.response_format = format;
        let result = validate(&req);
        let speed_ok = speed.is_none_or(|s| (0.5..=2.0).contains(&s));
        prop_assert_eq!(result.is_ok(), !input.is_empty() && speed_ok);
    }
}
