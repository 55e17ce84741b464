//! The form fields of `POST /v1/speech_to_text`, the `language` header, and their rules.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::{FieldError, Rule};

/// docs/api.md §2.5, wire-formats §4: the only recognition model.
pub const MODEL: &str = "asr-1.0";

/// wire-formats §4: the language hint travels in this HTTP request header, not in the form.
pub const LANGUAGE_HEADER: &str = "language";

/// docs/api.md §2.5 ("same limits as 2.2"), wire-formats §4: the accepted audio containers; not webm,
/// not bare PCM.
pub const ACCEPTED_CONTAINERS: &[&str] =
    &["wav", "aiff", "flac", "m4a", "mp3", "aac", "opus", "ogg"];

/// docs/api.md §2.5 and §8: at most 50 MB per file, read as decimal megabytes (50,000,000 bytes), the
/// stricter reading. The same limit as the compat format's.
pub const MAX_FILE_BYTES: u64 = 50 * 1000 * 1000;

/// docs/api.md §2.5 and §8: at most 500 seconds per file (wire-formats §4: the upstream refuses longer
/// audio with 400, it does not truncate).
pub const MAX_SECONDS: u64 = 500;

/// The `response_format` form field (docs/api.md §2.5, wire-formats §4).
///
/// ```
/// use tollgate_vendor_audio::stt::SttFormat;
///
/// assert_eq!(SttFormat::parse("verbose_json"), Some(SttFormat::VerboseJson));
/// assert_eq!(SttFormat::parse("text"), None); // the compat format's, not this one's
/// assert_eq!(SttFormat::default(), SttFormat::Json);
/// assert!(SttFormat::Json.is_streamable());
/// assert!(!SttFormat::VerboseJson.is_streamable());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SttFormat {
    /// `{"text", "duration", "trace_id"}` (`"json"`), the default: [`SttJson`](super::SttJson).
    #[default]
    Json,
    /// With speakers and segments (`"verbose_json"`): [`SttVerboseJson`](super::SttVerboseJson).
    VerboseJson,
    /// A SubRip document as the raw body (`"srt"`).
    Srt,
    /// A WebVTT document as the raw body (`"vtt"`).
    Vtt,
}

impl SttFormat {
    /// Every format, in the order of wire-formats §4.
    pub const ALL: [SttFormat; 4] = [
        SttFormat::Json,
        SttFormat::VerboseJson,
        SttFormat::Srt,
        SttFormat::Vtt,
    ];

    /// The value as it appears on the wire, e.g. `"verbose_json"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Json => "json",
            Self::VerboseJson => "verbose_json",
            Self::Srt => "srt",
            Self::Vtt => "vtt",
        }
    }

    /// The format named by a form value, compared exactly.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|format| format.as_str() == value)
    }

    /// Whether the body is JSON (`json`, `verbose_json`); `srt` and `vtt` are raw documents.
    pub const fn is_json(self) -> bool {
        matches!(self, Self::Json | Self::VerboseJson)
    }

    /// wire-formats §4: `stream: true` is only allowed with `json`.
    pub const fn is_streamable(self) -> bool {
        matches!(self, Self::Json)
    }

    /// Whether `timestamp_level` applies (wire-formats §4: to `verbose_json`, `srt` and `vtt`;
    /// it is ignored for `json`).
    pub const fn has_timestamps(self) -> bool {
        !matches!(self, Self::Json)
    }
}

impl fmt::Display for SttFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The `timestamp_level` form field (docs/api.md §2.5, wire-formats §4): `sentence` (the default) or
/// `word`.
///
/// ```
/// use tollgate_vendor_audio::stt::TimestampLevel;
///
/// assert_eq!(TimestampLevel::parse("word"), Some(TimestampLevel::Word));
/// assert_eq!(TimestampLevel::default(), TimestampLevel::Sentence);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TimestampLevel {
    /// Times per sentence (segment), the default.
    #[default]
    Sentence,
    /// Times per word as well.
    Word,
}

impl TimestampLevel {
    /// Both levels.
    pub const ALL: [TimestampLevel; 2] = [TimestampLevel::Sentence, TimestampLevel::Word];

