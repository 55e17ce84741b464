//! The non-file form fields of `POST /v1/audio/transcriptions`, parsed.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::{FieldError, Rule};

/// The `response_format` form field (docs/api.md §2.2): how the transcript is rendered.
///
/// On the wire the values are snake_case: `json` (the default), `verbose_json`, `srt`, `vtt`,
/// `text`. OpenAI's `diarized_json` (wire-formats §1.2) is not offered: speaker labels come with
/// `verbose_json` (docs/api.md §2.3).
///
/// ```
/// use tollgate_compat_audio::transcription::TranscriptionFormat;
///
/// assert_eq!(TranscriptionFormat::parse("verbose_json"), Some(TranscriptionFormat::VerboseJson));
/// assert_eq!(TranscriptionFormat::parse("diarized_json"), None);
/// assert_eq!(TranscriptionFormat::default(), TranscriptionFormat::Json);
/// assert!(TranscriptionFormat::Text.is_streamable());
/// assert!(!TranscriptionFormat::Srt.is_streamable());
/// assert_eq!(serde_json::to_string(&TranscriptionFormat::VerboseJson)?, r#""verbose_json""#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TranscriptionFormat {
    /// `{"text", "duration", "usage"}` (`"json"`), the default.
    #[default]
    Json,
    /// The JSON with segments, speakers and optionally words (`"verbose_json"`).
    VerboseJson,
    /// SubRip subtitles (`"srt"`).
    Srt,
    /// WebVTT subtitles (`"vtt"`).
    Vtt,
    /// The plain text (`"text"`).
    Text,
}

impl TranscriptionFormat {
    /// Every format, in the order of docs/api.md §2.2.
    pub const ALL: [TranscriptionFormat; 5] = [
        TranscriptionFormat::Json,
        TranscriptionFormat::VerboseJson,
        TranscriptionFormat::Srt,
        TranscriptionFormat::Vtt,
        TranscriptionFormat::Text,
    ];

    /// The value as it appears on the wire, e.g. `"verbose_json"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Json => "json",
            Self::VerboseJson => "verbose_json",
            Self::Srt => "srt",
            Self::Vtt => "vtt",
            Self::Text => "text",
        }
    }

    /// The format named by a form value, compared exactly (lower case, as on the wire).
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|format| format.as_str() == value)
    }

    /// docs/api.md §2.2: `stream: true` is only supported with `json` and `text`.
    pub const fn is_streamable(self) -> bool {
        matches!(self, Self::Json | Self::Text)
    }

    /// Whether word timestamps can appear in this format (docs/api.md §2.2: `word` applies to
    /// `verbose_json`, `srt` and `vtt`).
    pub const fn carries_timestamps(self) -> bool {
        matches!(self, Self::VerboseJson | Self::Srt | Self::Vtt)
    }

    /// The `Content-Type` this service answers with.
    ///
    /// wire-formats §1.2 could not confirm OpenAI's exact types for the non-JSON formats
    /// ("probably `text/plain; charset=utf-8`"); the SDKs return those bodies as a string
    /// whatever the type. This service sends:
    ///
    /// | Format | `Content-Type` |
    /// |---|---|
    /// | `json`, `verbose_json` | `application/json` |
    /// | `text`, `srt` | `text/plain; charset=utf-8` (SubRip has no registered type) |
    /// | `vtt` | `text/vtt; charset=utf-8` (the registered WebVTT type, which browsers require for `<track>`) |
    pub const fn content_type(self) -> &'static str {
        match self {
            Self::Json | Self::VerboseJson => "application/json",
            Self::Srt | Self::Text => "text/plain; charset=utf-8",
            Self::Vtt => "text/vtt; charset=utf-8",
        }
    }
}

impl fmt::Display for TranscriptionFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A value of `timestamp_granularities[]` (wire-formats §1.2): `word` or `segment`.
///
/// ```
/// use tollgate_compat_audio::transcription::Granularity;
///
/// assert_eq!(Granularity::parse("word"), Some(Granularity::Word));
/// assert_eq!(Granularity::parse("sentence"), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Granularity {
    /// Per-word timestamps, per-character for Chinese (docs/api.md §2.2).
    Word,
    /// Per-segment timestamps (what `verbose_json` always carries).
    Segment,
}

impl Granularity {
    /// Both granularities.
    pub const ALL: [Granularity; 2] = [Granularity::Word, Granularity::Segment];

    /// The value as it appears on the wire: `"word"` or `"segment"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Word => "word",
            Self::Segment => "segment",
        }
    }

    /// The granularity named by a form value, compared exactly.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|g| g.as_str() == value)
    }
}

impl fmt::Display for Granularity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The form field of the granularities, as docs/api.md §2.2 names it; the field of its errors.
pub const GRANULARITIES_FIELD: &str = "timestamp_granularities[]";

