//! `POST /v1/t2a_v2`: request round trips, every validation rule with its field, the reference
//! responses and stream frames, and the hex audio encoding.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use serde_json::json;
use tollgate_vendor_audio::base_resp::codes;
use tollgate_vendor_audio::t2a::{
    AudioHexError, AudioSetting, BITRATES, DEFAULT_SAMPLE_RATE, ExtraInfo, SAMPLE_RATES,
    STATUS_CHUNK, STATUS_FINISHED, StreamOptions, T2aData, T2aFormat, T2aRequest, T2aResponse,
    VoiceSetting, decode_audio, encode_audio, validate,
};
use tollgate_vendor_audio::{BaseResp, FieldError, Rule};

/// The request example of wire-formats §3.1.
fn reference_request() -> serde_json::Value {
    json!({
        "model": "speech-2.8-hd",
        "text": "Welcome back.<#0.4#>Your order has shipped.",
        "stream": false,
        "output_format": "hex",
        "voice_setting": {"voice_id": "English_Graceful_Lady", "speed": 1.0, "vol": 1.0, "pitch": 0},
        "audio_setting": {"sample_rate": 32000, "bitrate": 128000, "format": "mp3", "channel": 1},
        "pronunciation_dict": {"tone": ["SQL/sequel"]},
        "language_boost": "English",
        "voice_modify": {"pitch": 0, "intensity": 10, "timbre": 0},
        "subtitle_enable": false
    })
}

fn decode(value: serde_json::Value) -> T2aRequest {
    serde_json::from_value(value).unwrap()
}

/// A valid request with a voice id and the given text.
fn request(text: &str) -> T2aRequest {
    let mut req = T2aRequest::new("speech-2.8-hd", text);
    req.voice_setting = Some(VoiceSetting::new("English_Graceful_Lady"));
    req
}

fn with_format(text: &str, format: &str) -> T2aRequest {
    let mut req = request(text);
    req.audio_setting = Some(AudioSetting {
        format: Some(format.into()),
        ..AudioSetting::default()
    });
    req
}

fn with_voice(setting: VoiceSetting) -> T2aRequest {
    let mut req = request("Hello");
    req.voice_setting = Some(VoiceSetting {
        voice_id: Some("Wise_Woman".into()),
        ..setting
    });
    req
}