    /// The value as it appears on the wire: `"sentence"` or `"word"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Sentence => "sentence",
            Self::Word => "word",
        }
    }

    /// The level named by a form value, compared exactly.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|level| level.as_str() == value)
    }
}

impl fmt::Display for TimestampLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The non-file form fields of a `speech_to_text` request and the `language` header
/// (docs/api.md §2.5, wire-formats §4), parsed.
///
/// The gateway reads the multipart body itself and hands the text parts to
/// [`from_fields`](Self::from_fields), with the value of the [`LANGUAGE_HEADER`] header. Going
/// upstream, [`to_fields`](Self::to_fields) gives the text parts to send and
/// [`language`](Self::language) the header.
///
/// ```
/// use tollgate_vendor_audio::stt::{SttFormat, SttParams, TimestampLevel};
///
/// let params = SttParams::from_fields(
///     [("model", "asr-1.0"), ("response_format", "verbose_json"), ("language", "fr")],
///     Some("en"),
/// )?;
/// assert_eq!(params.response_format, SttFormat::VerboseJson);
/// assert_eq!(params.timestamp_level, TimestampLevel::Sentence);
/// assert_eq!(params.language.as_deref(), Some("en")); // the header, not the form field
/// assert_eq!(
///     params.to_fields(),
///     [
///         ("model", "asr-1.0".to_owned()),
///         ("response_format", "verbose_json".to_owned()),
///         ("timestamp_level", "sentence".to_owned()),
///         ("stream", "false".to_owned()),
///     ]
/// );
/// # Ok::<(), tollgate_vendor_audio::FieldError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SttParams {
    /// The model id, `asr-1.0` ([`MODEL`]).
    pub model: String,
    /// The body's format; [`SttFormat::Json`] when absent.
    #[serde(default)]
    pub response_format: SttFormat,
    /// The timestamp granularity; [`TimestampLevel::Sentence`] when absent.
    #[serde(default)]
    pub timestamp_level: TimestampLevel,
    /// Whether to answer with SSE frames ([`SttStreamFrame`](super::SttStreamFrame)).
    #[serde(default)]
    pub stream: bool,
    /// The language hint from the [`LANGUAGE_HEADER`] header (`zh`, `en`, `ja`, ...); `None`
    /// detects it, also mixed-language speech.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
}

impl SttParams {
    /// Params with only `model` set and every other field at its default.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            ..Self::default()
        }
    }

    /// Parses the text parts of the form, given as `(name, value)` pairs in order, and the
    /// value of the `language` header.
    ///
    /// | Field | Parsing |
    /// |---|---|
    /// | `model` | required, surrounding whitespace removed |
    /// | `response_format` | one of [`SttFormat::ALL`], exactly as on the wire |
    /// | `timestamp_level` | `sentence` or `word` |
    /// | `stream` | `true`/`false` in any case, or `1`/`0` |
    /// | `language` (form field) | accepted and **ignored**: wire-formats §4, the upstream reads the hint from the header only |
    ///
    /// The `language_header` is trimmed; empty counts as absent. Unknown fields are ignored. A
    /// field given twice counts with its last value; an empty value counts as absent (except
    /// `model`, which is then missing). Errors name the form field, in the order of the table:
    /// a missing `model` is [`Rule::Required`], a value that is not one of the accepted ones
    /// [`Rule::UnsupportedValue`].
    ///
    /// ```
    /// use tollgate_vendor_audio::stt::SttParams;
    /// use tollgate_vendor_audio::Rule;
    ///
    /// let err = SttParams::from_fields([("model", "asr-1.0"), ("timestamp_level", "char")], None)
    ///     .unwrap_err();
    /// assert_eq!((err.field.as_str(), err.rule), ("timestamp_level", Rule::UnsupportedValue));
    /// assert_eq!(
    ///     err.to_string(),
    ///     r#"'timestamp_level' is "char"; it must be one of sentence, word"#
    /// );
    /// ```
    pub fn from_fields<'a>(
        fields: impl IntoIterator<Item = (&'a str, &'a str)>,
        language_header: Option<&str>,
    ) -> Result<Self, FieldError> {
        let mut model = None;
        let mut response_format = None;
        let mut timestamp_level = None;
        let mut stream = None;
        for (name, value) in fields {
            match name {
                "model" => model = Some(value),
                "response_format" => response_format = Some(value),
                "timestamp_level" => timestamp_level = Some(value),
                "stream" => stream = Some(value),
                // "language" as a form field is ignored, like every unknown field.
                _ => {}
            }
        }
        let model = model.map(str::trim).unwrap_or_default();
        if model.is_empty() {
            return Err(model_required());
        }
        let response_format = match given(response_format) {
            None => SttFormat::default(),
            Some(value) => SttFormat::parse(value)
                .ok_or_else(|| unsupported("response_format", value, &SttFormat::ALL))?,
        };
        let timestamp_level = match given(timestamp_level) {
            None => TimestampLevel::default(),
            Some(value) => TimestampLevel::parse(value)
                .ok_or_else(|| unsupported("timestamp_level", value, &TimestampLevel::ALL))?,
        };
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
            timestamp_level,
            stream,
            language: given(language_header).map(str::to_owned),
        })
    }

    /// The non-file form fields to send upstream, in order: `model`, `response_format`,
    /// `timestamp_level`, `stream` (`"true"` or `"false"`). Every field is sent, defaults
    /// included, so the upstream never has to guess. The language goes in the
    /// [`LANGUAGE_HEADER`] header instead (see [`language`](Self::language)).
    pub fn to_fields(&self) -> Vec<(&'static str, String)> {
        vec![
            ("model", self.model.clone()),
            ("response_format", self.response_format.as_str().to_owned()),
            ("timestamp_level", self.timestamp_level.as_str().to_owned()),
            ("stream", self.stream.to_string()),
        ]
    }
}

