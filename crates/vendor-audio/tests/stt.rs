//! `POST /v1/speech_to_text`: form fields and the language header, validation, the fields sent
//! upstream, and the reference bodies, stream frames and error body of wire-formats §4.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use serde_json::json;
use tollgate_vendor_audio::stt::{
    ACCEPTED_CONTAINERS, DONE_SENTINEL, INVALID_REQUEST_ERROR, LANGUAGE_HEADER, MAX_FILE_BYTES,
    MAX_SECONDS, MODEL, SttError, SttFormat, SttJson, SttParams, SttSegment, SttStreamFrame,
    SttVerboseJson, SttWord, TimestampLevel, validate,
};
use tollgate_vendor_audio::{FieldError, Rule};

#[track_caller]
fn assert_error<T: std::fmt::Debug>(
    result: Result<T, FieldError>,
    field: &str,
    rule: Rule,
    message: &str,
) {
    let err = result.expect_err("expected a field error");
    assert_eq!(err.field, field, "{err:?}");
    assert_eq!(err.rule, rule, "{err:?}");
    assert_eq!(err.message, message, "{err:?}");
}

fn parse(fields: &[(&str, &str)], language: Option<&str>) -> Result<SttParams, FieldError> {
    SttParams::from_fields(fields.iter().copied(), language)
}

// ---------------------------------------------------------------------------------------------
// Form fields and the header
// ---------------------------------------------------------------------------------------------

#[test]
fn parses_every_field_and_the_header() {
    let params = parse(
        &[
            ("model", "asr-1.0"),
            ("response_format", "verbose_json"),
            ("timestamp_level", "word"),
            ("stream", "false"),
        ],
        Some(" zh "),
    )
    .unwrap();
    assert_eq!(
        params,
        SttParams {
            model: "asr-1.0".into(),
            response_format: SttFormat::VerboseJson,
            timestamp_level: TimestampLevel::Word,
            stream: false,
            language: Some("zh".into()),
        }
    );
    assert_eq!(validate(&params), Ok(()));
}

#[test]
fn absent_fields_take_their_defaults() {
    let params = parse(&[("model", "asr-1.0")], None).unwrap();
    assert_eq!(params, SttParams::new("asr-1.0"));
    assert_eq!(params.response_format, SttFormat::Json);
    assert_eq!(params.timestamp_level, TimestampLevel::Sentence);
    assert!(!params.stream);
    assert_eq!(params.language, None);
}

#[test]
fn the_language_comes_from_the_header_only() {
    // A `language` form field is accepted and ignored (wire-formats §4).
    let params = parse(&[("model", "asr-1.0"), ("language", "ja")], None).unwrap();
    assert_eq!(params.language, None);
    let params = parse(&[("language", "ja"), ("model", "asr-1.0")], Some("en")).unwrap();
    assert_eq!(params.language.as_deref(), Some("en"));
    // An empty header is no hint.
    for header in [Some(""), Some("   "), None] {
        let params = parse(&[("model", "asr-1.0")], header).unwrap();
        assert_eq!(params.language, None, "{header:?}");
    }
    assert_eq!(LANGUAGE_HEADER, "language");
}

#[test]
fn every_format_and_level_parses() {
    for format in SttFormat::ALL {
        for level in TimestampLevel::ALL {
            let params = parse(
                &[
                    ("model", "asr-1.0"),
                    ("response_format", format.as_str()),
                    ("timestamp_level", level.as_str()),
                ],
                None,
            )
            .unwrap();
            assert_eq!(
                (params.response_format, params.timestamp_level),
                (format, level)
            );
        }
        assert_eq!(
            serde_json::to_value(format).unwrap(),
            json!(format.as_str())
        );
    }
    let names: Vec<&str> = SttFormat::ALL.iter().map(|f| f.as_str()).collect();
    assert_eq!(names, ["json", "verbose_json", "srt", "vtt"]);
}

#[test]
fn unknown_fields_are_ignored_and_the_last_value_counts() {
    let params = parse(
        &[
            ("model", "speech-2.8-hd"),
            ("model", "asr-1.0"),
            ("response_format", "srt"),
            ("response_format", "vtt"),
            ("timestamp_granularities[]", "word"),
            ("prompt", "x"),
            ("stream", ""),
        ],
        None,
    )
    .unwrap();
    assert_eq!(params.model, "asr-1.0");
    assert_eq!(params.response_format, SttFormat::Vtt);
    assert_eq!(params.timestamp_level, TimestampLevel::Sentence);
    assert!(!params.stream);
}

