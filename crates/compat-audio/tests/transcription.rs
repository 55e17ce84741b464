//! `POST /v1/audio/transcriptions`: form fields, validation, the file checks, every rendering
//! against hand-written expected bodies, word splitting, and the stream events.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use serde_json::json;
use tollgate_compat_audio::transcription::{
    ACCEPTED_CONTAINERS, DEFAULT_ALIASES, DurationUsage, GRANULARITIES_FIELD, Granularity,
    JsonResponse, MAX_FILE_BYTES, MAX_SECONDS, MODEL, Segment, StreamUsage, Transcript,
    TranscriptionFormat, TranscriptionParams, TranscriptionStreamEvent, VerboseJsonResponse, Word,
    container_from_filename, default_alias, language_name, sniff_container, speaker_label,
    split_words, validate, validate_duration, validate_file, words_from_segments,
};
use tollgate_compat_audio::{FieldError, Rule};

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

fn parse(fields: &[(&str, &str)]) -> Result<TranscriptionParams, FieldError> {
    TranscriptionParams::from_fields(fields.iter().copied())
}

// ---------------------------------------------------------------------------------------------
// Form fields
// ---------------------------------------------------------------------------------------------

#[test]
fn parses_every_field() {
    let params = parse(&[
        ("model", "gpt-4o-transcribe"),
        ("response_format", "verbose_json"),
        ("language", " yue "),
        ("prompt", "  Names: Tollgate, ASR. "),
        ("temperature", "0.2"),
        ("timestamp_granularities[]", "word"),
        ("timestamp_granularities[]", "segment"),
        ("stream", "false"),
    ])
    .unwrap();
    assert_eq!(
        params,
        TranscriptionParams {
            model: "gpt-4o-transcribe".into(),
            response_format: TranscriptionFormat::VerboseJson,
            language: Some("yue".into()),
            prompt: Some("  Names: Tollgate, ASR. ".into()),
            temperature: Some(0.2),
            timestamp_granularities: vec![Granularity::Word, Granularity::Segment],
            stream: false,
        }
    );
    assert_eq!(validate(&params), Ok(()));
}

#[test]
fn absent_fields_take_their_defaults() {
    let params = parse(&[("model", "whisper-1")]).unwrap();
    assert_eq!(params, TranscriptionParams::new("whisper-1"));
    assert_eq!(params.response_format, TranscriptionFormat::Json);
    assert_eq!(
        (params.language, params.prompt, params.temperature),
        (None, None, None)
    );
    assert!(params.timestamp_granularities.is_empty());
    assert!(!params.stream);
}

#[test]
fn every_response_format_parses() {
    for (value, format) in [
        ("json", TranscriptionFormat::Json),
        ("verbose_json", TranscriptionFormat::VerboseJson),
        ("srt", TranscriptionFormat::Srt),
        ("vtt", TranscriptionFormat::Vtt),
        ("text", TranscriptionFormat::Text),
    ] {
        let params = parse(&[("model", "asr-1.0"), ("response_format", value)]).unwrap();
        assert_eq!(params.response_format, format);
        assert_eq!(format.as_str(), value);
        assert_eq!(format.to_string(), value);
        assert_eq!(serde_json::to_value(format).unwrap(), json!(value));
        assert_eq!(
            serde_json::from_value::<TranscriptionFormat>(json!(value)).unwrap(),
            format
        );
    }
}

#[test]
fn repeated_granularities_are_collected_in_order_without_repeats() {
    let params = parse(&[
        ("timestamp_granularities[]", "segment"),
        ("model", "whisper-1"),
        ("timestamp_granularities[]", "word"),
        ("timestamp_granularities[]", "segment"),
    ])
    .unwrap();
    assert_eq!(
        params.timestamp_granularities,
        [Granularity::Segment, Granularity::Word]
    );
}

#[test]
fn granularities_accept_the_other_spellings() {
    for fields in [
        [("timestamp_granularities", "word"), ("x", "")],
        [("timestamp_granularities[0]", "word"), ("x", "")],
        [("timestamp_granularities[]", " word , "), ("x", "")],
        [
            ("timestamp_granularities[]", ""),
            ("timestamp_granularities[]", "word"),
        ],
    ] {
        let mut all = vec![("model", "whisper-1")];
        all.extend(fields);
        let params = parse(&all).unwrap();
        assert_eq!(
            params.timestamp_granularities,
            [Granularity::Word],
            "{all:?}"
        );
    }
    let params = parse(&[
        ("model", "whisper-1"),
        ("timestamp_granularities", "word,segment"),
    ])
    .unwrap();
    assert_eq!(
        params.timestamp_granularities,
        [Granularity::Word, Granularity::Segment]
    );
    // Names that merely start alike are other fields.
    let params = parse(&[
        ("model", "whisper-1"),
        ("timestamp_granularities_x", "bogus"),
        ("timestamp_granularities[a]", "bogus"),
    ])
    .unwrap();
    assert!(params.timestamp_granularities.is_empty());
}

