//! The JSON response bodies of `POST /v1/speech_to_text` (wire-formats §4).

use serde::{Deserialize, Deserializer, Serialize};

/// The body of `response_format: json` (wire-formats §4):
/// `{"text": "...", "duration": 12.3, "trace_id": "..."}`.
///
/// `duration` is in seconds and is the billed quantity (docs/api.md §8, billing rule 2: rounded up).
/// `text` and `duration` are required when decoding (confirmed); `trace_id` is optional.
///
/// ```
/// use tollgate_vendor_audio::stt::SttJson;
///
/// let body: SttJson =
///     serde_json::from_str(r#"{"text":"Hi all. Let's start.","duration":3.4,"trace_id":"0f1e"}"#)?;
/// assert_eq!((body.text.as_str(), body.duration), ("Hi all. Let's start.", 3.4));
/// assert_eq!(body.trace_id.as_deref(), Some("0f1e"));
/// assert!(serde_json::from_str::<SttJson>(r#"{"text":"Hi"}"#).is_err());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SttJson {
    /// The recognised text.
    pub text: String,
    /// The audio's duration in seconds; the billed quantity.
    pub duration: f64,
    /// The upstream's request id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

/// The body of `response_format: verbose_json` (wire-formats §4): the `json` fields plus
/// `n_speakers` and `segments`.
///
/// wire-formats §4 marks `n_speakers`, `segments` and the segment fields as seen in a
/// third-party client, not confirmed by the vendor; they therefore decode as their defaults when
/// absent (0, no segments).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SttVerboseJson {
    /// The recognised text.
    pub text: String,
    /// The audio's duration in seconds; the billed quantity.
    pub duration: f64,
    /// The number of distinct speakers.
    #[serde(default)]
    pub n_speakers: u32,
    /// The segments (sentences) in order.
    #[serde(default)]
    pub segments: Vec<SttSegment>,
    /// The upstream's request id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

/// A segment of [`SttVerboseJson`] (wire-formats §4): `{id, start, end, text, speaker}`, and
/// `words` with `timestamp_level: word`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SttSegment {
    /// The segment's number, from 0.
    pub id: u32,
    /// Start time in seconds.
    pub start: f64,
    /// End time in seconds.
    pub end: f64,
    /// The text.
    pub text: String,
    /// The vendor's speaker id, numbered from `"0"`. A JSON number is also accepted and read as
    /// its decimal text; absent is empty.
    #[serde(default, deserialize_with = "string_or_number")]
    pub speaker: String,
    /// The words with their times, with `timestamp_level: word`.
    ///
    /// **[?] Unconfirmed shape** (wire-formats §4: "the shape of word-level entries inside a
    /// segment is unconfirmed"). This crate assumes a `words` array in each segment of
    /// [`SttWord`]s `{text, start, end}`, and also reads `word` in place of `text`. Verify
    /// against the live API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub words: Option<Vec<SttWord>>,
}

/// A word of a [`SttSegment`] with `timestamp_level: word` — **[?] assumed shape**, see
/// [`SttSegment::words`].
///
/// ```
/// use tollgate_vendor_audio::stt::SttWord;
///
/// let a: SttWord = serde_json::from_str(r#"{"text":"Hi","start":0.2,"end":0.5}"#)?;
/// let b: SttWord = serde_json::from_str(r#"{"word":"Hi","start":0.2,"end":0.5}"#)?;
/// assert_eq!(a, b);
/// assert_eq!(serde_json::to_string(&a)?, r#"{"text":"Hi","start":0.2,"end":0.5}"#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SttWord {
    /// The word (one character for Chinese); decoded from `text` or `word`.
    #[serde(alias = "word")]
    pub text: String,
    /// Start time in seconds.
    pub start: f64,
    /// End time in seconds.
    pub end: f64,
}

/// A JSON string or number, as text.
#[derive(Deserialize)]
#[serde(untagged)]
enum StringOrNumber {
    String(String),
    Number(serde_json::Number),
}

impl From<StringOrNumber> for String {
    fn from(value: StringOrNumber) -> Self {
        match value {
            StringOrNumber::String(s) => s,
            StringOrNumber::Number(n) => n.to_string(),
        }
    }
}

/// A string, or a number read as its decimal text; `null` is empty.
fn string_or_number<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(Option::<StringOrNumber>::deserialize(deserializer)?
        .map(String::from)
        .unwrap_or_default())
}

/// An optional string, or a number read as its decimal text.
pub(crate) fn opt_string_or_number<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    Ok(Option::<StringOrNumber>::deserialize(deserializer)?.map(String::from))
}