#[test]
fn stream_values() {
    for (value, expected) in [
        ("true", true),
        ("TRUE", true),
        ("1", true),
        ("false", false),
        ("False", false),
        ("0", false),
    ] {
        let params = parse(&[("model", "asr-1.0"), ("stream", value)], None).unwrap();
        assert_eq!(params.stream, expected, "{value:?}");
    }
    assert_error(
        parse(&[("model", "asr-1.0"), ("stream", "yes")], None),
        "stream",
        Rule::UnsupportedValue,
        r#"'stream' is "yes"; it must be true or false"#,
    );
}

#[test]
fn bad_values_are_refused_with_their_field() {
    for value in ["text", "JSON", "diarized_json"] {
        assert_error(
            parse(&[("model", "asr-1.0"), ("response_format", value)], None),
            "response_format",
            Rule::UnsupportedValue,
            &format!(
                "'response_format' is {value:?}; it must be one of json, verbose_json, srt, vtt"
            ),
        );
    }
    for value in ["segment", "Word", "char"] {
        assert_error(
            parse(&[("model", "asr-1.0"), ("timestamp_level", value)], None),
            "timestamp_level",
            Rule::UnsupportedValue,
            &format!("'timestamp_level' is {value:?}; it must be one of sentence, word"),
        );
    }
}

#[test]
fn model_is_required_and_reported_first() {
    let message = "'model' is required and must not be empty";
    for fields in [
        vec![],
        vec![("model", "")],
        vec![("model", " ")],
        vec![("response_format", "bogus"), ("stream", "bogus")],
    ] {
        assert_error(parse(&fields, Some("en")), "model", Rule::Required, message);
    }
    assert_error(
        validate(&SttParams::new("")),
        "model",
        Rule::Required,
        message,
    );
}

// ---------------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------------

#[test]
fn stream_only_with_json() {
    for format in SttFormat::ALL {
        let mut params = SttParams::new(MODEL);
        params.response_format = format;
        assert_eq!(validate(&params), Ok(()), "{format} without stream");
        params.stream = true;
        if format == SttFormat::Json {
            assert_eq!(validate(&params), Ok(()));
        } else {
            assert_error(
                validate(&params),
                "stream",
                Rule::NotStreamable,
                &format!("'stream' is only available with response_format json, not {format}"),
            );
        }
    }
}

#[test]
fn timestamp_level_is_accepted_with_json() {
    let params = parse(
        &[
            ("model", "asr-1.0"),
            ("timestamp_level", "word"),
            ("stream", "true"),
        ],
        None,
    )
    .unwrap();
    assert_eq!(validate(&params), Ok(()));
    assert!(!params.response_format.has_timestamps());
    assert!(SttFormat::Srt.has_timestamps());
}

#[test]
fn constants() {
    assert_eq!(MODEL, "asr-1.0");
    assert_eq!(MAX_FILE_BYTES, 50_000_000);
    assert_eq!(MAX_SECONDS, 500);
    assert_eq!(
        ACCEPTED_CONTAINERS,
        ["wav", "aiff", "flac", "m4a", "mp3", "aac", "opus", "ogg"]
    );
    assert_eq!(DONE_SENTINEL, "[DONE]");
}

// ---------------------------------------------------------------------------------------------
// The fields sent upstream
// ---------------------------------------------------------------------------------------------

#[test]
fn to_fields_lists_every_field_in_order() {
    let mut params = SttParams::new("asr-1.0");
    params.response_format = SttFormat::Json;
    params.timestamp_level = TimestampLevel::Word;
    params.stream = true;
    params.language = Some("yue".into());
    assert_eq!(
        params.to_fields(),
        [
            ("model", "asr-1.0".to_owned()),
            ("response_format", "json".to_owned()),
            ("timestamp_level", "word".to_owned()),
            ("stream", "true".to_owned()),
        ]
    );
}

#[test]
fn to_fields_round_trips_through_from_fields() {
    for format in SttFormat::ALL {
        for level in TimestampLevel::ALL {
            for stream in [false, true] {
                for language in [None, Some("en")] {
                    let params = SttParams {
                        model: "asr-1.0".into(),
                        response_format: format,
                        timestamp_level: level,
                        stream,
                        language: language.map(str::to_owned),
                    };
                    let fields = params.to_fields();
                    let back = SttParams::from_fields(
                        fields.iter().map(|(name, value)| (*name, value.as_str())),
                        params.language.as_deref(),
                    )
                    .unwrap();
                    assert_eq!(back, params);
                }
            }
        }
    }
}