#[test]
fn unknown_granularity_is_refused() {
    assert_error(
        parse(&[
            ("model", "whisper-1"),
            ("timestamp_granularities[]", "word"),
            ("timestamp_granularities[]", "sentence"),
        ]),
        GRANULARITIES_FIELD,
        Rule::UnsupportedValue,
        r#"'timestamp_granularities[]' has "sentence"; each value must be word or segment"#,
    );
    assert_eq!(GRANULARITIES_FIELD, "timestamp_granularities[]");
}

#[test]
fn unknown_fields_are_ignored() {
    let params = parse(&[
        ("model", "gpt-4o-mini-transcribe"),
        ("include[]", "logprobs"),
        ("chunking_strategy", "auto"),
        ("known_speaker_names[]", "Ann"),
        ("Model", "not-the-model-field"),
        ("file", "not a file part"),
    ])
    .unwrap();
    assert_eq!(params, TranscriptionParams::new("gpt-4o-mini-transcribe"));
}

#[test]
fn stream_values() {
    for (value, expected) in [
        ("true", true),
        ("TRUE", true),
        ("True", true),
        ("1", true),
        ("false", false),
        ("False", false),
        ("0", false),
        (" true ", true),
        ("", false),
    ] {
        let params = parse(&[("model", "whisper-1"), ("stream", value)]).unwrap();
        assert_eq!(params.stream, expected, "{value:?}");
    }
    for value in ["yes", "2", "on", "truee"] {
        assert_error(
            parse(&[("model", "whisper-1"), ("stream", value)]),
            "stream",
            Rule::UnsupportedValue,
            &format!("'stream' is {value:?}; it must be true or false"),
        );
    }
}

#[test]
fn bad_values_are_refused_with_their_field() {
    let formats = "json, verbose_json, srt, vtt, text";
    for value in ["xml", "JSON", "diarized_json"] {
        assert_error(
            parse(&[("model", "whisper-1"), ("response_format", value)]),
            "response_format",
            Rule::UnsupportedValue,
            &format!("'response_format' is {value:?}; it must be one of {formats}"),
        );
    }
    for value in ["warm", "0,5", "1e"] {
        assert_error(
            parse(&[("model", "whisper-1"), ("temperature", value)]),
            "temperature",
            Rule::OutOfRange,
            "'temperature' must be a number between 0 and 1",
        );
    }
}

#[test]
fn model_is_required() {
    let message = "'model' is required and must not be empty";
    for fields in [
        vec![],
        vec![("model", "")],
        vec![("model", "   ")],
        vec![("response_format", "json")],
    ] {
        assert_error(parse(&fields), "model", Rule::Required, message);
    }
    // Checked first, whatever the order of the parts.
    assert_error(
        parse(&[("response_format", "xml"), ("stream", "maybe")]),
        "model",
        Rule::Required,
        message,
    );
    assert_error(
        parse(&[
            ("stream", "maybe"),
            ("model", "m"),
            ("response_format", "xml"),
        ]),
        "response_format",
        Rule::UnsupportedValue,
        r#"'response_format' is "xml"; it must be one of json, verbose_json, srt, vtt, text"#,
    );
}

#[test]
fn the_last_value_of_a_repeated_field_counts_and_empty_values_are_absent() {
    let params = parse(&[
        ("model", "whisper-1"),
        ("model", "asr-1.0"),
        ("response_format", "srt"),
        ("response_format", "text"),
        ("language", ""),
        ("prompt", ""),
        ("temperature", ""),
        ("stream", "1"),
    ])
    .unwrap();
    assert_eq!(params.model, "asr-1.0");
    assert_eq!(params.response_format, TranscriptionFormat::Text);
    assert_eq!(
        (params.language, params.prompt, params.temperature),
        (None, None, None)
    );
    assert!(params.stream);
    // An empty response_format is the default.
    let params = parse(&[("model", "m"), ("response_format", "")]).unwrap();
    assert_eq!(params.response_format, TranscriptionFormat::Json);
}

#[test]
fn wants_words_needs_the_word_granularity_and_a_format_that_shows_it() {
    let mut params = TranscriptionParams::new("whisper-1");
    for format in TranscriptionFormat::ALL {
        params.response_format = format;
        params.timestamp_granularities = vec![Granularity::Segment];
        assert!(!params.wants_words(), "{format}");
        params.timestamp_granularities = vec![Granularity::Segment, Granularity::Word];
        assert_eq!(
            params.wants_words(),
            matches!(
                format,
                TranscriptionFormat::VerboseJson
                    | TranscriptionFormat::Srt
                    | TranscriptionFormat::Vtt
            ),
            "{format}"
        );
    }
}

#[test]
fn params_round_trip_through_json() {
    let params = parse(&[
        ("model", "whisper-1"),
        ("response_format", "vtt"),
        ("timestamp_granularities[]", "word"),
        ("temperature", "1"),
    ])
    .unwrap();
    let value = serde_json::to_value(&params).unwrap();
    assert_eq!(
        value,
        json!({"model": "whisper-1", "response_format": "vtt", "temperature": 1.0,
               "timestamp_granularities": ["word"], "stream": false})
    );
    assert_eq!(
        serde_json::from_value::<TranscriptionParams>(value).unwrap(),
        params
    );
}