/// The non-file form fields of a transcription request (docs/api.md §2.2, wire-formats §1.2), parsed.
///
/// The gateway parses the multipart body itself and hands the text parts to
/// [`from_fields`](Self::from_fields) as `(name, value)` pairs, in order; the `file` part is the
/// gateway's (see [`validate_file`](super::validate_file())).
///
/// ```
/// use tollgate_compat_audio::transcription::{Granularity, TranscriptionFormat, TranscriptionParams};
///
/// let params = TranscriptionParams::from_fields([
///     ("model", "whisper-1"),
///     ("response_format", "verbose_json"),
///     ("timestamp_granularities[]", "word"),
///     ("timestamp_granularities[]", "segment"),
///     ("include[]", "logprobs"), // unknown fields are ignored
/// ])?;
/// assert_eq!(params.model, "whisper-1");
/// assert_eq!(params.response_format, TranscriptionFormat::VerboseJson);
/// assert_eq!(params.timestamp_granularities, [Granularity::Word, Granularity::Segment]);
/// assert!(params.wants_words());
/// assert!(!params.stream);
/// # Ok::<(), tollgate_compat_audio::FieldError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TranscriptionParams {
    /// The model id or an alias, see [`DEFAULT_ALIASES`](super::DEFAULT_ALIASES).
    pub model: String,
    /// The rendering of the answer; [`TranscriptionFormat::Json`] when absent.
    #[serde(default)]
    pub response_format: TranscriptionFormat,
    /// The language hint (`zh`, `en`, `ja`, `yue`, ...); `None` detects it (docs/api.md §2.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// Text to guide the style (wire-formats §1.2); passed on where the upstream has a
    /// counterpart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// The sampling temperature, 0 to 1 (wire-formats §1.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// The asked granularities, in order, without repeats.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timestamp_granularities: Vec<Granularity>,
    /// Whether to answer with an SSE stream (docs/api.md §2.2, §6).
    #[serde(default)]
    pub stream: bool,
}