#[test]
fn params_round_trip_through_json() {
    let params = parse(
        &[("model", "asr-1.0"), ("response_format", "srt")],
        Some("ja"),
    )
    .unwrap();
    let value = serde_json::to_value(&params).unwrap();
    assert_eq!(
        value,
        json!({"model": "asr-1.0", "response_format": "srt", "timestamp_level": "sentence",
               "stream": false, "language": "ja"})
    );
    assert_eq!(serde_json::from_value::<SttParams>(value).unwrap(), params);
}

// ---------------------------------------------------------------------------------------------
// Responses (the examples of wire-formats §4)
// ---------------------------------------------------------------------------------------------

#[test]
fn decodes_the_json_body() {
    let body: SttJson =
        serde_json::from_str(r#"{"text":"Hi all. Let's start.","duration":3.4,"trace_id":"abc"}"#)
            .unwrap();
    assert_eq!(
        body,
        SttJson {
            text: "Hi all. Let's start.".into(),
            duration: 3.4,
            trace_id: Some("abc".into()),
        }
    );
    let no_trace: SttJson = serde_json::from_str(r#"{"text":"x","duration":12.3}"#).unwrap();
    assert_eq!(no_trace.trace_id, None);
    assert_eq!(
        serde_json::to_string(&no_trace).unwrap(),
        r#"{"text":"x","duration":12.3}"#
    );
    // The billed duration is required.
    assert!(serde_json::from_str::<SttJson>(r#"{"text":"x"}"#).is_err());
}

#[test]
fn decodes_the_verbose_json_example() {
    let body = r#"{"text":"Hi all. Let's start.","duration":3.4,"n_speakers":1,
 "segments":[{"id":0,"start":0.2,"end":1.1,"text":"Hi all.","speaker":"0"},
             {"id":1,"start":1.3,"end":2.6,"text":"Let's start.","speaker":"0"}]}"#;
    let decoded: SttVerboseJson = serde_json::from_str(body).unwrap();
    let segment = |id, start, end, text: &str| SttSegment {
        id,
        start,
        end,
        text: text.into(),
        speaker: "0".into(),
        words: None,
    };
    assert_eq!(
        decoded,
        SttVerboseJson {
            text: "Hi all. Let's start.".into(),
            duration: 3.4,
            n_speakers: 1,
            segments: vec![
                segment(0, 0.2, 1.1, "Hi all."),
                segment(1, 1.3, 2.6, "Let's start."),
            ],
            trace_id: None,
        }
    );
    // It serializes back to the same JSON.
    assert_eq!(
        serde_json::to_value(&decoded).unwrap(),
        serde_json::from_str::<serde_json::Value>(body).unwrap()
    );
}

#[test]
fn decodes_word_level_segments_in_the_assumed_shape() {
    let decoded: SttVerboseJson = serde_json::from_value(json!({
        "text": "你好", "duration": 1.0, "n_speakers": 2,
        "segments": [{"id": 0, "start": 0.0, "end": 1.0, "text": "你好", "speaker": 1,
                      "words": [{"text": "你", "start": 0.0, "end": 0.5},
                                {"word": "好", "start": 0.5, "end": 1.0}]}]
    }))
    .unwrap();
    let segment = &decoded.segments[0];
    assert_eq!(segment.speaker, "1", "a numeric speaker is read as text");
    assert_eq!(
        segment.words,
        Some(vec![
            SttWord {
                text: "你".into(),
                start: 0.0,
                end: 0.5
            },
            SttWord {
                text: "好".into(),
                start: 0.5,
                end: 1.0
            },
        ])
    );
    assert_eq!(
        serde_json::to_value(segment).unwrap()["words"][1],
        json!({"text": "好", "start": 0.5, "end": 1.0})
    );
}

#[test]
fn missing_unconfirmed_fields_take_defaults() {
    let decoded: SttVerboseJson = serde_json::from_value(json!({
        "text": "x", "duration": 1.0,
        "segments": [{"id": 0, "start": 0.0, "end": 1.0, "text": "x", "speaker": null}]
    }))
    .unwrap();
    assert_eq!(decoded.n_speakers, 0);
    assert_eq!(decoded.segments[0].speaker, "");
    let bare: SttVerboseJson =
        serde_json::from_value(json!({"text": "", "duration": 0.0})).unwrap();
    assert!(bare.segments.is_empty());
}

// ---------------------------------------------------------------------------------------------
// Stream frames
// ---------------------------------------------------------------------------------------------

const REFERENCE_STREAM: &str = "data: {\"index\":0,\"delta\":\"Hi all.\"}\n\n\
data: {\"index\":1,\"delta\":\" Let's start.\"}\n\n\
data: {\"index\":2,\"delta\":\"\",\"finish\":true,\"duration\":3.4}\n\n";

#[test]
fn decodes_the_reference_stream() {
    let frames: Vec<SttStreamFrame> = REFERENCE_STREAM
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| SttStreamFrame::parse(data).unwrap().unwrap())
        .collect();
    assert_eq!(
        frames,
        [
            SttStreamFrame::delta(0, "Hi all."),
            SttStreamFrame::delta(1, " Let's start."),
            SttStreamFrame::finish(2, 3.4),
        ]
    );
    assert!(!frames[0].is_final() && !frames[1].is_final() && frames[2].is_final());
    assert_eq!(frames[2].duration, Some(3.4));
    assert_eq!(frames[0].duration, None);
    let text: String = frames.iter().map(|f| f.delta.as_str()).collect();
    assert_eq!(text, "Hi all. Let's start.");
}

#[test]
fn frames_serialize_as_the_reference_stream() {
    let frames = [
        SttStreamFrame::delta(0, "Hi all."),
        SttStreamFrame::delta(1, " Let's start."),
        SttStreamFrame::finish(2, 3.4),
    ];
    let stream: String = frames
        .iter()
        .map(|f| format!("data: {}\n\n", serde_json::to_string(f).unwrap()))
        .collect();
    assert_eq!(stream, REFERENCE_STREAM);
}

#[test]
fn frames_decode_without_the_unconfirmed_index() {
    let frame = SttStreamFrame::parse(r#"{"delta":"","finish":true,"duration":3.4}"#)
        .unwrap()
        .unwrap();
    assert_eq!(frame, SttStreamFrame::finish(0, 3.4));
    let empty = SttStreamFrame::parse("{}").unwrap().unwrap();
    assert_eq!(empty, SttStreamFrame::default());
    assert!(!empty.is_final());
    assert_eq!(SttStreamFrame::parse("[DONE]").unwrap(), None);
    assert!(SttStreamFrame::parse(r#"{"delta": 5}"#).is_err());
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

#[test]
fn decodes_the_vendor_error_body() {
    let err: SttError = serde_json::from_value(json!({
        "error": {"message": "file too large", "type": "invalid_request_error", "code": 2013},
        "request_id": "req-9"
    }))
    .unwrap();
    assert_eq!(err.message(), "file too large");
    assert_eq!(err.error.kind.as_deref(), Some("invalid_request_error"));
    assert_eq!(err.error.code.as_deref(), Some("2013"));
    assert_eq!(err.error.param, None);
    assert_eq!(err.request_id.as_deref(), Some("req-9"));

    let minimal: SttError = serde_json::from_str(r#"{"error":{"message":"boom"}}"#).unwrap();
    assert_eq!(minimal, SttError::new("boom"));
    assert_eq!(
        serde_json::to_string(&minimal).unwrap(),
        r#"{"error":{"message":"boom"}}"#
    );
    let null_code: SttError =
        serde_json::from_str(r#"{"error":{"message":"m","param":null,"code":null}}"#).unwrap();
    assert_eq!(null_code, SttError::new("m"));
}

#[test]
fn a_field_error_becomes_an_openai_style_body() {
    let err = parse(&[("model", "asr-1.0"), ("response_format", "text")], None).unwrap_err();
    let body = serde_json::to_value(SttError::from(&err)).unwrap();
    assert_eq!(
        body,
        json!({"error": {
            "message": "'response_format' is \"text\"; it must be one of json, verbose_json, srt, vtt",
            "type": INVALID_REQUEST_ERROR,
            "param": "response_format",
            "code": "unsupported_value"
        }})
    );
}

proptest! {
    #[test]
    fn from_fields_never_panics_and_keeps_the_model(
        model in "[a-z0-9.\\-]{1,12}",
        fields in proptest::collection::vec(("[a-z_\\[\\]]{0,16}", "\\PC{0,12}"), 0..8),
        header in proptest::option::of("\\PC{0,8}"),
    ) {
        let mut all: Vec<(&str, &str)> = fields.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        all.push(("model", model.as_str()));
        if let Ok(params) = SttParams::from_fields(all.iter().copied(), header.as_deref()) {
            prop_assert_eq!(&params.model, &model);
            prop_assert_eq!(params.language.as_deref(), header.as_deref().map(str::trim).filter(|h| !h.is_empty()));
            let fields = params.to_fields();
            let back = SttParams::from_fields(fields.iter().map(|(n, v)| (*n, v.as_str())), params.language.as_deref());
            prop_assert_eq!(back, Ok(params));
        }
    }
}