// ---------------------------------------------------------------------------------------------
// Validation and the model
// ---------------------------------------------------------------------------------------------

#[test]
fn stream_is_refused_with_srt_vtt_and_verbose_json() {
    for format in [
        TranscriptionFormat::Srt,
        TranscriptionFormat::Vtt,
        TranscriptionFormat::VerboseJson,
    ] {
        let params = parse(&[
            ("model", "whisper-1"),
            ("response_format", format.as_str()),
            ("stream", "true"),
        ])
        .unwrap();
        assert_error(
            validate(&params),
            "stream",
            Rule::NotStreamable,
            &format!("'stream' is only available with response_format json or text, not {format}"),
        );
        // Without stream the format is fine.
        let params =
            parse(&[("model", "whisper-1"), ("response_format", format.as_str())]).unwrap();
        assert_eq!(validate(&params), Ok(()));
    }
}

#[test]
fn stream_is_accepted_with_json_and_text() {
    for format in ["json", "text"] {
        let params = parse(&[
            ("model", "whisper-1"),
            ("response_format", format),
            ("stream", "true"),
        ])
        .unwrap();
        assert!(params.stream);
        assert_eq!(validate(&params), Ok(()), "{format}");
    }
    let params = parse(&[("model", "whisper-1"), ("stream", "true")]).unwrap();
    assert_eq!(validate(&params), Ok(()));
}

#[test]
fn temperature_must_be_between_0_and_1() {
    let mut params = TranscriptionParams::new("whisper-1");
    for ok in [0.0, 0.5, 1.0] {
        params.temperature = Some(ok);
        assert_eq!(validate(&params), Ok(()), "{ok}");
    }
    for bad in [-0.01, 1.01, f64::NAN, f64::INFINITY] {
        params.temperature = Some(bad);
        assert_error(
            validate(&params),
            "temperature",
            Rule::OutOfRange,
            "'temperature' must be a number between 0 and 1",
        );
    }
    // "NaN" parses as a number and is then refused by validate.
    let params = parse(&[("model", "m"), ("temperature", "NaN")]).unwrap();
    assert_eq!(validate(&params).unwrap_err().field, "temperature");
}

#[test]
fn validate_checks_the_model_too() {
    let params = TranscriptionParams::new(" ");
    assert_error(
        validate(&params),
        "model",
        Rule::Required,
        "'model' is required and must not be empty",
    );
}

#[test]
fn validate_reports_the_first_field() {
    let mut params = TranscriptionParams::new("whisper-1");
    params.temperature = Some(2.0);
    params.stream = true;
    params.response_format = TranscriptionFormat::Srt;
    assert_eq!(validate(&params).unwrap_err().field, "temperature");
}

#[test]
fn openai_transcription_models_map_to_asr_1() {
    assert_eq!(MODEL, "asr-1.0");
    let aliases: Vec<&str> = DEFAULT_ALIASES.iter().map(|(alias, _)| *alias).collect();
    assert_eq!(
        aliases,
        [
            "whisper-1",
            "gpt-4o-transcribe",
            "gpt-4o-mini-transcribe",
            "gpt-4o-mini-transcribe-2025-12-15",
            "gpt-4o-transcribe-diarize",
            "gpt-transcribe",
        ]
    );
    for alias in aliases {
        assert_eq!(default_alias(alias), Some("asr-1.0"), "{alias}");
    }
    assert_eq!(default_alias("asr-1.0"), None);
    assert_eq!(default_alias("Whisper-1"), None);
    assert_eq!(default_alias("tts-1"), None);
}

#[test]
fn new_rules_have_stable_codes() {
    assert_eq!(Rule::UnsupportedValue.code(), "unsupported_value");
    assert_eq!(Rule::NotStreamable.code(), "not_streamable");
    assert_eq!(Rule::TooLarge.code(), "too_large");
    assert_eq!(Rule::AudioTooLong.code(), "audio_too_long");
    // The speech rules keep theirs.
    assert_eq!(Rule::Required.code(), "required");
    assert_eq!(Rule::TooLong.code(), "too_long");
    assert_eq!(Rule::TooLongForFormat.code(), "too_long_for_format");
    assert_eq!(Rule::OutOfRange.code(), "out_of_range");
    assert_eq!(Rule::ALL.len(), 8);
}

// ---------------------------------------------------------------------------------------------
// The file
// ---------------------------------------------------------------------------------------------

#[test]
fn file_limits() {
    assert_eq!(MAX_FILE_BYTES, 50_000_000);
    assert_eq!(MAX_SECONDS, 500);
    assert_eq!(
        ACCEPTED_CONTAINERS,
        ["wav", "aiff", "flac", "m4a", "mp3", "aac", "opus", "ogg"]
    );
    let wav = b"RIFF\x00\x00\x00\x00WAVEfmt ";
    assert_eq!(validate_file(MAX_FILE_BYTES, Some("a.wav"), wav), Ok("wav"));
    assert_error(
        validate_file(MAX_FILE_BYTES + 1, Some("a.wav"), wav),
        "file",
        Rule::TooLarge,
        "'file' has 50000001 bytes; at most 50000000 (50 MB) are allowed",
    );
    assert_error(
        validate_file(0, Some("a.wav"), b""),
        "file",
        Rule::Required,
        "'file' is required and must not be empty",
    );
}