impl TranscriptionParams {
    /// Params with only `model` set and every other field at its default.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            ..Self::default()
        }
    }

    /// Parses the text parts of the form, given as `(name, value)` pairs in order.
    ///
    /// | Field | Parsing |
    /// |---|---|
    /// | `model` | required, surrounding whitespace removed |
    /// | `response_format` | one of [`TranscriptionFormat::ALL`], exactly as on the wire |
    /// | `language` | any code, surrounding whitespace removed |
    /// | `prompt` | as given |
    /// | `temperature` | a decimal number (the range is checked by [`validate`](super::validate())) |
    /// | `timestamp_granularities[]` | `word` or `segment`; see below |
    /// | `stream` | `true`/`false` in any case, or `1`/`0` |
    ///
    /// - **Unknown fields are ignored**: the SDKs add fields over time (`include[]`,
    ///   `chunking_strategy`, `known_speaker_names[]`, ...).
    /// - **A field given twice**: the last value counts, as in the common form parsers (the
    ///   granularities are the exception: every value counts).
    /// - **An empty value** (what an HTML form sends for an untouched input) counts as absent,
    ///   except for `model`, which is then missing.
    /// - **Granularities** are read from `timestamp_granularities[]` (the SDKs' spelling, one
    ///   part per value), `timestamp_granularities` and the indexed `timestamp_granularities[0]`;
    ///   a value may also list several, separated by commas. Repeats are dropped, order is kept.
    ///
    /// Errors name the form field, checked in the order of the table whatever the order of the
    /// parts: a missing `model` is [`Rule::Required`]; a value that is not one of the accepted
    /// ones is [`Rule::UnsupportedValue`]; a `temperature` that is not a number is
    /// [`Rule::OutOfRange`] (the rule for values that are not finite numbers).
    ///
    /// ```
    /// use tollgate_compat_audio::transcription::TranscriptionParams;
    /// use tollgate_compat_audio::Rule;
    ///
    /// let err = TranscriptionParams::from_fields([("model", "whisper-1"), ("stream", "maybe")])
    ///     .unwrap_err();
    /// assert_eq!((err.field.as_str(), err.rule), ("stream", Rule::UnsupportedValue));
    /// assert_eq!(err.to_string(), r#"'stream' is "maybe"; it must be true or false"#);
    ///
    /// let err = TranscriptionParams::from_fields([("response_format", "srt")]).unwrap_err();
    /// assert_eq!((err.field.as_str(), err.rule), ("model", Rule::Required));
    /// ```
    pub fn from_fields<'a>(
        fields: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, FieldError> {
        let mut model = None;
        let mut response_format = None;
        let mut language = None;
        let mut prompt = None;
        let mut temperature = None;
        let mut granularities = Vec::new();
        let mut stream = None;
        for (name, value) in fields {
            match name {
                "model" => model = Some(value),
                "response_format" => response_format = Some(value),
                "language" => language = Some(value),
                "prompt" => prompt = Some(value),
                "temperature" => temperature = Some(value),
                "stream" => stream = Some(value),
                _ if is_granularities_field(name) => granularities.push(value),
                _ => {}
            }
        }

        let model = model.map(str::trim).unwrap_or_default();
        if model.is_empty() {
            return Err(model_required());
        }
        let response_format = match given(response_format) {
            None => TranscriptionFormat::default(),
            Some(value) => TranscriptionFormat::parse(value).ok_or_else(|| {
                FieldError::new(
                    "response_format",
                    Rule::UnsupportedValue,
                    format!(
                        "'response_format' is {value:?}; it must be one of {}",
                        join(TranscriptionFormat::ALL.iter())
                    ),
                )
            })?,
        };
        let language = given(language).map(str::to_owned);
        let prompt = prompt.filter(|p| !p.is_empty()).map(str::to_owned);
        let temperature = match given(temperature) {
            None => None,
            Some(value) => Some(value.parse::<f64>().map_err(|_| temperature_error())?),
        };
        let mut timestamp_granularities = Vec::new();
        for value in granularities.iter().flat_map(|v| v.split(',')) {
            let value = value.trim();
            if value.is_empty() {
                continue;
            }
            let granularity = Granularity::parse(value).ok_or_else(|| {
                FieldError::new(
                    GRANULARITIES_FIELD,
                    Rule::UnsupportedValue,
                    format!(
                        "'{GRANULARITIES_FIELD}' has {value:?}; each value must be word or \
                         segment"
                    ),
                )
            })?;
            if !timestamp_granularities.contains(&granularity) {
                timestamp_granularities.push(granularity);
            }
        }
        let stream = match given(stream) {
            None => false,
            Some(value) => parse_bool(value).ok_or_else(|| {
                FieldError::new(
                    "stream",
                    Rule::UnsupportedValue,
                    format!("'stream' is {value:?}; it must be true or false"),
                )
            })?,
        };
        Ok(Self {
            model: model.to_owned(),
            response_format,
            language,
            prompt,
            temperature,
            timestamp_granularities,
            stream,
        })
    }

    /// Whether the answer carries word timestamps: `word` was asked for **and** the format can
    /// show them (`verbose_json`, `srt`, `vtt`; docs/api.md §2.2). With `json` and `text` the
    /// granularity is accepted and has no effect.
    ///
    /// The gateway asks the upstream for word timestamps and fills
    /// [`Transcript::words`](super::Transcript::words) exactly when this is true.
    ///
    /// ```
    /// use tollgate_compat_audio::transcription::{Granularity, TranscriptionFormat, TranscriptionParams};
    ///
    /// let mut params = TranscriptionParams::new("asr-1.0");
    /// params.timestamp_granularities = vec![Granularity::Word];
    /// assert!(!params.wants_words()); // json shows no timestamps
    /// params.response_format = TranscriptionFormat::Srt;
    /// assert!(params.wants_words());
    /// ```
    pub fn wants_words(&self) -> bool {
        self.response_format.carries_timestamps()
            && self.timestamp_granularities.contains(&Granularity::Word)
    }
}

/// `timestamp_granularities[]`, `timestamp_granularities` or `timestamp_granularities[N]`.
fn is_granularities_field(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("timestamp_granularities") else {
        return false;
    };
    if rest.is_empty() {
        return true;
    }
    rest.strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
        .is_some_and(|index| index.bytes().all(|b| b.is_ascii_digit()))
}

/// A form value with its surrounding whitespace removed; `None` when absent or empty.
fn given(value: Option<&str>) -> Option<&str> {
    value.map(str::trim).filter(|v| !v.is_empty())
}

/// `true`/`false` in any case, `1`/`0`.
pub(crate) fn parse_bool(value: &str) -> Option<bool> {
    if value.eq_ignore_ascii_case("true") || value == "1" {
        Some(true)
    } else if value.eq_ignore_ascii_case("false") || value == "0" {
        Some(false)
    } else {
        None
    }
}

pub(crate) fn model_required() -> FieldError {
    FieldError::new(
        "model",
        Rule::Required,
        "'model' is required and must not be empty",
    )
}

pub(crate) fn temperature_error() -> FieldError {
    FieldError::new(
        "temperature",
        Rule::OutOfRange,
        "'temperature' must be a number between 0 and 1",
    )
}

pub(crate) fn join<T: fmt::Display>(items: impl Iterator<Item = T>) -> String {
    items
        .map(|item| item.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