/// Checks the values of the parsed params and returns the first broken rule, in field order.
///
/// | Field | Rule | [`Rule`] |
/// |---|---|---|
/// | `model` | must not be empty | [`Required`](Rule::Required) |
/// | `stream` | wire-formats §4: `true` only with `response_format` `json` | [`NotStreamable`](Rule::NotStreamable) |
///
/// Whether `model` names a configured model is the gateway's catalog question, not a rule of
/// the format. `timestamp_level` is accepted with `json` and has no effect there
/// (wire-formats §4).
///
/// ```
/// use tollgate_vendor_audio::stt::{validate, SttFormat, SttParams};
/// use tollgate_vendor_audio::Rule;
///
/// let mut params = SttParams::new("asr-1.0");
/// params.stream = true;
/// assert_eq!(validate(&params), Ok(()));
///
/// params.response_format = SttFormat::Srt;
/// let err = validate(&params).unwrap_err();
/// assert_eq!((err.field.as_str(), err.rule), ("stream", Rule::NotStreamable));
/// assert_eq!(err.to_string(), "'stream' is only available with response_format json, not srt");
/// ```
pub fn validate(p: &SttParams) -> Result<(), FieldError> {
    if p.model.trim().is_empty() {
        return Err(model_required());
    }
    if p.stream && !p.response_format.is_streamable() {
        return Err(FieldError::new(
            "stream",
            Rule::NotStreamable,
            format!(
                "'stream' is only available with response_format json, not {}",
                p.response_format
            ),
        ));
    }
    Ok(())
}

fn model_required() -> FieldError {
    FieldError::new(
        "model",
        Rule::Required,
        "'model' is required and must not be empty",
    )
}

fn unsupported<T: fmt::Display>(field: &str, value: &str, accepted: &[T]) -> FieldError {
    let accepted = accepted
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    FieldError::new(
        field,
        Rule::UnsupportedValue,
        format!("'{field}' is {value:?}; it must be one of {accepted}"),
    )
}

/// A form value with its surrounding whitespace removed; `None` when absent or empty.
fn given(value: Option<&str>) -> Option<&str> {
    value.map(str::trim).filter(|v| !v.is_empty())
}

/// `true`/`false` in any case, `1`/`0`.
fn parse_bool(value: &str) -> Option<bool> {
    if value.eq_ignore_ascii_case("true") || value == "1" {
        Some(true)
    } else if value.eq_ignore_ascii_case("false") || value == "0" {
        Some(false)
    } else {
        None
    }
}