#[test]
fn file_formats_are_recognised_by_content() {
    let id3_then_flac = {
        let mut bytes = b"ID3\x04\x00\x00\x00\x00\x00\x05".to_vec();
        bytes.extend_from_slice(&[0; 5]);
        bytes.extend_from_slice(b"fLaC");
        bytes
    };
    let mut ogg_opus = b"OggS\x00\x02".to_vec();
    ogg_opus.extend_from_slice(&[0; 22]);
    ogg_opus.extend_from_slice(b"OpusHead\x01\x02");
    let cases: Vec<(&[u8], Option<&str>)> = vec![
        (b"RIFF\x24\x08\x00\x00WAVEfmt ", Some("wav")),
        (b"RF64\xff\xff\xff\xffWAVEds64", Some("wav")),
        (b"RIFF\x24\x08\x00\x00AVI LIST", None),
        (b"FORM\x00\x00\x00\x00AIFFCOMM", Some("aiff")),
        (b"FORM\x00\x00\x00\x00AIFCFVER", Some("aiff")),
        (b"fLaC\x00\x00\x00\x22", Some("flac")),
        (b"\x00\x00\x00\x20ftypM4A \x00\x00", Some("m4a")),
        (b"OggS\x00\x02\x00\x00\x00\x00", Some("ogg")),
        (&ogg_opus, Some("opus")),
        (b"ID3\x04\x00\x00\x00\x00\x00\x00", Some("mp3")),
        (b"ID3\x04\x00\x00\x00\x00\x7f\x7f", Some("mp3")), // tag longer than the head
        (&id3_then_flac, Some("flac")),
        (&[0xff, 0xfb, 0x90, 0x64], Some("mp3")), // MPEG-1 layer III
        (&[0xff, 0xf3, 0x64, 0xc4], Some("mp3")), // MPEG-2 layer III
        (&[0xff, 0xfd, 0x90, 0x64], None),        // layer II
        (&[0xff, 0xf1, 0x50, 0x80], Some("aac")), // ADTS, MPEG-4
        (&[0xff, 0xf9, 0x50, 0x80], Some("aac")), // ADTS, MPEG-2
        (&[0x1a, 0x45, 0xdf, 0xa3], None),        // WebM
        (&[0x00, 0x00, 0x01, 0x00, 0xff, 0xff], None), // raw PCM
        (b"", None),
        (b"RIF", None),
    ];
    for (head, expected) in cases {
        assert_eq!(sniff_container(head), expected, "{head:?}");
    }
}

#[test]
fn file_formats_fall_back_to_the_name() {
    for (name, expected) in [
        ("a.wav", Some("wav")),
        ("A.WAVE", Some("wav")),
        ("b.aif", Some("aiff")),
        ("b.aifc", Some("aiff")),
        ("c.flac", Some("flac")),
        ("d.m4a", Some("m4a")),
        ("e.mp3", Some("mp3")),
        ("f.aac", Some("aac")),
        ("g.opus", Some("opus")),
        ("h.ogg", Some("ogg")),
        ("h.oga", Some("ogg")),
        ("i.pcm", None),
        ("j.webm", None),
        ("k.mp4", None),
        ("wav", None),
        ("", None),
    ] {
        assert_eq!(container_from_filename(name), expected, "{name}");
    }
    // The content wins over the name; the name is the fallback.
    assert_eq!(validate_file(10, Some("x.mp3"), b"fLaC\x00"), Ok("flac"));
    assert_eq!(validate_file(10, Some("x.mp3"), b"\x00\x00"), Ok("mp3"));
    let message = "'file' is not in an accepted format; send one of wav, aiff, flac, m4a, mp3, \
                   aac, opus, ogg (raw PCM without a container is not supported)";
    assert_error(
        validate_file(10, Some("x.pcm"), b"\x00\x00"),
        "file",
        Rule::UnsupportedValue,
        message,
    );
    assert_error(
        validate_file(10, None, b"\x00\x00"),
        "file",
        Rule::UnsupportedValue,
        message,
    );
}

#[test]
fn audio_length_limit() {
    assert_eq!(validate_duration(0.0), Ok(()));
    assert_eq!(validate_duration(500.0), Ok(()));
    assert_eq!(validate_duration(f64::NAN), Ok(()));
    assert_error(
        validate_duration(500.5),
        "file",
        Rule::AudioTooLong,
        "'file' lasts 500.5 seconds; at most 500 are allowed, split longer audio before upload",
    );
}

// ---------------------------------------------------------------------------------------------
// Renderings
// ---------------------------------------------------------------------------------------------

/// Two English sentences by two speakers; the second has a line break in its text.
fn english() -> Transcript {
    let mut transcript = Transcript::new("Hello there, gateway. How are you today?", 64.2);
    transcript.language = Some("en".into());
    transcript.segments = vec![
        Segment::new(0, 0.0, 2.5, "Hello there, gateway.").with_speaker("S1"),
        Segment::new(1, 62.0456, 63.9996, "How are\n\nyou  today?").with_speaker("S2"),
    ];
    transcript
}