fn with_audio(setting: AudioSetting) -> T2aRequest {
    let mut req = request("Hello");
    req.audio_setting = Some(setting);
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
// Request decoding and round trips
// ---------------------------------------------------------------------------------------------

#[test]
fn the_reference_request_decodes_validates_and_round_trips() {
    let wire = reference_request();
    let req = decode(wire.clone());
    assert_eq!(req.model, "speech-2.8-hd");
    assert_eq!(req.stream, Some(false));
    assert_eq!(req.output_format.as_deref(), Some("hex"));
    let voice = req.voice_setting.as_ref().unwrap();
    assert_eq!(voice.voice_id.as_deref(), Some("English_Graceful_Lady"));
    assert_eq!(
        (voice.speed, voice.vol, voice.pitch),
        (Some(1.0), Some(1.0), Some(0))
    );
    let audio = req.audio_setting.as_ref().unwrap();
    assert_eq!(
        (
            audio.sample_rate,
            audio.bitrate,
            audio.format.as_deref(),
            audio.channel
        ),
        (Some(32000), Some(128000), Some("mp3"), Some(1))
    );
    assert_eq!(
        req.pronunciation_dict,
        Some(json!({"tone": ["SQL/sequel"]}))
    );
    assert_eq!(req.language_boost, Some(json!("English")));
    assert_eq!(
        req.voice_modify,
        Some(json!({"pitch": 0, "intensity": 10, "timbre": 0}))
    );
    assert_eq!(req.subtitle_enable, Some(false));
    assert!(req.extra.is_empty());
    assert_eq!(validate(&req), Ok(()));
    assert_eq!(serde_json::to_value(&req).unwrap(), wire);
}

#[test]
fn unknown_fields_pass_through_at_every_level() {
    let wire = json!({
        "model": "speech-2.8-turbo",
        "text": "Hi",
        "subtitle_type": "word",
        "future_flag": {"nested": [1, 2, 3]},
        "voice_setting": {"voice_id": "Wise_Woman", "english_normalization": true},
        "audio_setting": {"format": "pcm", "codec_hint": "x"},
        "stream_options": {"exclude_aggregated_audio": true},
        "timbre_weights": [{"voice_id": "Wise_Woman", "weight": 60}, {"voice_id": "Calm_Woman", "weight": 40}],
        "pronunciation_dict": {"tone": ["处理/(chu3)(li3)", "omg/oh my god"]},
        "language_boost": "Chinese,Yue",
        "voice_modify": {"sound_effects": "spacious_echo", "pitch": -100}
    });
    let req = decode(wire.clone());
    assert_eq!(req.extra.len(), 2);
    assert_eq!(req.extra["subtitle_type"], json!("word"));
    assert_eq!(req.extra["future_flag"], json!({"nested": [1, 2, 3]}));
    let voice = req.voice_setting.as_ref().unwrap();
    assert_eq!(voice.extra["english_normalization"], json!(true));
    let audio = req.audio_setting.as_ref().unwrap();
    assert_eq!(audio.extra["codec_hint"], json!("x"));
    assert_eq!(
        req.stream_options,
        Some(StreamOptions {
            exclude_aggregated_audio: Some(true)
        })
    );
    assert!(req.excludes_aggregated_audio());
    assert_eq!(serde_json::to_value(&req).unwrap(), wire);
    let again: T2aRequest = serde_json::from_str(&serde_json::to_string(&req).unwrap()).unwrap();
    assert_eq!(again, req);
    assert_eq!(validate(&req), Ok(()));
}

#[test]
fn accessors_apply_the_defaults() {
    let req = T2aRequest::new("speech-2.8-hd", "Hi");
    assert_eq!(req.format(), T2aFormat::Mp3);
    assert_eq!(req.sample_rate(), DEFAULT_SAMPLE_RATE);
    assert_eq!(DEFAULT_SAMPLE_RATE, 32_000);
    assert!(!req.is_stream());
    assert!(!req.excludes_aggregated_audio());
    assert_eq!(req.voice_id(), None);
    assert_eq!(
        serde_json::to_value(&req).unwrap(),
        json!({"model": "speech-2.8-hd", "text": "Hi"})
    );

    let req = decode(json!({
        "model": "m", "text": "t", "stream": true,
        "voice_setting": {"voice_id": "v"},
        "audio_setting": {"format": "flac", "sample_rate": 16000}
    }));
    assert_eq!(req.format(), T2aFormat::Flac);
    assert_eq!(req.sample_rate(), 16000);
    assert!(req.is_stream());
    assert_eq!(req.voice_id(), Some("v"));
}

#[test]
fn integer_numbers_decode_into_float_settings() {
    // Inside a struct with flattened extra fields, serde buffers values; integers must still be
    // accepted where the format has a number.
    let req = decode(json!({
        "model": "m", "text": "t",
        "voice_setting": {"voice_id": "v", "speed": 2, "vol": 10, "pitch": -12}
    }));
    let voice = req.voice_setting.as_ref().unwrap();
    assert_eq!(
        (voice.speed, voice.vol, voice.pitch),
        (Some(2.0), Some(10.0), Some(-12))
    );
    assert_eq!(validate(&req), Ok(()));
}

#[test]
fn every_format_is_read_and_unknown_ones_count_as_mp3() {
    for (wire, format) in [
        ("mp3", T2aFormat::Mp3),
        ("pcm", T2aFormat::Pcm),
        ("flac", T2aFormat::Flac),
        ("wav", T2aFormat::Wav),
    ] {
        assert_eq!(with_format("Hi", wire).format(), format);
        assert_eq!(format.as_str(), wire);
        assert_eq!(serde_json::to_value(format).unwrap(), json!(wire));
    }
    assert_eq!(with_format("Hi", "opus").format(), T2aFormat::Mp3);
    assert_eq!(T2aFormat::parse("MP3"), None);
}

#[test]
fn wrong_types_are_decode_errors() {
    for body in [
        json!({"model": "m", "text": 5}),
        json!({"model": "m", "text": "t", "voice_setting": {"pitch": 1.5}}),
        json!({"model": "m", "text": "t", "audio_setting": {"channel": 300}}),
        json!({"model": "m", "text": "t", "stream": "yes"}),
    ] {
        assert!(
            serde_json::from_value::<T2aRequest>(body.clone()).is_err(),
            "{body}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------------

#[test]
fn model_and_text_are_required() {
    let mut req = request("Hi");
    req.model = String::new();
    assert_error(
        validate(&req),
        "model",
        Rule::Required,
        "'model' is required and must not be empty",
    );
    assert_error(
        validate(&request("")),
        "text",
        Rule::Required,
        "'text' is required and must not be empty",
    );
    let missing = decode(json!({"model": "m", "text": null, "voice_setting": {"voice_id": "v"}}));
    assert_eq!(validate(&missing).unwrap_err().field, "text");
    let missing = decode(json!({"text": "t", "voice_setting": {"voice_id": "v"}}));
    assert_eq!(validate(&missing).unwrap_err().field, "model");
}

#[test]
fn text_of_10000_characters_is_accepted_and_10001_refused() {
    assert_eq!(validate(&request(&"a".repeat(10_000))), Ok(()));
    assert_eq!(validate(&request(&"字".repeat(10_000))), Ok(()));
    assert_error(
        validate(&request(&"a".repeat(10_001))),
        "text",
        Rule::TooLong,
        "'text' has 10001 characters; at most 10000 are allowed",
    );
    assert_eq!(
        validate(&with_format(&"a".repeat(10_001), "mp3"))
            .unwrap_err()
            .rule,
        Rule::TooLong
    );
}

#[test]
fn text_of_2000_characters_is_accepted_and_2001_refused_for_wav_flac_and_pcm() {
    for format in ["wav", "flac", "pcm"] {
        assert_eq!(validate(&with_format(&"a".repeat(2_000), format)), Ok(()));
        assert_error(
            validate(&with_format(&"a".repeat(2_001), format)),
            "text",
            Rule::TooLongForFormat,
            &format!(
                "'text' has 2001 characters; at most 2000 are allowed when audio_setting.format is {format}"
            ),
        );
        assert_eq!(
            validate(&with_format(&"a".repeat(10_001), format))
                .unwrap_err()
                .rule,
            Rule::TooLongForFormat
        );
    }
    assert_eq!(validate(&with_format(&"a".repeat(2_001), "mp3")), Ok(()));
    assert_eq!(validate(&request(&"a".repeat(2_001))), Ok(()));
}

#[test]
fn voice_id_is_required_unless_timbre_weights_are_given() {
    let message = "'voice_setting.voice_id' is required unless 'timbre_weights' is given";
    let mut req = T2aRequest::new("speech-2.8-hd", "Hi");
    assert_error(
        validate(&req),
        "voice_setting.voice_id",
        Rule::Required,
        message,
    );
    req.voice_setting = Some(VoiceSetting::default());
    assert_error(
        validate(&req),
        "voice_setting.voice_id",
        Rule::Required,
        message,
    );
    req.voice_setting = Some(VoiceSetting::new(""));
    assert_error(
        validate(&req),
        "voice_setting.voice_id",
        Rule::Required,
        message,
    );
    for empty in [json!([]), json!({})] {
        req.timbre_weights = Some(empty);
        assert_error(
            validate(&req),
            "voice_setting.voice_id",
            Rule::Required,
            message,
        );
    }
    req.timbre_weights = Some(json!([{"voice_id": "Calm_Woman", "weight": 100}]));
    assert_eq!(validate(&req), Ok(()));
    req.voice_setting = None;
    assert_eq!(validate(&req), Ok(()));
    let decoded = decode(json!({"model": "m", "text": "t", "timbre_weights": null}));
    assert_eq!(
        validate(&decoded).unwrap_err().field,
        "voice_setting.voice_id"
    );
}

#[test]
fn speed_is_from_half_to_two() {
    for speed in [0.5, 1.0, 2.0] {
        let req = with_voice(VoiceSetting {
            speed: Some(speed),
            ..VoiceSetting::default()
        });
        assert_eq!(validate(&req), Ok(()), "{speed}");
    }
    for speed in [0.49, 2.01, 0.0, -1.0, f64::NAN, f64::INFINITY] {
        let req = with_voice(VoiceSetting {
            speed: Some(speed),
            ..VoiceSetting::default()
        });
        assert_error(
            validate(&req),
            "voice_setting.speed",
            Rule::OutOfRange,
            "'voice_setting.speed' must be between 0.5 and 2.0",
        );
    }
}

#[test]
fn vol_is_above_zero_and_at_most_ten() {
    for vol in [0.01, 1.0, 10.0] {
        let req = with_voice(VoiceSetting {
            vol: Some(vol),
            ..VoiceSetting::default()
        });
        assert_eq!(validate(&req), Ok(()), "{vol}");
    }
    for vol in [0.0, -0.5, 10.01, f64::NAN] {
        let req = with_voice(VoiceSetting {
            vol: Some(vol),
            ..VoiceSetting::default()
        });
        assert_error(
            validate(&req),
            "voice_setting.vol",
            Rule::OutOfRange,
            "'voice_setting.vol' must be greater than 0 and at most 10",
        );
    }
}

#[test]
fn pitch_is_from_minus_twelve_to_twelve() {
    for pitch in [-12, 0, 12] {
        let req = with_voice(VoiceSetting {
            pitch: Some(pitch),
            ..VoiceSetting::default()
        });
        assert_eq!(validate(&req), Ok(()), "{pitch}");
    }
    for pitch in [-13, 13, i64::MIN, i64::MAX] {
        let req = with_voice(VoiceSetting {
            pitch: Some(pitch),
            ..VoiceSetting::default()
        });
        assert_error(
            validate(&req),
            "voice_setting.pitch",
            Rule::OutOfRange,
            "'voice_setting.pitch' must be an integer between -12 and 12",
        );
    }
}

#[test]
fn sample_rate_must_be_one_of_the_listed_rates() {
    for rate in SAMPLE_RATES {
        let req = with_audio(AudioSetting {
            sample_rate: Some(rate),
            ..AudioSetting::default()
        });
        assert_eq!(validate(&req), Ok(()), "{rate}");
    }
    for rate in [0, 11025, 48000] {
        let req = with_audio(AudioSetting {
            sample_rate: Some(rate),
            ..AudioSetting::default()
        });
        assert_error(
            validate(&req),
            "audio_setting.sample_rate",
            Rule::UnsupportedValue,
            &format!(
                "'audio_setting.sample_rate' is {rate}; it must be one of 8000, 16000, 22050, \
                 24000, 32000, 44100"
            ),
        );
    }
}

#[test]
fn bitrate_must_be_one_of_the_listed_rates() {
    for bitrate in BITRATES {
        let req = with_audio(AudioSetting {
            bitrate: Some(bitrate),
            ..AudioSetting::default()
        });
        assert_eq!(validate(&req), Ok(()), "{bitrate}");
    }
    let req = with_audio(AudioSetting {
        bitrate: Some(96000),
        ..AudioSetting::default()
    });
    assert_error(
        validate(&req),
        "audio_setting.bitrate",
        Rule::UnsupportedValue,
        "'audio_setting.bitrate' is 96000; it must be one of 32000, 64000, 128000, 256000",
    );
}

#[test]
fn format_must_be_mp3_pcm_flac_or_wav() {
    for format in ["mp3", "pcm", "flac", "wav"] {
        assert_eq!(validate(&with_format("Hi", format)), Ok(()), "{format}");
    }
    for format in ["opus", "pcmu_wav", "MP3", ""] {
        assert_error(
            validate(&with_format("Hi", format)),
            "audio_setting.format",
            Rule::UnsupportedValue,
            &format!("'audio_setting.format' is {format:?}; it must be one of mp3, pcm, flac, wav"),
        );
    }
}

#[test]
fn wav_is_refused_with_stream() {
    let mut req = with_format("Hi", "wav");
    req.stream = Some(true);
    assert_error(
        validate(&req),
        "audio_setting.format",
        Rule::NotStreamable,
        "'audio_setting.format' wav is only available without streaming; with stream=true use \
         one of mp3, pcm, flac",
    );
    req.stream = Some(false);
    assert_eq!(validate(&req), Ok(()));
    for format in ["mp3", "pcm", "flac"] {
        let mut req = with_format("Hi", format);
        req.stream = Some(true);
        assert_eq!(validate(&req), Ok(()), "{format}");
    }
}

#[test]
fn channel_must_be_one_or_two() {
    for channel in [1, 2] {
        let req = with_audio(AudioSetting {
            channel: Some(channel),
            ..AudioSetting::default()
        });
        assert_eq!(validate(&req), Ok(()));
    }
    for channel in [0, 3] {
        let req = with_audio(AudioSetting {
            channel: Some(channel),
            ..AudioSetting::default()
        });
        assert_error(
            validate(&req),
            "audio_setting.channel",
            Rule::UnsupportedValue,
            &format!("'audio_setting.channel' is {channel}; it must be 1 or 2"),
        );
    }
}

#[test]
fn output_format_is_always_hex() {
    let mut req = request("Hi");
    req.output_format = Some("hex".into());
    assert_eq!(validate(&req), Ok(()));
    req.output_format = Some("url".into());
    let err = validate(&req).unwrap_err();
    assert_eq!(
        (err.field.as_str(), err.rule),
        ("output_format", Rule::Unavailable)
    );
    assert!(
        err.message.contains("download URLs are not offered"),
        "{err}"
    );
    assert!(err.message.contains("always returned hex-encoded"), "{err}");
    req.output_format = Some("base64".into());
    assert_error(
        validate(&req),
        "output_format",
        Rule::UnsupportedValue,
        "'output_format' is \"base64\"; it must be hex",
    );
}

#[test]
fn subtitles_are_not_available() {
    let mut req = request("Hi");
    req.subtitle_enable = Some(false);
    assert_eq!(validate(&req), Ok(()));
    req.subtitle_enable = Some(true);
    assert_error(
        validate(&req),
        "subtitle_enable",
        Rule::Unavailable,
        "'subtitle_enable' is not available: subtitles are not offered; leave it out or set it \
         to false",
    );
}

#[test]
fn the_first_broken_rule_is_reported_in_field_order() {
    let mut req = decode(json!({
        "model": "", "text": "", "subtitle_enable": true, "output_format": "url",
        "audio_setting": {"channel": 5}, "voice_setting": {"pitch": 40}
    }));
    let mut fields = Vec::new();
    while let Err(err) = validate(&req) {
        fields.push(err.field.clone());
        match err.field.as_str() {
            "model" => req.model = "speech-2.8-hd".into(),
            "text" => req.text = "Hi".into(),
            "voice_setting.voice_id" => {
                req.voice_setting.as_mut().unwrap().voice_id = Some("v".into())
            }
            "voice_setting.pitch" => req.voice_setting.as_mut().unwrap().pitch = None,
            "audio_setting.channel" => req.audio_setting = None,
            "output_format" => req.output_format = None,
            "subtitle_enable" => req.subtitle_enable = None,
            other => panic!("unexpected field {other}"),
        }
    }
    assert_eq!(
        fields,
        [
            "model",
            "text",
            "voice_setting.voice_id",
            "voice_setting.pitch",
            "audio_setting.channel",
            "output_format",
            "subtitle_enable"
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Responses
// ---------------------------------------------------------------------------------------------

#[test]
fn the_reference_non_stream_response_decodes() {
    let wire = json!({
        "data": {"audio": "4944330400", "status": 2, "subtitle_file": "https://example.invalid/sub.json"},
        "extra_info": {
            "audio_length": 5230, "audio_sample_rate": 32000, "audio_size": 84012,
            "bitrate": 128000, "word_count": 9, "invisible_character_ratio": 0,
            "usage_characters": 44, "audio_format": "mp3", "audio_channel": 1
        },
        "trace_id": "0320a1b2c3d4",
        "base_resp": {"status_code": 0, "status_msg": "success"}
    });
    let resp: T2aResponse = serde_json::from_value(wire).unwrap();
    let data = resp.data.as_ref().unwrap();
    assert_eq!(data.status, STATUS_FINISHED);
    assert_eq!(data.audio_bytes().unwrap(), b"ID3\x04\x00");
    assert_eq!(
        data.subtitle_file.as_deref(),
        Some("https://example.invalid/sub.json")
    );
    assert_eq!(
        resp.extra_info,
        Some(ExtraInfo {
            audio_length: Some(5230),
            audio_sample_rate: Some(32000),
            audio_size: Some(84012),
            bitrate: Some(128000),
            word_count: Some(9),
            invisible_character_ratio: Some(0.0),
            usage_characters: Some(44),
            audio_format: Some("mp3".into()),
            audio_channel: Some(1),
        })
    );
    assert_eq!(resp.trace_id.as_deref(), Some("0320a1b2c3d4"));
    assert_eq!(resp.base_resp, BaseResp::success());
    assert!(resp.is_final());
    assert_eq!(resp.usage_characters(), Some(44));
}

#[test]
fn the_reference_stream_frames_decode() {
    let frames = [
        r#"{"data":{"audio":"fffb9064","status":1},"trace_id":"03a1","base_resp":{"status_code":0,"status_msg":""}}"#,
        r#"{"data":{"audio":"fffb9064","status":1},"trace_id":"03a1","base_resp":{"status_code":0,"status_msg":""}}"#,
        r#"{"data":{"audio":"","status":2},"extra_info":{"audio_length":5230,"usage_characters":44,"audio_format":"mp3","audio_sample_rate":32000,"bitrate":128000,"audio_channel":1,"word_count":9,"invisible_character_ratio":0,"audio_size":84012},"trace_id":"03a1","base_resp":{"status_code":0,"status_msg":"success"}}"#,
    ];
    let decoded: Vec<T2aResponse> = frames
        .iter()
        .map(|frame| serde_json::from_str(frame).unwrap())
        .collect();
    for chunk in &decoded[..2] {
        assert!(chunk.base_resp.is_success());
        assert!(!chunk.is_final());
        assert_eq!(chunk.extra_info, None);
        assert_eq!(chunk.usage_characters(), None);
        let data = chunk.data.as_ref().unwrap();
        assert_eq!(data.status, STATUS_CHUNK);
        assert_eq!(data.audio_bytes().unwrap(), vec![0xff, 0xfb, 0x90, 0x64]);
    }
    let last = &decoded[2];
    assert!(last.is_final());
    assert_eq!(last.usage_characters(), Some(44));
    assert_eq!(
        last.data.as_ref().unwrap().audio_bytes().unwrap(),
        Vec::<u8>::new()
    );
    assert_eq!(last.trace_id.as_deref(), Some("03a1"));
}

#[test]
fn a_mid_stream_error_frame_decodes() {
    let frame = r#"{"data":null,"trace_id":"03a1","base_resp":{"status_code":1042,"status_msg":"invisible characters"}}"#;
    let resp: T2aResponse = serde_json::from_str(frame).unwrap();
    assert_eq!(resp.data, None);
    assert!(!resp.base_resp.is_success());
    assert_eq!(resp.base_resp.status_code, codes::INVISIBLE_CHARACTERS);
    assert!(!resp.is_final());
    let missing = r#"{"data":{"audio":"00","status":1}}"#;
    assert!(serde_json::from_str::<T2aResponse>(missing).is_err());
}

#[test]
fn responses_serialize_without_absent_fields() {
    let chunk = T2aResponse::success(T2aData::chunk(b"\x00\xff"));
    assert_eq!(
        serde_json::to_string(&chunk).unwrap(),
        r#"{"data":{"audio":"00ff","status":1},"base_resp":{"status_code":0,"status_msg":"success"}}"#
    );
    let mut last = T2aResponse::success(T2aData::finished(b""));
    last.trace_id = Some("t-1".into());
    last.extra_info = Some(ExtraInfo {
        usage_characters: Some(7),
        audio_format: Some("mp3".into()),
        ..ExtraInfo::default()
    });
    assert_eq!(
        serde_json::to_value(&last).unwrap(),
        json!({
            "data": {"audio": "", "status": 2},
            "extra_info": {"usage_characters": 7, "audio_format": "mp3"},
            "trace_id": "t-1",
            "base_resp": {"status_code": 0, "status_msg": "success"}
        })
    );
    let again: T2aResponse = serde_json::from_value(serde_json::to_value(&last).unwrap()).unwrap();
    assert_eq!(again, last);
    assert_eq!(
        serde_json::to_value(T2aResponse::error(1008, "insufficient balance")).unwrap(),
        json!({"base_resp": {"status_code": 1008, "status_msg": "insufficient balance"}})
    );
}

// ---------------------------------------------------------------------------------------------
// Hex audio
// ---------------------------------------------------------------------------------------------

#[test]
fn decode_audio_refuses_odd_length() {
    assert_eq!(
        decode_audio("abc"),
        Err(AudioHexError::OddLength { len: 3 })
    );
    assert_eq!(decode_audio("0"), Err(AudioHexError::OddLength { len: 1 }));
    assert_eq!(
        decode_audio("abc").unwrap_err().to_string(),
        "audio hex has an odd length of 3 characters"
    );
}

#[test]
fn decode_audio_refuses_invalid_characters() {
    assert_eq!(
        decode_audio("00g0"),
        Err(AudioHexError::InvalidCharacter {
            character: 'g',
            index: 2
        })
    );
    // A non-hex character is reported even when the length is also odd.
    assert_eq!(
        decode_audio("0é"),
        Err(AudioHexError::InvalidCharacter {
            character: 'é',
            index: 1
        })
    );
    assert_eq!(
        decode_audio("ff ff"),
        Err(AudioHexError::InvalidCharacter {
            character: ' ',
            index: 2
        })
    );
    assert_eq!(
        decode_audio("zz").unwrap_err().to_string(),
        "audio hex has the invalid character 'z' at index 0"
    );
}

#[test]
fn decode_audio_accepts_both_cases() {
    assert_eq!(decode_audio("FFfb").unwrap(), vec![0xff, 0xfb]);
    assert_eq!(encode_audio(&[0xff, 0xfb]), "fffb");
}

proptest! {
    #[test]
    fn hex_audio_round_trips(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let hex = encode_audio(&bytes);
        prop_assert_eq!(hex.len(), bytes.len() * 2);
        prop_assert!(hex.chars().all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)));
        prop_assert_eq!(decode_audio(&hex).unwrap(), bytes.clone());
        prop_assert_eq!(T2aData::chunk(&bytes).audio_bytes().unwrap(), bytes);
    }

    #[test]
    fn decode_audio_never_panics(text in "\\PC{0,64}") {
        let _ = decode_audio(&text);
    }

    #[test]
    fn validation_never_panics(
        text in "\\PC{0,32}",
        speed in proptest::option::of(any::<f64>()),
        vol in proptest::option::of(any::<f64>()),
        pitch in proptest::option::of(any::<i64>()),
        sample_rate in proptest::option::of(any::<u32>()),
        format in proptest::option::of("[a-z]{0,5}"),
        stream in proptest::option::of(any::<bool>()),
    ) {
        let mut req = T2aRequest::new("speech-2.8-hd", text);
        req.stream = stream;
        req.voice_setting = Some(VoiceSetting { voice_id: Some("v".into()), speed, vol, pitch, ..VoiceSetting::default() });
        req.audio_setting = Some(AudioSetting { sample_rate, format, ..AudioSetting::default() });
        let _ = validate(&req);
    }
}