/// One English sentence with word timestamps spread over it.
fn english_words() -> Transcript {
    let mut transcript = Transcript::new("Hello there, gateway.", 2.1);
    transcript.language = Some("en".into());
    transcript.segments = vec![Segment::new(0, 0.0, 2.1, "Hello there, gateway.")];
    transcript.words = words_from_segments(&transcript.segments);
    transcript
}

/// Two Chinese sentences with per-character timestamps.
fn chinese_chars() -> Transcript {
    let mut transcript = Transcript::new("你好，世界。再见", 3.0);
    transcript.language = Some("zh".into());
    transcript.segments = vec![
        Segment::new(0, 0.0, 2.0, "你好，世界。").with_speaker(speaker_label("0")),
        Segment::new(1, 2.5, 3.0, "再见").with_speaker(speaker_label("0")),
    ];
    transcript.words = words_from_segments(&transcript.segments);
    transcript
}

#[test]
fn english_srt_and_vtt_match_the_expected_files() {
    let transcript = english();
    assert_eq!(
        transcript.to_srt(),
        include_str!("fixtures/transcription/english.srt")
    );
    assert_eq!(
        transcript.to_vtt(),
        include_str!("fixtures/transcription/english.vtt")
    );
}

#[test]
fn word_level_srt_and_vtt_match_the_expected_files() {
    let transcript = english_words();
    assert_eq!(
        transcript.to_srt(),
        include_str!("fixtures/transcription/english_words.srt")
    );
    assert_eq!(
        transcript.to_vtt(),
        include_str!("fixtures/transcription/english_words.vtt")
    );
}

#[test]
fn chinese_per_character_srt_and_vtt_match_the_expected_files() {
    let transcript = chinese_chars();
    assert_eq!(transcript.words.len(), 6);
    assert_eq!(
        transcript.to_srt(),
        include_str!("fixtures/transcription/chinese_chars.srt")
    );
    assert_eq!(
        transcript.to_vtt(),
        include_str!("fixtures/transcription/chinese_chars.vtt")
    );
}

#[test]
fn render_picks_the_body_and_content_type() {
    let transcript = english();
    let expected = [
        (TranscriptionFormat::Json, "application/json"),
        (TranscriptionFormat::VerboseJson, "application/json"),
        (TranscriptionFormat::Srt, "text/plain; charset=utf-8"),
        (TranscriptionFormat::Vtt, "text/vtt; charset=utf-8"),
        (TranscriptionFormat::Text, "text/plain; charset=utf-8"),
    ];
    for (format, content_type) in expected {
        let rendered = transcript.render(format, 65);
        assert_eq!(rendered.content_type, content_type, "{format}");
        assert_eq!(format.content_type(), content_type);
        let body = match format {
            TranscriptionFormat::Json => serde_json::to_string(&transcript.to_json(65)).unwrap(),
            TranscriptionFormat::VerboseJson => {
                serde_json::to_string(&transcript.to_verbose_json(65)).unwrap()
            }
            TranscriptionFormat::Srt => transcript.to_srt(),
            TranscriptionFormat::Vtt => transcript.to_vtt(),
            TranscriptionFormat::Text => transcript.to_text(),
        };
        assert_eq!(rendered.body, body, "{format}");
    }
}

#[test]
fn json_body_has_text_duration_and_usage() {
    let rendered = english().render(TranscriptionFormat::Json, 65);
    assert_eq!(
        rendered.body,
        r#"{"text":"Hello there, gateway. How are you today?","duration":64.2,"usage":{"type":"duration","seconds":65}}"#
    );
    let decoded: JsonResponse = serde_json::from_str(&rendered.body).unwrap();
    assert_eq!(decoded, english().to_json(65));
    assert_eq!(decoded.usage, Some(DurationUsage::new(65)));
}

#[test]
fn text_body_is_the_text_and_a_line_break() {
    assert_eq!(
        english().to_text(),
        "Hello there, gateway. How are you today?\n"
    );
    assert_eq!(Transcript::new("", 0.0).to_text(), "\n");
}

#[test]
fn durations_are_rounded_to_milliseconds() {
    let mut transcript = Transcript::new("x", 3.4000000000000004);
    transcript.segments = vec![Segment::new(0, -1.0, 1.23456, "x")];
    assert_eq!(transcript.to_json(4).duration, 3.4);
    let verbose = transcript.to_verbose_json(4);
    assert_eq!(verbose.duration, 3.4);
    assert_eq!(
        (verbose.segments[0].start, verbose.segments[0].end),
        (0.0, 1.235)
    );
    assert_eq!(Transcript::new("x", f64::NAN).to_json(0).duration, 0.0);
}

/// The fields the OpenAI SDK's `TranscriptionVerbose` and `TranscriptionSegment` require
/// (wire-formats §1.2), plus docs/api.md §2.3's.
const VERBOSE_FIELDS: [&str; 7] = [
    "task",
    "language",
    "duration",
    "text",
    "segments",
    "usage",
    "n_speakers",
];
const SEGMENT_FIELDS: [&str; 11] = [
    "id",
    "seek",
    "start",
    "end",
    "text",
    "tokens",
    "temperature",
    "avg_logprob",
    "compression_ratio",
    "no_speech_prob",
    "speaker",
];

#[test]
fn verbose_json_has_every_field_the_openai_sdk_requires() {
    let value = serde_json::to_value(english().to_verbose_json(65)).unwrap();
    let object = value.as_object().unwrap();
    let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
    keys.sort_unstable();
    let mut expected = VERBOSE_FIELDS.to_vec();
    expected.sort_unstable();
    assert_eq!(keys, expected, "no words unless asked for");
    for segment in value["segments"].as_array().unwrap() {
        let mut keys: Vec<&str> = segment
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        let mut expected = SEGMENT_FIELDS.to_vec();
        expected.sort_unstable();
        assert_eq!(keys, expected);
    }
    assert_eq!(
        value,
        json!({
            "task": "transcribe",
            "language": "english",
            "duration": 64.2,
            "text": "Hello there, gateway. How are you today?",
            "segments": [
                {"id": 0, "seek": 0, "start": 0.0, "end": 2.5, "text": " Hello there, gateway.",
                 "tokens": [], "temperature": 0.0, "avg_logprob": 0.0, "compression_ratio": 0.0,
                 "no_speech_prob": 0.0, "speaker": "S1"},
                {"id": 1, "seek": 0, "start": 62.046, "end": 64.0, "text": " How are\n\nyou  today?",
                 "tokens": [], "temperature": 0.0, "avg_logprob": 0.0, "compression_ratio": 0.0,
                 "no_speech_prob": 0.0, "speaker": "S2"}
            ],
            "n_speakers": 2,
            "usage": {"type": "duration", "seconds": 65}
        })
    );
}

#[test]
fn verbose_json_carries_words_when_asked_for() {
    let value = serde_json::to_value(english_words().to_verbose_json(3)).unwrap();
    assert_eq!(
        value["words"],
        json!([
            {"word": "Hello", "start": 0.0, "end": 0.618},
            {"word": "there", "start": 0.618, "end": 1.235},
            {"word": "gateway", "start": 1.235, "end": 2.1}
        ])
    );
    assert_eq!(value["n_speakers"], 1);
    assert_eq!(value["segments"][0]["speaker"], "S1", "unlabelled is S1");
}

#[test]
fn verbose_json_for_chinese_has_no_leading_space_and_the_language_name() {
    let verbose = chinese_chars().to_verbose_json(3);
    assert_eq!(verbose.language, "chinese");
    assert_eq!(verbose.segments[0].text, "你好，世界。");
    assert_eq!(verbose.segments[1].text, "再见");
    assert_eq!(verbose.n_speakers, 1);
    assert_eq!(verbose.segments[1].speaker, "S1");
    let words: Vec<&str> = verbose
        .words
        .as_ref()
        .unwrap()
        .iter()
        .map(|w| w.word.as_str())
        .collect();
    assert_eq!(words, ["你", "好", "世", "界", "再", "见"]);
}

#[test]
fn verbose_json_language_falls_back() {
    let mut transcript = Transcript::new("x", 1.0);
    assert_eq!(transcript.to_verbose_json(1).language, "unknown");
    transcript.language = Some("tlh".into());
    assert_eq!(transcript.to_verbose_json(1).language, "tlh");
    transcript.language = Some("yue".into());
    assert_eq!(transcript.to_verbose_json(1).language, "cantonese");
}

#[test]
fn verbose_json_decodes_openai_s_own_example() {
    // The example of wire-formats §1.2, without n_speakers or speakers.
    let body = json!({
        "task": "transcribe",
        "language": "english",
        "duration": 4.2,
        "text": "Hello there, gateway.",
        "segments": [
            {"id": 0, "seek": 0, "start": 0.0, "end": 2.1, "text": " Hello there, gateway.",
             "tokens": [50364, 2425, 50470], "temperature": 0.0, "avg_logprob": -0.21,
             "compression_ratio": 0.9, "no_speech_prob": 0.01}
        ],
        "words": [{"word": "Hello", "start": 0.0, "end": 0.4}],
        "usage": {"type": "duration", "seconds": 5}
    });
    let decoded: VerboseJsonResponse = serde_json::from_value(body).unwrap();
    assert_eq!(decoded.n_speakers, 0);
    assert_eq!(decoded.segments[0].tokens, [50364, 2425, 50470]);
    assert_eq!(decoded.segments[0].speaker, "");
    assert_eq!(decoded.words, Some(vec![Word::new("Hello", 0.0, 0.4)]));
    assert_eq!(decoded.usage, DurationUsage::new(5));
    // Our own body round-trips.
    let ours = english().to_verbose_json(65);
    let back: VerboseJsonResponse =
        serde_json::from_str(&serde_json::to_string(&ours).unwrap()).unwrap();
    assert_eq!(back, ours);
}

#[test]
fn text_without_segments_is_one_cue() {
    let transcript = Transcript::new("Just one line.", 1.5);
    assert_eq!(
        transcript.to_srt(),
        "1\n00:00:00,000 --> 00:00:01,500\nJust one line.\n\n"
    );
    let verbose = transcript.to_verbose_json(2);
    assert_eq!(verbose.segments.len(), 1);
    assert_eq!(verbose.segments[0].text, " Just one line.");
    assert_eq!(verbose.n_speakers, 1);
    // Nothing at all: no cues, no segments, no speakers.
    let empty = Transcript::new(" ", 0.4);
    assert_eq!(empty.to_srt(), "");
    assert_eq!(empty.to_vtt(), "WEBVTT\n\n");
    assert_eq!(empty.to_verbose_json(1).n_speakers, 0);
    assert!(empty.to_verbose_json(1).segments.is_empty());
}

#[test]
fn subtitle_text_is_cleaned() {
    let mut transcript = Transcript::new("", 3.0);
    transcript.segments = vec![
        Segment::new(0, 0.0, 1.0, "  a --> b  \r\n\r\n c & <d> "),
        Segment::new(1, 1.0, 2.0, "\n\n"),
        Segment::new(2, 2.5, 2.0, "end before start"),
    ];
    assert_eq!(
        transcript.to_srt(),
        "1\n00:00:00,000 --> 00:00:01,000\na -> b c & <d>\n\n\
         2\n00:00:02,500 --> 00:00:02,500\nend before start\n\n"
    );
    assert_eq!(
        transcript.to_vtt(),
        "WEBVTT\n\n00:00:00.000 --> 00:00:01.000\na --&gt; b c &amp; &lt;d&gt;\n\n\
         00:00:02.500 --> 00:00:02.500\nend before start\n\n"
    );
}

#[test]
fn transcript_round_trips_through_json() {
    let transcript = chinese_chars();
    let back: Transcript =
        serde_json::from_str(&serde_json::to_string(&transcript).unwrap()).unwrap();
    assert_eq!(back, transcript);
    let minimal: Transcript =
        serde_json::from_value(json!({"text": "x", "duration": 1.0})).unwrap();
    assert_eq!(minimal, Transcript::new("x", 1.0));
}

// ---------------------------------------------------------------------------------------------
// Words, speakers and languages
// ---------------------------------------------------------------------------------------------

fn word_list(words: &[Word]) -> Vec<(&str, f64, f64)> {
    words
        .iter()
        .map(|w| (w.word.as_str(), w.start, w.end))
        .collect()
}

#[test]
fn split_words_english_trims_punctuation_and_keeps_inner_apostrophes() {
    let words = split_words("\"Don't\" stop -- 100% (now)!", 0.0, 2.0);
    let names: Vec<&str> = words.iter().map(|w| w.word.as_str()).collect();
    assert_eq!(names, ["Don't", "stop", "100%", "now"]);
    // 5 + 4 + 4 + 3 = 16 characters.
    assert_eq!(
        word_list(&words),
        [
            ("Don't", 0.0, 0.625),
            ("stop", 0.625, 1.125),
            ("100%", 1.125, 1.625),
            ("now", 1.625, 2.0)
        ]
    );
}

#[test]
fn split_words_gives_each_cjk_character_its_own_word() {
    let words = split_words("我们用API调用，好吗？", 10.0, 18.0);
    let names: Vec<&str> = words.iter().map(|w| w.word.as_str()).collect();
    assert_eq!(names, ["我", "们", "用", "API", "调", "用", "好", "吗"]);
    // 10 characters over 8 seconds: 0.8 s each, "API" 2.4 s.
    assert_eq!(words[3].start, 10.0 + 8.0 * 0.3);
    assert_eq!(words[3].end, 10.0 + 8.0 * 0.6);
    assert_eq!(words.last().map(|w| w.end), Some(18.0));
    // Kana too; Hangul is split at spaces.
    let names: Vec<String> = split_words("ありがとう 안녕하세요 친구", 0.0, 1.0)
        .into_iter()
        .map(|w| w.word)
        .collect();
    assert_eq!(names, ["あ", "り", "が", "と", "う", "안녕하세요", "친구"]);
}

#[test]
fn split_words_edge_cases() {
    assert!(split_words("", 0.0, 1.0).is_empty());
    assert!(split_words(" ... — ！ 。", 0.0, 1.0).is_empty());
    assert_eq!(
        word_list(&split_words("solo", 1.25, 1.25)),
        [("solo", 1.25, 1.25)]
    );
    // An end before the start is the start.
    assert_eq!(
        word_list(&split_words("a b", 2.0, 1.0)),
        [("a", 2.0, 2.0), ("b", 2.0, 2.0)]
    );
}

#[test]
fn speaker_labels() {
    for (upstream, label) in [
        ("0", "S1"),
        ("1", "S2"),
        ("9", "S10"),
        (" 2 ", "S3"),
        ("S4", "S4"),
        ("S0", "S1"),
        ("", "S1"),
        ("alice", "S1"),
        ("4294967295", "S4294967296"),
    ] {
        assert_eq!(speaker_label(upstream), label, "{upstream:?}");
    }
}

#[test]
fn language_names() {
    for (code, name) in [
        ("en", "english"),
        ("zh", "chinese"),
        ("ja", "japanese"),
        ("yue", "cantonese"),
        ("ko", "korean"),
        ("de", "german"),
        ("fr", "french"),
        ("es", "spanish"),
        ("EN", "english"),
        (" en-US ", "english"),
        ("zh_TW", "chinese"),
        ("English", "english"),
        ("Klingon", "klingon"),
        ("", "unknown"),
        ("  ", "unknown"),
    ] {
        assert_eq!(language_name(code), name, "{code:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Stream events
// ---------------------------------------------------------------------------------------------

#[test]
fn stream_events_serialize_as_spec_6_says() {
    let events = [
        TranscriptionStreamEvent::delta("Hello"),
        TranscriptionStreamEvent::delta(" world."),
        TranscriptionStreamEvent::done("Hello world.", StreamUsage::new(2, 14)),
    ];
    let lines: Vec<String> = events
        .iter()
        .map(|e| serde_json::to_string(e).unwrap())
        .collect();
    assert_eq!(
        lines,
        [
            r#"{"type":"transcript.text.delta","delta":"Hello"}"#,
            r#"{"type":"transcript.text.delta","delta":" world."}"#,
            r#"{"type":"transcript.text.done","text":"Hello world.","usage":{"type":"duration","seconds":2,"input_tokens":14}}"#,
        ]
    );
    for (event, line) in events.iter().zip(&lines) {
        let back: TranscriptionStreamEvent = serde_json::from_str(line).unwrap();
        assert_eq!(&back, event);
    }
    assert_eq!(events[0].event_type(), "transcript.text.delta");
}

#[test]
fn stream_events_decode_with_openai_s_extra_fields() {
    let delta: TranscriptionStreamEvent = serde_json::from_value(json!({
        "type": "transcript.text.delta", "delta": "Hi", "logprobs": [], "segment_id": "seg_1"
    }))
    .unwrap();
    assert_eq!(delta, TranscriptionStreamEvent::delta("Hi"));
    let done: TranscriptionStreamEvent = serde_json::from_value(json!({
        "type": "transcript.text.done", "text": "Hi", "usage": {"seconds": 3}
    }))
    .unwrap();
    assert_eq!(
        done,
        TranscriptionStreamEvent::done("Hi", StreamUsage::new(3, 0))
    );
    let unknown: Result<TranscriptionStreamEvent, _> =
        serde_json::from_value(json!({"type": "transcript.text.segment", "id": "x"}));
    assert!(unknown.is_err());
}

proptest! {
    #[test]
    fn split_words_is_monotonic_and_covers_the_span(
        text in "[a-zA-Z你好世界 ,.!？。]{0,40}",
        start in 0.0f64..500.0,
        length in 0.0f64..30.0,
    ) {
        let end = start + length;
        let words = split_words(&text, start, end);
        if let (Some(first), Some(last)) = (words.first(), words.last()) {
            prop_assert_eq!(first.start, start);
            prop_assert_eq!(last.end, end);
        }
        for (i, word) in words.iter().enumerate() {
            prop_assert!(!word.word.is_empty());
            prop_assert!(word.start <= word.end, "{:?}", word);
            prop_assert!(word.start >= start && word.end <= end, "{:?}", word);
            if let Some(next) = words.get(i + 1) {
                prop_assert_eq!(word.end, next.start);
            }
        }
        // Every letter and CJK character of the text is in some word, in order.
        let kept: String = words
            .iter()
            .flat_map(|w| w.word.chars())
            .filter(|c| c.is_alphanumeric())
            .collect();
        let expected: String = text.chars().filter(|c| c.is_alphanumeric()).collect();
        prop_assert_eq!(kept, expected);
    }

    #[test]
    fn subtitles_are_well_formed(
        texts in proptest::collection::vec("\\PC{0,20}", 0..6),
        times in proptest::collection::vec((0.0f64..500.0, -5.0f64..20.0), 6),
    ) {
        let mut transcript = Transcript::new("", 500.0);
        transcript.segments = texts
            .iter()
            .zip(&times)
            .enumerate()
            .map(|(i, (text, (start, len)))| {
                Segment::new(u32::try_from(i).unwrap(), *start, start + len, text.clone())
            })
            .collect();
        let srt = transcript.to_srt();
        let cues: Vec<&str> = srt.split_terminator("\n\n").collect();
        let expected_cues = texts.iter().filter(|t| !t.split_whitespace().collect::<String>().is_empty()).count();
        prop_assert_eq!(cues.len(), expected_cues, "{}", srt);
        for (n, cue) in cues.iter().enumerate() {
            let lines: Vec<&str> = cue.split('\n').collect();
            prop_assert_eq!(lines.len(), 3, "{:?}", cue);
            prop_assert_eq!(lines[0], (n + 1).to_string());
            let (from, to) = lines[1].split_once(" --> ").unwrap();
            prop_assert_eq!(from.len(), 12);
            prop_assert!(from <= to, "{}", lines[1]);
            prop_assert!(!lines[2].is_empty() && !lines[2].contains("-->"));
        }
        let vtt = transcript.to_vtt();
        prop_assert!(vtt.starts_with("WEBVTT\n\n"));
        prop_assert_eq!(vtt.matches(" --> ").count(), expected_cues);
    }
}
